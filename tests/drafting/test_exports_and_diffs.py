"""Issue 12, requirement 7: diffs between versions and exports to DOCX and PDF. An export
follows the approval rule and is registered as a generated artifact before it is stored, so it
can never come back in as evidence unflagged. Both are access-checked and audited."""

import io
import re
from typing import Any

import docx
import pymupdf
import pytest
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import services as document_services
from apps.documents.models import Document
from apps.drafting.models import Draft
from apps.drafting.services import drafts as draft_services
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
    assert bad.status_code == 422 and bad.json()["code"] == "invalid"
    assert missing.status_code == 404
    assert outsider.status_code == 404
    assert not AuditEvent.objects.filter(action="draft.version_diff").exists()


@pytest.mark.slow
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


# --- Browser pages: the diff and the export buttons -------------------------------------------


def _page(draft: Draft, number: int = 1, tail: str = "") -> str:
    return f"/cases/{draft.case_id}/drafts/{draft.pk}/versions/{number}/{tail}"


def test_the_diff_page_marks_insertions_and_deletions_with_ins_del_and_text_markers(
    lawyer_client: Client, lawyer: User, draft: Draft
) -> None:
    _add_version(draft, lawyer, TEXT.replace("3 March 2024", "4 March 2024 <b>sharp</b>"))

    response = lawyer_client.get(_page(draft, 2, "diff/"))

    html = response.content.decode()
    assert response.status_code == 200
    assert "What changed from version 1 to version 2" in html
    inserted = re.findall(r'<ins class="diff-ins">(.*?)</ins>', html, re.DOTALL)
    deleted = re.findall(r'<del class="diff-del">(.*?)</del>', html, re.DOTALL)
    # Each change says what it is in words (and a plus or minus mark), not by its colour alone.
    assert any("[added: " in part and "4" in part for part in inserted), inserted
    assert any("[removed: " in part and "3" in part for part in deleted), deleted
    assert all('<span class="diff-mark" aria-hidden="true">' in p for p in inserted + deleted)
    # The draft's own words are text, never markup.
    assert "&lt;b&gt;sharp&lt;/b&gt;" in html and "<b>sharp</b>" not in html
    assert AuditEvent.objects.filter(action="draft.version_diff", actor=lawyer).count() == 1
    assert not AuditEvent.objects.filter(action="draft.view", actor=lawyer).exists()
    # The draft page and the version page link to it.
    detail = lawyer_client.get(f"/cases/{draft.case_id}/drafts/{draft.pk}/").content.decode()
    assert f'href="{_page(draft, 2, "diff/")}"' in detail
    version = lawyer_client.get(_page(draft, 2)).content.decode()
    assert f'id="diff-link" href="{_page(draft, 2, "diff/")}"' in version


def test_the_diff_page_compares_with_any_version_and_says_when_nothing_changed(
    lawyer_client: Client, lawyer: User, draft: Draft
) -> None:
    _add_version(draft, lawyer, TEXT + "\n\nA new paragraph.")
    _add_version(draft, lawyer, TEXT)

    same = lawyer_client.get(_page(draft, 3, "diff/"), {"against": "1"}).content.decode()
    first = lawyer_client.get(_page(draft, 1, "diff/"), {"against": "2"}).content.decode()

    assert 'id="diff-same"' in same and '<option value="1" selected>' in same
    assert "What changed from version 2 to version 1" in first and "[removed: " in first


@pytest.mark.parametrize(
    ("number", "query", "status", "message"),
    [
        (1, {}, 200, "Version 1 has no earlier version"),
        (1, {"against": "0"}, 400, "Choose a version of this draft to compare with."),
        (1, {"against": "x"}, 400, "Choose a version of this draft to compare with."),
        (1, {"against": str(2**40)}, 400, "Choose a version of this draft to compare with."),
        (1, {"against": "-3"}, 400, "Choose a version of this draft to compare with."),
        (1, {"against": "9"}, 404, "There is no such version of this draft to compare with."),
    ],
)
def test_the_diff_page_refuses_bad_versions_with_a_reason(
    lawyer_client: Client,
    lawyer: User,
    draft: Draft,
    number: int,
    query: dict[str, str],
    status: int,
    message: str,
) -> None:
    response = lawyer_client.get(_page(draft, number, "diff/"), query)

    assert response.status_code == status
    assert message in response.content.decode()
    assert not AuditEvent.objects.filter(action="draft.version_diff").exists()
    # What the page showed (the draft and its versions) is audited as a view of the draft.
    assert AuditEvent.objects.filter(action="draft.view", actor=lawyer).count() == 1


