"""Provenance is shown before anyone builds a packet: in the document list, the viewer and the
API. Origin (untrusted for opposing/third party), the registry's verdict (pending, clear,
flagged with the match kind and share, the artifact named only to members of its case) and
lineage (parents, the e-mail family, the production volume).

Rows are written directly (documents, registry matches, derivations): what is under test is
what people and agents are shown, on real PostgreSQL through the real pages and endpoints.
"""

import hashlib
import html
from datetime import timedelta
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.contrib.postgres.search import SearchVector
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.test.client import MULTIPART_CONTENT
from django.utils import timezone

from apps.accounts.models import AuditEvent, User
from apps.cases.models import BreakGlassGrant, Case, Membership
from apps.documents import production_services, provenance_selectors, services
from apps.documents.models import Blob, Derivation, Document, Page, Production
from apps.evidence.models import ArtifactMatch, GeneratedArtifact
from apps.evidence.services import checks, registry
from tests.conftest import session_client, token_client
from tests.factories import MembershipFactory

pytestmark = pytest.mark.django_db

HOSTILE_TITLE = '<script>alert("t")</script> “Draft” & co'
HOSTILE_NAME = '<img src=x onerror="alert(1)">.txt'
SYSTEM_GENERATED_REFUSAL = (
    "The origin “system generated” is set only by lexweb; choose who the document came from "
    "(client, opposing party, third party, court, public record or firm work product)."
)


@pytest.fixture(autouse=True)
def _private_blob_root(settings: Any, tmp_path: Path) -> Path:
    root = tmp_path / "blobs"
    settings.LEXWEB_BLOB_ROOT = root
    return root


