"""Issue 12, requirement 7: diffs between versions and exports to DOCX and PDF. An export
follows the approval rule and is registered as a generated artifact before it is stored, so it
can never come back in as evidence unflagged. Both are access-checked and audited."""

import io
from typing import Any

import docx
import pymupdf
import pytest
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import services as document_services
from apps.documents.models import Document
from apps.drafting import services as draft_services
from apps.drafting.models import Draft
from apps.evidence.models import GeneratedArtifact
from tests.drafting.makers import draft_of, packet_of, read_pdf, verified

pytestmark = pytest.mark.django_db

TEXT = "# Statement of facts\n\nThe lease began on 3 March 2024.\n\n- Rent was paid monthly."


@pytest.fixture
def draft(lawyer: User, case: Case) -> Draft:
    document = read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    return draft_of(case=case, user=lawyer, packet=packet, text=TEXT)


def _base(draft: Draft, number: int = 1) -> str:
    return f"/api/v1/cases/{draft.case_id}/drafts/{draft.pk}/versions/{number}"


def _export(client: Client, draft: Draft, fmt: str, number: int = 1) -> Any:
    return client.post(
        f"{_base(draft, number)}/export", {"format": fmt}, content_type="application/json"
    )


def _add_version(draft: Draft, user: User, text: str) -> None:
    draft_services.version_add(
        user=user,
        case_id=draft.case_id,
        draft_id=draft.pk,
        content=draft_services.pasted_content(text=text),
    )


def test_a_clean_version_exports_as_pdf_registered_stored_and_audited(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported"])

    response = _export(lawyer_api, draft, "pdf")

    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/pdf"
    assert "attachment" in response["Content-Disposition"]
    with pymupdf.open(stream=response.content, filetype="pdf") as pdf:
        text = " ".join(page.get_text() for page in pdf)
    assert "Statement of facts" in text and "3 March 2024" in text
    artifact = GeneratedArtifact.objects.get(pk=int(response["X-Lexweb-Artifact"]))
    assert artifact.case_id == draft.case_id
    stored = Document.objects.get(pk=int(response["X-Lexweb-Document"]))
    assert stored.origin == Document.Origin.SYSTEM_GENERATED
    assert AuditEvent.objects.filter(action="draft.export", case_id=draft.case_id).count() == 1


def test_a_docx_export_reads_back_with_its_heading_and_list(
    staff_api: Client, lawyer: User, draft: Draft
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported"])

    response = _export(staff_api, draft, "docx")

    assert response.status_code == 200, response.content
    paragraphs = docx.Document(io.BytesIO(response.content)).paragraphs
    texts = [p.text for p in paragraphs]
    assert "Statement of facts" in texts
    assert "Rent was paid monthly." in texts
    assert GeneratedArtifact.objects.filter(pk=int(response["X-Lexweb-Artifact"])).exists()


def test_an_exported_pdf_uploaded_back_as_client_evidence_is_flagged(
    lawyer_api: Client, lawyer: User, draft: Draft, case: Case
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported"])
    data = _export(lawyer_api, draft, "pdf").content

    outcome = document_services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="client-copy.pdf",
        source=io.BytesIO(data),
        origin="client",
    )

    # The same bytes are already the case's system-generated document, or a new upload
    # flagged as a generated artifact: never clear evidence.
    assert outcome.document is not None, outcome.error
    outcome.document.refresh_from_db()
    assert (
        outcome.document.origin == Document.Origin.SYSTEM_GENERATED
        or outcome.document.provenance == Document.Provenance.FLAGGED
    )


def test_export_follows_the_approval_rule(lawyer_api: Client, lawyer: User, draft: Draft) -> None:
    unverified = _export(lawyer_api, draft, "pdf")
    verified(draft=draft, user=lawyer, statuses=["supported", "unsupported"])
    blocked = _export(lawyer_api, draft, "docx")

    assert (unverified.status_code, unverified.json()["code"]) == (409, "not_verified")
    assert (blocked.status_code, blocked.json()["code"]) == (409, "unsupported_findings")
    assert not AuditEvent.objects.filter(action="draft.export").exists()


def test_export_refuses_unknown_formats_and_non_members(
    lawyer_api: Client, outsider_api: Client, lawyer: User, draft: Draft
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported"])
    artifacts = GeneratedArtifact.objects.count()

    unknown = _export(lawyer_api, draft, "odt")
    outsider = _export(outsider_api, draft, "pdf")
    missing = _export(lawyer_api, draft, "pdf", number=9)

    assert unknown.status_code in (400, 422)
    assert outsider.status_code == 404
    assert missing.status_code == 404
    assert GeneratedArtifact.objects.count() == artifacts


def test_a_diff_gives_word_changes_and_is_audited(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    _add_version(draft, lawyer, TEXT.replace("3 March 2024", "4 March 2024"))

    body = lawyer_api.get(f"{_base(draft, 2)}/diff").json()

    assert body["inserted_words"] >= 1 and body["deleted_words"] >= 1
    assert body["exact"] is True and body["truncated"] is False
    assert AuditEvent.objects.filter(action="draft.version_diff").count() == 1


def test_a_diff_of_version_1_needs_against_and_refuses_bad_numbers_and_outsiders(
    lawyer_api: Client, outsider_api: Client, draft: Draft
) -> None:
    first = lawyer_api.get(f"{_base(draft)}/diff")
    bad = lawyer_api.get(f"{_base(draft)}/diff", {"against": "0"})
    missing = lawyer_api.get(f"{_base(draft)}/diff", {"against": "7"})
    outsider = outsider_api.get(f"{_base(draft)}/diff", {"against": "1"})

    assert first.status_code == 400
    assert bad.status_code == 422
    assert missing.status_code == 404
    assert outsider.status_code == 404
    assert not AuditEvent.objects.filter(action="draft.version_diff").exists()


def test_a_diff_of_two_long_versions_is_bounded(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    words = [f"word{n}" for n in range(60_000)]
    _add_version(draft, lawyer, " ".join(words))
    changed = words[:]
    for n in range(0, len(changed), 7):
        changed[n] = f"other{n}"
    _add_version(draft, lawyer, " ".join(changed))

    body = lawyer_api.get(f"{_base(draft, 3)}/diff").json()

    replaced = len(range(0, len(words), 7))
    assert len(body["ops"]) <= 5000 and body["truncated"] is True
    # The counts cover both whole versions, whatever the answer left out.
    assert body["inserted_words"] + body["unchanged_words"] == len(words)
    if body["exact"]:
        assert body["inserted_words"] == body["deleted_words"] == replaced