def test_the_diff_page_is_a_404_for_outsiders_missing_versions_and_other_cases_drafts(
    lawyer_client: Client, outsider_client: Client, lawyer: User, draft: Draft, other_case: Case
) -> None:
    from tests.factories import MembershipFactory

    MembershipFactory(case=other_case, user=lawyer, role="lawyer")
    urls = [
        (outsider_client, _page(draft, 1, "diff/") + "?against=1"),
        (lawyer_client, _page(draft, 7, "diff/") + "?against=1"),
        (lawyer_client, f"/cases/{other_case.pk}/drafts/{draft.pk}/versions/1/diff/?against=1"),
    ]
    for client, url in urls:
        response = client.get(url)
        assert response.status_code == 404, url
        assert draft.title not in response.content.decode()
    assert (
        not AuditEvent.objects.filter(action__startswith="draft.")
        .exclude(action__in=["draft.create"])
        .exists()
    )


def test_the_export_buttons_follow_the_approval_rule_and_say_why(
    lawyer_client: Client, staff_client: Client, lawyer: User, draft: Draft
) -> None:
    unverified = lawyer_client.get(_page(draft)).content.decode()
    refused = lawyer_client.post(_page(draft, 1, "export/"), {"format": "pdf"})
    verified(draft=draft, user=lawyer, statuses=["supported", "unsupported"])
    blocked = staff_client.get(_page(draft)).content.decode()
    blocked_post = staff_client.post(_page(draft, 1, "export/"), {"format": "docx"})

    export_button = 'name="format" value="pdf" disabled aria-describedby="export-why"'
    assert export_button in unverified
    assert "Verify this version first: an export needs a finished verification." in unverified
    assert refused.status_code == 409
    assert "Not exported: Version 1 has not been verified" in refused.content.decode()
    assert export_button in blocked and "1 finding is unsupported or contradicted" in blocked
    assert blocked_post.status_code == 409
    assert "Not exported: Version 1 has 1 unsupported or contradicted finding open" in (
        blocked_post.content.decode()
    )
    assert not AuditEvent.objects.filter(action="draft.export").exists()
    assert not GeneratedArtifact.objects.filter(kind="export").exists()


def test_the_export_buttons_download_docx_and_pdf_registered(
    staff_client: Client, lawyer: User, draft: Draft
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported"])
    page = staff_client.get(_page(draft)).content.decode()
    assert 'name="format" value="docx">' in page and 'id="export-why"' not in page

    word = staff_client.post(_page(draft, 1, "export/"), {"format": "docx"})
    pdf = staff_client.post(_page(draft, 1, "export/"), {"format": "pdf"})

    assert word.status_code == 200 and pdf.status_code == 200
    assert word["Content-Type"].startswith("application/vnd.openxmlformats")
    assert word["Content-Disposition"].startswith('attachment; filename="Brief v1.docx"')
    texts = [p.text for p in docx.Document(io.BytesIO(word.content)).paragraphs]
    assert "Statement of facts" in texts
    assert pdf["Content-Type"] == "application/pdf" and pdf.content.startswith(b"%PDF")
    for response in (word, pdf):
        artifact = GeneratedArtifact.objects.get(pk=int(response["X-Lexweb-Artifact"]))
        assert (artifact.kind, artifact.case_id) == ("export", draft.case_id)
    assert AuditEvent.objects.filter(action="draft.export").count() == 2


@pytest.mark.parametrize("data", [{}, {"format": "odt"}, {"format": "x" * 5000}, {"format": ""}])
def test_an_export_of_an_unknown_format_is_refused_on_the_page(
    lawyer_client: Client, lawyer: User, draft: Draft, data: dict[str, str]
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported"])

    response = lawyer_client.post(_page(draft, 1, "export/"), data)

    assert response.status_code == 400
    assert "Not exported: choose Word (DOCX) or PDF." in response.content.decode()
    assert not GeneratedArtifact.objects.filter(kind="export").exists()


def test_an_export_by_an_outsider_or_of_a_missing_version_is_a_404_and_nothing_is_made(
    lawyer_client: Client, outsider_client: Client, lawyer: User, draft: Draft
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported"])

    outsider = outsider_client.post(_page(draft, 1, "export/"), {"format": "pdf"})
    missing = lawyer_client.post(_page(draft, 4, "export/"), {"format": "pdf"})
    get = lawyer_client.get(_page(draft, 1, "export/"))

    assert (outsider.status_code, missing.status_code, get.status_code) == (404, 404, 405)
    assert draft.title not in outsider.content.decode()
    assert not GeneratedArtifact.objects.filter(kind="export").exists()