def _doc(
    case: Case,
    user: User,
    filename: str,
    *,
    origin: str = "client",
    provenance: str = "clear",
    kind: str = "text",
) -> Document:
    data = f"{case.pk}:{filename}:{origin}".encode()
    blob = Blob.objects.create(sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    return Document.objects.create(
        case=case,
        blob=blob,
        filename=filename,
        kind=kind,
        content_type="text/plain",
        origin=origin,
        status=Document.Status.READY,
        provenance=provenance,
        page_count=1,
        pages_done=1,
        uploaded_by=user,
    )


def _artifact(case: Case | None, title: str) -> GeneratedArtifact:
    return GeneratedArtifact.objects.create(
        sha256=hashlib.sha256(title.encode()).hexdigest(),
        kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
        media_type="text/markdown",
        title=title,
        case=case,
        size=100,
        fingerprint_count=40,
    )


def _flag(document: Document, artifact: GeneratedArtifact, *, by: str, share: float) -> None:
    ArtifactMatch.objects.create(document=document, artifact=artifact, by=by, share=share)
    Document.objects.filter(pk=document.pk).update(provenance=Document.Provenance.FLAGGED)


def _derive(child: Document, parent: Document, transform: str, *, deterministic: bool) -> None:
    Derivation.objects.create(
        child=child, parent=parent, transform=transform, version="1", deterministic=deterministic
    )


def _list(case: Case) -> str:
    return f"/cases/{case.pk}/documents/"


def _viewer(document: Document) -> str:
    return f"/cases/{document.case_id}/documents/{document.pk}/"


def _api_list(case: Case) -> str:
    return f"/api/v1/cases/{case.pk}/documents"


def _api_one(document: Document) -> str:
    return f"/api/v1/cases/{document.case_id}/documents/{document.pk}"


@pytest.fixture
def four(lawyer: User, case: Case) -> dict[str, Document]:
    """A pending, a clear, a flagged (bytes, with its artifact in this case) and a derived
    (model output of the flagged one) document; the clear one is opposing-party material."""
    pending = _doc(case, lawyer, "incoming.pdf", provenance="pending")
    clear = _doc(case, lawyer, "their-letter.pdf", origin="opposing")
    flagged = _doc(case, lawyer, "affidavit-final.pdf")
    _flag(flagged, _artifact(case, "Affidavit draft v2"), by="bytes", share=1.0)
    derived = _doc(case, lawyer, "summary.md", origin="system_generated")
    _derive(derived, flagged, "model-output", deterministic=False)
    return {"pending": pending, "clear": clear, "flagged": flagged, "derived": derived}


# --- The list --------------------------------------------------------------------------------


def test_list_shows_origin_untrusted_and_each_verdict(
    lawyer_client: Client, case: Case, four: dict[str, Document]
) -> None:
    body = lawyer_client.get(_list(case)).content.decode()

    rows = {name: _row(body, doc) for name, doc in four.items()}
    assert "Checking for generated text…" in rows["pending"]
    assert "Clear" in rows["clear"] and "Opposing party" in rows["clear"]
    assert "untrusted" in rows["clear"]
    assert "untrusted" not in rows["pending"]
    assert "Flagged" in rows["flagged"]
    assert "Same bytes as “Affidavit draft v2”, which lexweb generated." in rows["flagged"]
    assert "System generated" in rows["derived"] and "never evidence" in rows["derived"]
    assert "derived from 1 document" in rows["derived"]


def test_list_names_a_text_match_with_its_share_as_a_percentage(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    document = _doc(case, lawyer, "retyped.pdf", origin="client")
    _flag(document, _artifact(case, "Motion draft"), by="text", share=0.874)

    row = _row(lawyer_client.get(_list(case)).content.decode(), document)

    assert "Its text matches 87% of “Motion draft”, which lexweb generated." in row


def test_list_hides_the_artifact_title_from_someone_outside_the_artifacts_case(
    lawyer: User, lawyer_client: Client, case: Case, other_case: Case
) -> None:
    document = _doc(case, lawyer, "forwarded.pdf")
    _flag(document, _artifact(other_case, "Secret strategy memo"), by="text", share=0.62)

    body = lawyer_client.get(_list(case)).content.decode()

    assert "Secret strategy memo" not in body
    assert "Its text matches 62% of a document lexweb generated." in _row(body, document)

    MembershipFactory(case=other_case, user=lawyer, role=Membership.Role.LAWYER)
    body = lawyer_client.get(_list(case)).content.decode()
    assert "62% of “Secret strategy memo”, which lexweb generated" in body


def test_list_labels_attachments_and_production_volumes(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    message = _doc(case, lawyer, "papers.eml", kind="email")
    attachment = _doc(case, lawyer, "terms.txt")
    _derive(attachment, message, Derivation.EMAIL_ATTACHMENT, deterministic=True)
    volume = _doc(case, lawyer, "ACME001.pdf", kind="pdf")
    _derive(volume, attachment, Derivation.BATES_STAMP, deterministic=True)
    _production(case, lawyer, volume, "ACME001")

    body = lawyer_client.get(_list(case)).content.decode()

    assert f'attachment of <a href="{_viewer(message)}">papers.eml</a>' in _row(body, attachment)
    assert "production volume ACME001" in _row(body, volume)
    assert "production volume" not in _row(body, attachment)


def test_list_escapes_hostile_file_names_and_artifact_titles(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    document = _doc(case, lawyer, HOSTILE_NAME)
    _flag(document, _artifact(case, HOSTILE_TITLE), by="text", share=0.5)

    body = lawyer_client.get(_list(case)).content.decode()

    assert "<script>alert" not in body and '<img src=x onerror="alert(1)">' not in body
    assert html.escape(HOSTILE_TITLE) in body
    assert html.escape(HOSTILE_NAME) in body


def test_list_runs_the_same_queries_for_few_or_many_flagged_derived_documents(
    lawyer: User,
    lawyer_client: Client,
    lawyer_api: Client,
    case: Case,
    other_case: Case,
    django_assert_max_num_queries: Any,
) -> None:
    made = iter(range(1000))

    def add(n: int) -> None:
        for _ in range(n):
            i = next(made)
            parent = _doc(case, lawyer, f"mail-{i}.eml", kind="email")
            child = _doc(case, lawyer, f"att-{i}.txt")
            _derive(child, parent, Derivation.EMAIL_ATTACHMENT, deterministic=True)
            _flag(child, _artifact(case, f"Draft {i}"), by="text", share=0.5)
            _flag(child, _artifact(other_case, f"Other {i}"), by="bytes", share=1.0)

    # A first request of a session or token writes its own rows (last-used times): not counted.
    lawyer_client.get(_list(case))
    lawyer_api.get(_api_list(case))
    counts = []
    for n in (2, 6):
        add(n)
        with django_assert_max_num_queries(100) as page:
            assert lawyer_client.get(_list(case)).status_code == 200
        with django_assert_max_num_queries(100) as api:
            assert lawyer_api.get(_api_list(case)).status_code == 200
        counts.append((len(page.captured_queries), len(api.captured_queries)))

    assert counts[0] == counts[1], counts


# --- The viewer ------------------------------------------------------------------------------


def test_viewer_shows_the_verdict_and_the_lineage(
    lawyer_client: Client, case: Case, four: dict[str, Document]
) -> None:
    flagged = lawyer_client.get(_viewer(four["flagged"])).content.decode()
    derived = lawyer_client.get(_viewer(four["derived"])).content.decode()
    pending = lawyer_client.get(_viewer(four["pending"])).content.decode()
    clear = lawyer_client.get(_viewer(four["clear"])).content.decode()

    assert "Same bytes as “Affidavit draft v2”, which lexweb generated." in flagged
    assert "Lineage" not in flagged  # an original upload has no ancestors
    assert "Checking for generated text…" in pending
    assert "Clear: no match" not in pending
    assert "untrusted" in clear and "Opposing party" in clear
    assert "Derived from something lexweb generated" in derived
    assert f'<a href="{_viewer(four["flagged"])}">affidavit-final.pdf</a>' in derived
    assert "model-output/1, not deterministic" in derived


def test_viewer_lists_every_ancestor_of_a_grandchild(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    message = _doc(case, lawyer, "papers.eml", kind="email", origin="third_party")
    attachment = _doc(case, lawyer, "terms.pdf", kind="pdf", origin="third_party")
    _derive(attachment, message, Derivation.EMAIL_ATTACHMENT, deterministic=True)
    volume = _doc(case, lawyer, "VOL001.pdf", kind="pdf", origin="third_party")
    _derive(volume, attachment, Derivation.BATES_STAMP, deterministic=True)
    _production(case, lawyer, volume, "VOL001")

    body = lawyer_client.get(_viewer(volume)).content.decode()

    assert "Production volume" in body and "VOL001" in body
    assert "Derived from something lexweb generated" not in body
    lineage = body[body.index('id="lineage-heading"') :]
    assert lineage.index("terms.pdf") < lineage.index("papers.eml")
    assert "bates-stamp/1, deterministic" in lineage
    assert "2 steps back · email-attachment/1" in lineage
    assert "Third party, untrusted" in lineage


def test_viewer_of_an_attachment_links_back_to_its_e_mail(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    message = _doc(case, lawyer, "papers.eml", kind="email")
    attachment = _doc(case, lawyer, "terms.txt")
    _derive(attachment, message, Derivation.EMAIL_ATTACHMENT, deterministic=True)

    body = lawyer_client.get(_viewer(attachment)).content.decode()

    assert f'<dt>Attachment of</dt><dd><a href="{_viewer(message)}">papers.eml</a>' in body


def test_viewer_hides_the_artifact_title_unless_the_user_may_see_its_case(
    lawyer: User,
    lawyer_client: Client,
    case: Case,
    other_case: Case,
    admin_user: User,
) -> None:
    document = _doc(case, lawyer, "forwarded.pdf")
    _flag(document, _artifact(other_case, "Secret strategy memo"), by="bytes", share=1.0)
    _flag(document, _artifact(None, "Site-wide template"), by="text", share=0.4)

    body = lawyer_client.get(_viewer(document)).content.decode()
    assert "Secret strategy memo" not in body and "Site-wide template" not in body
    assert "Same bytes as a document lexweb generated." in body
    assert "Its text matches 40% of a document lexweb generated." in body

    # An admin with live break-glass grants on both cases may see both.
    for grant_case in (case, other_case):
        BreakGlassGrant.objects.create(
            case=grant_case,
            user=admin_user,
            reason="audit",
            expires_at=timezone.now() + timedelta(hours=1),
        )
    admin_body = session_client(admin_user).get(_viewer(document)).content.decode()
    assert "Same bytes as “Secret strategy memo”, which lexweb generated." in admin_body


def test_viewer_escapes_hostile_titles_and_names(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    parent = _doc(case, lawyer, HOSTILE_NAME, origin="system_generated")
    document = _doc(case, lawyer, "child.txt", origin="system_generated")
    _derive(document, parent, "model-output", deterministic=False)
    _flag(document, _artifact(case, HOSTILE_TITLE), by="text", share=0.9)

    body = lawyer_client.get(_viewer(document)).content.decode()

    assert "<script>alert" not in body and '<img src=x onerror="alert(1)">' not in body
    assert html.escape(HOSTILE_TITLE) in body and html.escape(HOSTILE_NAME) in body


def test_non_member_sees_nothing_of_the_provenance(
    outsider_client: Client,
    outsider_api: Client,
    case: Case,
    four: dict[str, Document],
) -> None:
    before = AuditEvent.objects.count()
    responses = [
        outsider_client.get(_list(case)),
        outsider_client.get(_viewer(four["flagged"])),
        outsider_api.get(_api_list(case)),
        outsider_api.get(_api_one(four["flagged"])),
    ]

    assert [r.status_code for r in responses] == [404, 404, 404, 404]
    for response in responses:
        text = response.content.decode()
        assert "Affidavit draft v2" not in text and "affidavit-final.pdf" not in text
    assert AuditEvent.objects.count() == before


def test_viewer_is_one_audited_read(
    lawyer: User, lawyer_client: Client, case: Case, four: dict[str, Document]
) -> None:
    lawyer_client.get(_viewer(four["derived"]))

    rows = list(
        AuditEvent.objects.filter(actor=lawyer, action__startswith="document.").values_list(
            "action", "target_id"
        )
    )
    assert rows == [("document.view", str(four["derived"].pk))]


# --- The API ---------------------------------------------------------------------------------


def test_api_document_carries_provenance_matches_and_lineage(
    lawyer_api: Client, case: Case, four: dict[str, Document]
) -> None:
    listed = {d["filename"]: d for d in lawyer_api.get(_api_list(case)).json()["items"]}

    assert listed["incoming.pdf"]["provenance"] == "pending"
    assert (listed["their-letter.pdf"]["provenance"], listed["their-letter.pdf"]["untrusted"]) == (
        "clear",
        True,
    )
    flagged = listed["affidavit-final.pdf"]
    assert flagged["provenance"] == "flagged" and flagged["untrusted"] is False
    assert flagged["matches"] == [
        {
            "artifact_id": ArtifactMatch.objects.get(document=four["flagged"]).artifact_id,
            "title": "Affidavit draft v2",
            "by": "bytes",
            "share": 1.0,
            "found": "intake",
            "cleared": False,
        }
    ]
    assert flagged["derived_from"] == [] and flagged["parent_id"] is None
    derived = listed["summary.md"]
    assert derived["origin"] == "system_generated"
    assert derived["derived_from"] == [
        {
            "document_id": four["flagged"].pk,
            "transform": "model-output",
            "version": "1",
            "deterministic": False,
        }
    ]
    assert derived["parent_id"] is None  # only an e-mail attachment has a parent_id

    one = lawyer_api.get(_api_one(four["derived"])).json()
    assert one["derived_from"] == derived["derived_from"]
    assert one["production_volume"] is None


def test_api_title_is_null_outside_the_artifacts_case_and_parent_id_reads_the_e_mail(
    lawyer: User, lawyer_api: Client, case: Case, other_case: Case
) -> None:
    message = _doc(case, lawyer, "papers.eml", kind="email")
    attachment = _doc(case, lawyer, "terms.txt")
    _derive(attachment, message, Derivation.EMAIL_ATTACHMENT, deterministic=True)
    artifact = _artifact(other_case, "Secret strategy memo")
    _flag(attachment, artifact, by="text", share=0.8765)

    one = lawyer_api.get(_api_one(attachment))
    listed = lawyer_api.get(_api_list(case)).json()["items"]

    assert "Secret strategy memo" not in one.content.decode()
    assert one.json()["matches"] == [
        {
            "artifact_id": artifact.pk,
            "title": None,
            "by": "text",
            "share": 0.8765,
            "found": "intake",
            "cleared": False,
        }
    ]
    assert one.json()["parent_id"] == message.pk
    assert {d["filename"]: d["parent_id"] for d in listed} == {
        "papers.eml": None,
        "terms.txt": message.pk,
    }


def test_api_names_the_production_volume(lawyer: User, lawyer_api: Client, case: Case) -> None:
    volume = _doc(case, lawyer, "ACME001.pdf", kind="pdf")
    _production(case, lawyer, volume, "ACME001")

    assert lawyer_api.get(_api_one(volume)).json()["production_volume"] == "ACME001"
    (listed,) = lawyer_api.get(_api_list(case)).json()["items"]
    assert listed["production_volume"] == "ACME001"


# --- Upload: "system generated" is lexweb's alone ---------------------------------------------


def test_api_upload_as_system_generated_is_400_with_the_reason_and_stores_nothing(
    lawyer_api: Client, case: Case
) -> None:
    response = lawyer_api.post(
        _api_list(case),
        {"files": [SimpleUploadedFile("draft.txt", b"A draft.\n")], "origin": "system_generated"},
        content_type=MULTIPART_CONTENT,
    )

    assert response.status_code == 400
    assert response.json()["detail"] == SYSTEM_GENERATED_REFUSAL
    assert not Document.objects.exists() and not Blob.objects.exists()


@pytest.mark.parametrize(
    "origin", ["", "System_Generated", "system_generated ", "<script>", "x" * 10_000, "client\x00"]
)
def test_api_upload_with_a_hostile_origin_is_refused_and_stores_nothing(
    lawyer_api: Client, case: Case, origin: str
) -> None:
    response = lawyer_api.post(
        _api_list(case),
        {"files": [SimpleUploadedFile("a.txt", b"A.\n")], "origin": origin},
        content_type=MULTIPART_CONTENT,
    )

    assert response.status_code in (400, 422), response.content
    assert "<script>" not in response.content.decode()
    assert not Document.objects.exists()


def test_api_upload_answers_with_the_provenance_of_each_file(
    lawyer_api: Client, case: Case
) -> None:
    response = lawyer_api.post(
        _api_list(case),
        {"files": [SimpleUploadedFile("letter.txt", b"Dear Sir.\n")], "origin": "third_party"},
        content_type=MULTIPART_CONTENT,
    )

    assert response.status_code == 201, response.content
    (result,) = response.json()["results"]
    document = result["document"]
    assert document["untrusted"] is True
    assert document["provenance"] in ("pending", "clear", "flagged")
    assert document["derived_from"] == [] and document["parent_id"] is None


def test_upload_form_does_not_offer_system_generated(lawyer_client: Client, case: Case) -> None:
    body = lawyer_client.get(_list(case)).content.decode()
    # The upload form's menu; the list's filter above it offers every origin.
    start = body.index('class="form upload-form"')
    form = body[start : body.index("</form>", start)]

    for origin in Document.PERSON_ORIGINS:
        assert f'value="{origin}"' in form
    assert 'value="system_generated"' not in form


def test_upload_form_posting_system_generated_is_400_and_stores_nothing(
    lawyer_client: Client, case: Case
) -> None:
    response = lawyer_client.post(
        _list(case),
        {"files": [SimpleUploadedFile("draft.txt", b"A draft.\n")], "origin": "system_generated"},
    )

    assert response.status_code == 400
    assert not Document.objects.exists()


# --- Helpers ---------------------------------------------------------------------------------


def _row(body: str, document: Document) -> str:
    start = body.index(f'<tr data-document-id="{document.pk}"')
    return body[start : body.index("</tr>", start)]


def _production(case: Case, user: User, volume: Document, name: str) -> Production:
    return Production.objects.create(
        case=case,
        volume=name,
        prefix=name[:4],
        first_number=1,
        last_number=1,
        page_count=1,
        pages_done=1,
        status=Production.Status.READY,
        volume_document=volume,
        created_by=user,
    )


def test_other_users_see_titles_by_their_own_memberships(
    lawyer: User, staff: User, case: Case, other_case: Case
) -> None:
    """The visibility is the viewer's: the same list shows the title to one member of the
    artifact's case and hides it from another who is not."""
    document = _doc(case, lawyer, "forwarded.pdf")
    _flag(document, _artifact(other_case, "Secret strategy memo"), by="text", share=0.7)
    MembershipFactory(case=other_case, user=staff, role=Membership.Role.STAFF)

    staff_items = token_client(staff).get(_api_list(case)).json()["items"]
    lawyer_items = token_client(lawyer).get(_api_list(case)).json()["items"]

    assert staff_items[0]["matches"][0]["title"] == "Secret strategy memo"
    assert lawyer_items[0]["matches"][0]["title"] is None


# --- Through the real registry and intake ------------------------------------------------------

DRAFT_TEXT = (
    "The defendant received the shipment on 14 March and signed the delivery note. "
    "No complaint about the goods was made within the thirty days the contract allows, "
    "and the invoice of 2 April remains unpaid despite three reminders sent by post. "
    "The plaintiff therefore asks the court for the full amount with interest and costs."
)


def test_an_upload_of_a_registered_draft_shows_the_byte_match_at_once(
    lawyer: User, lawyer_api: Client, lawyer_client: Client, case: Case, other_case: Case
) -> None:
    draft = DRAFT_TEXT.encode()
    registry.artifact_register(
        data=draft,
        text=DRAFT_TEXT,
        kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
        media_type="text/plain",
        title="Statement of claim draft",
        case=other_case,
    )

    response = lawyer_api.post(
        _api_list(case),
        {"files": [SimpleUploadedFile("claim.txt", draft)], "origin": "client"},
        content_type=MULTIPART_CONTENT,
    )

    assert response.status_code == 201, response.content
    document = response.json()["results"][0]["document"]
    assert document["provenance"] == "flagged"
    assert [(m["title"], m["by"], m["share"]) for m in document["matches"]] == [
        (None, "bytes", 1.0)
    ]
    uploaded = Document.objects.get(pk=document["id"])
    body = lawyer_client.get(_viewer(uploaded)).content.decode()
    assert "Same bytes as a document lexweb generated." in body
    assert "Statement of claim draft" not in body


def test_a_retyped_draft_is_pending_until_read_then_shows_the_text_match(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    registry.artifact_register(
        data=b"# Claim\n\n" + DRAFT_TEXT.encode(),
        text=DRAFT_TEXT,
        kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
        media_type="text/markdown",
        title="Statement of claim draft",
        case=case,
    )
    outcome = services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="retyped.txt",
        source=SimpleUploadedFile("retyped.txt", ("Retyped:\n" + DRAFT_TEXT).encode()),
        origin="client",
    )
    assert outcome.document is not None, outcome.error

    before = _row(lawyer_client.get(_list(case)).content.decode(), outcome.document)
    services.document_extract_text(document_id=outcome.document.pk)
    after = _row(lawyer_client.get(_list(case)).content.decode(), outcome.document)

    assert "Checking for generated text…" in before
    assert "Flagged" in after
    assert "of “Statement of claim draft”, which lexweb generated." in after
    assert "Its text matches" in after


def test_viewer_of_an_e_mail_shows_each_attachments_verdict(
    lawyer: User, lawyer_client: Client, case: Case, other_case: Case
) -> None:
    message = _doc(case, lawyer, "papers.eml", kind="email", origin="opposing")
    flagged = _doc(case, lawyer, "summary.pdf", origin="opposing")
    clear = _doc(case, lawyer, "terms.txt", origin="opposing")
    for child in (flagged, clear):
        _derive(child, message, Derivation.EMAIL_ATTACHMENT, deterministic=True)
    _flag(flagged, _artifact(other_case, "Their summary"), by="text", share=0.93)

    body = lawyer_client.get(_viewer(message)).content.decode()
    attachments = body[body.index('id="attachments-heading"') :]

    summary = attachments[attachments.index("summary.pdf") : attachments.index("</li>")]
    assert "Its text matches 93% of a document lexweb generated." in summary
    assert "untrusted" in summary
    terms = attachments[attachments.index("terms.txt") :]
    assert "Clear" in terms[: terms.index("</li>")]


@pytest.mark.parametrize(
    ("share", "shown"), [(0.29, 29), (0.874, 87), (0.9999, 99), (1.0, 100), (0.5, 50)]
)
def test_a_share_is_shown_as_a_whole_percentage_never_rounded_up_to_all(
    share: float, shown: int
) -> None:
    match = provenance_selectors.MatchView(artifact_id=1, title=None, by="text", share=share)

    assert match.percent == shown
    assert match.sentence == f"Its text matches {shown}% of a document lexweb generated."


def test_search_hits_carry_untrusted_and_flagged_badges(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    letter = _doc(case, lawyer, "their-letter.txt", origin="opposing")
    copy = _doc(case, lawyer, "copied-draft.txt")
    _flag(copy, _artifact(case, "Draft"), by="text", share=0.8)
    for document in (letter, copy):
        document.pages.create(number=1, text="The ledger of Acme.", source="text_file")
    _index_pages(case)

    body = lawyer_client.get(f"/cases/{case.pk}/search/", {"q": "ledger"}).content.decode()

    hits = body[body.index('id="results-heading"') :]
    letter_hit = hits[hits.index("their-letter.txt") :]
    letter_hit = letter_hit[: letter_hit.index("</li>")]
    copy_hit = hits[hits.index("copied-draft.txt") :]
    copy_hit = copy_hit[: copy_hit.index("</li>")]
    assert "untrusted" in letter_hit and "Flagged" not in letter_hit
    assert "Flagged: matches something lexweb generated" in copy_hit
    assert "untrusted" not in copy_hit


def _index_pages(case: Case) -> None:
    Page.objects.filter(document__case=case).update(
        search_vector=SearchVector("text", config="english")
    )


def test_a_stamped_production_volume_is_labelled_with_its_originals_as_lineage(
    lawyer: User, lawyer_client: Client, lawyer_api: Client, case: Case
) -> None:
    originals = []
    for name in ("ledger.pdf", "invoice.pdf"):
        with pymupdf.open() as pdf:
            pdf.new_page().insert_text((72, 72), f"The {name} of Acme.", fontsize=11)
            data = pdf.tobytes()
        outcome = services.document_upload(
            case=case,
            uploaded_by=lawyer,
            filename=name,
            source=SimpleUploadedFile(name, data),
            origin="third_party",
        )
        assert outcome.document is not None, outcome.error
        services.document_extract_text(document_id=outcome.document.pk)
        originals.append(outcome.document)
    production = production_services.production_create(
        case=case,
        actor=lawyer,
        volume="ACME001",
        prefix="ACME",
        document_ids=[d.pk for d in originals],
    )
    production_services.production_stamp(production_id=production.pk)
    volume = Production.objects.get(pk=production.pk).volume_document
    assert volume is not None

    row = _row(lawyer_client.get(_list(case)).content.decode(), volume)
    viewer = lawyer_client.get(_viewer(volume)).content.decode()
    api = lawyer_api.get(_api_one(volume)).json()

    # Its own origin, the firm's outgoing production (issue 25 req 1), not its originals'.
    assert "production volume ACME001" in row and "Outgoing production" in row
    assert "untrusted" not in row
    lineage = viewer[viewer.index('id="lineage-heading"') :]
    assert lineage.index("ledger.pdf") < lineage.index("invoice.pdf")
    assert "bates-stamp/" in lineage and "deterministic" in lineage
    assert api["production_volume"] == "ACME001"
    assert [p["document_id"] for p in api["derived_from"]] == [d.pk for d in originals]
    assert {p["transform"] for p in api["derived_from"]} == {"bates-stamp"}


def test_a_failing_registry_check_fails_the_document_instead_of_leaving_it_processing(
    lawyer: User, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    outcome = services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="memo.txt",
        source=SimpleUploadedFile("memo.txt", b"Memo to file: nothing generated here.\n"),
        origin="client",
    )
    assert outcome.document is not None, outcome.error

    def broken(document: Document) -> list[ArtifactMatch]:
        raise RuntimeError("registry unreadable")

    # The registry check the document app calls through its evidence hooks.
    monkeypatch.setattr(checks, "document_check_text", broken)
    with pytest.raises(RuntimeError):
        services.document_extract_text(document_id=outcome.document.pk)

    document = Document.objects.get(pk=outcome.document.pk)
    assert document.status == Document.Status.FAILED
    assert "Checking the document's text failed (RuntimeError)" in document.error
    assert document.pages_done == document.page_count == 1
    assert document.provenance == Document.Provenance.PENDING

    monkeypatch.undo()
    services.document_extract_text(document_id=document.pk)  # a re-run finishes it
    document.refresh_from_db()
    assert document.status == Document.Status.READY
    assert document.provenance == Document.Provenance.CLEAR
