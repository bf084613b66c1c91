"""Origins: people choose among six; "system generated" is set only by lexweb. Refused from the
service, the API and the browser form alike; generated documents get it, with their lineage and
their registration, through document_create_generated."""

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import lineage_selectors as provenance
from apps.documents import services
from apps.documents.forms import UploadForm
from apps.documents.models import Blob, Derivation, Document
from apps.evidence.models import ArtifactMatch, GeneratedArtifact
from lexweb.errors import Conflict, DomainError
from tests.documents.files import real, text_pdf, upload

pytestmark = pytest.mark.django_db(databases="__all__")

REFUSED = (
    "The origin “system generated” is set only by lexweb; choose who the document came from "
    "(client, opposing party, third party, court, public record or firm work product)."
)
NOTE = b"Dear counsel, the invoice of March is attached.\n"
HOSTILE_ORIGINS = [
    "",
    "Client",
    "client ",
    " system_generated",
    "SYSTEM_GENERATED",
    "system generated",
    "system_generated\x00",
    "client\x00system_generated",
    "<script>alert(1)</script>",
    "' OR 1=1 --",
    "x" * 100_000,
]


def _nothing_stored(blob_root: Path) -> None:
    assert not Document.objects.exists() and not Blob.objects.exists()
    stored = [p for p in blob_root.rglob("*") if p.is_file()] if blob_root.exists() else []
    assert stored == []
    assert not AuditEvent.objects.filter(action="document.upload").exists()


# --- People may not say "system generated" ---------------------------------------------------


def test_service_refuses_system_generated_with_the_clear_message(
    lawyer: User, case: Case, blob_root: Path
) -> None:
    with pytest.raises(DomainError) as one:
        services.document_upload(
            case=case,
            uploaded_by=lawyer,
            filename="draft.txt",
            source=io.BytesIO(NOTE),
            origin="system_generated",
        )
    with pytest.raises(DomainError) as many:
        services.documents_upload(
            case=case,
            uploaded_by=lawyer,
            files=[("a.txt", io.BytesIO(NOTE)), ("b.txt", io.BytesIO(b"b\n"))],
            origin=Document.Origin.SYSTEM_GENERATED,
        )

    assert one.value.message == many.value.message == REFUSED
    _nothing_stored(blob_root)


@pytest.mark.parametrize("origin", HOSTILE_ORIGINS, ids=range(len(HOSTILE_ORIGINS)))
def test_service_refuses_hostile_origins_with_a_bounded_message(
    lawyer: User, case: Case, blob_root: Path, origin: str
) -> None:
    with pytest.raises(DomainError) as caught:
        services.document_upload(
            case=case, uploaded_by=lawyer, filename="a.txt", source=io.BytesIO(NOTE), origin=origin
        )

    message = caught.value.message
    assert message.startswith("Unknown origin ")
    assert message.endswith(
        "use one of client, opposing, third_party, court, public_record, work_product."
    )
    assert len(message) < 200 and "\x00" not in message
    _nothing_stored(blob_root)


def test_api_answers_system_generated_with_400_and_the_message(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    response = post_files(
        lawyer_api,
        case,
        upload("draft.pdf", real("ca2_docketing-notice_17-3510.pdf")),
        origin="system_generated",
    )

    assert response.status_code == 400
    assert response.json()["detail"] == REFUSED
    _nothing_stored(blob_root)


@pytest.mark.parametrize("origin", ["the-internet", "System_Generated", "x" * 5000])
def test_api_refuses_unknown_origins_and_stores_nothing(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any], origin: str
) -> None:
    response = post_files(lawyer_api, case, upload("a.txt", NOTE), origin=origin)

    assert response.status_code in (400, 422)
    assert response.json()["code"] == "invalid"
    _nothing_stored(blob_root)


def test_upload_form_offers_only_the_six_person_origins() -> None:
    choices = UploadForm().fields["origin"].choices  # type: ignore[attr-defined]

    assert [value for value, _label in choices] == [
        "client",
        "opposing",
        "third_party",
        "court",
        "public_record",
        "work_product",
    ]
    bound = UploadForm({"origin": "system_generated"}, {"files": [upload("a.txt", NOTE)]})
    assert not bound.is_valid() and "origin" in bound.errors


def test_browser_upload_claiming_system_generated_is_400_and_stores_nothing(
    lawyer_client: Client, case: Case, blob_root: Path
) -> None:
    response = lawyer_client.post(
        reverse("documents:list", kwargs={"case_id": case.pk}),
        {"origin": "system_generated", "files": [SimpleUploadedFile("a.txt", NOTE)]},
    )

    assert response.status_code == 400
    # The upload form's menu; the list's filter offers every origin, this one included.
    html = response.content.decode()
    upload = html[html.index('class="form upload-form"') :]
    assert 'value="system_generated"' not in upload[: upload.index("</form>")]
    _nothing_stored(blob_root)


def test_attachments_take_their_messages_person_origin(
    lawyer: User, case: Case, blob_root: Path
) -> None:
    message = (
        b"From: a@example.com\r\nTo: b@example.com\r\nSubject: Papers\r\n"
        b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=XX\r\n\r\n"
        b"--XX\r\nContent-Type: text/plain\r\n\r\nSee attached.\r\n"
        b"--XX\r\nContent-Type: text/plain\r\n"
        b'Content-Disposition: attachment; filename="terms.txt"\r\n\r\n'
        b"The terms.\r\n--XX--\r\n"
    )
    services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="papers.eml",
        source=io.BytesIO(message),
        origin="third_party",
    )

    assert sorted(Document.objects.values_list("filename", "origin")) == [
        ("papers.eml", "third_party"),
        ("terms.txt", "third_party"),
    ]


# --- lexweb sets it: generated documents ------------------------------------------------------

SUMMARY = (
    "Summary for counsel. The notice sets the briefing schedule: the appellant's brief is due "
    "within forty days and the appendix with it; failure to file may lead to dismissal."
)


def test_a_generated_document_is_system_generated_registered_flagged_and_derived(
    lawyer: User, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    source = services.document_upload(
        case=case,
        uploaded_by=lawyer,
        filename="notice.pdf",
        source=io.BytesIO(real("ca2_docketing-notice_17-3510.pdf")),
        origin="court",
    ).document
    assert source is not None
    run_jobs()

    document = services.document_create_generated(
        case=case,
        actor=lawyer,
        filename="summary.md",
        data=SUMMARY.encode(),
        text=SUMMARY,
        media_type="text/markdown",
        source="drafting run 1, stage drafter",
        parents=[source],
        version="7",
    )
    run_jobs()

    document.refresh_from_db()
    assert (document.origin, document.status, document.provenance) == (
        "system_generated",
        "ready",
        "flagged",
    )
    artifact = GeneratedArtifact.objects.get(sha256=document.blob.sha256)
    assert (artifact.kind, artifact.media_type, artifact.case_id) == (
        "model_output",
        "text/markdown",
        case.pk,
    )
    assert ArtifactMatch.objects.filter(document=document, artifact=artifact, by="bytes").exists()
    (row,) = Derivation.objects.filter(child=document)
    assert (row.parent_id, row.transform, row.version, row.deterministic) == (
        source.pk,
        "model-output",
        "7",
        False,
    )
    assert document.pages.get().text == SUMMARY
    assert AuditEvent.objects.filter(
        action="document.generated", target_id=str(document.pk), actor=lawyer
    ).exists()
    source.refresh_from_db()
    assert source.origin == "court"
    nearest = provenance.generated_ancestor(document)
    assert nearest is not None and (nearest.document_id, nearest.deterministic) == (
        source.pk,
        False,
    )


def test_generating_the_same_bytes_twice_stores_one_document_with_both_lineages(
    lawyer: User, case: Case, blob_root: Path
) -> None:
    def generate(*parents: Document) -> Document:
        return services.document_create_generated(
            case=case,
            actor=None,
            filename="summary.pdf",
            data=pdf,
            text=SUMMARY,
            media_type="application/pdf",
            source="test",
            parents=parents,
        )

    notes = services.document_upload(
        case=case, uploaded_by=lawyer, filename="n.txt", source=io.BytesIO(NOTE), origin="client"
    ).document
    assert notes is not None
    pdf = text_pdf(SUMMARY.split("; "))
    first, second, third = generate(), generate(notes), generate(notes)

    assert first.pk == second.pk == third.pk
    assert Document.objects.count() == 2 and GeneratedArtifact.objects.count() == 1
    assert AuditEvent.objects.filter(action="document.generated", actor=None).count() == 1
    assert list(Derivation.objects.values_list("child_id", "parent_id", "deterministic")) == [
        (first.pk, notes.pk, False)
    ]


def test_generated_bytes_a_person_uploaded_before_are_a_conflict_and_stay_registered(
    lawyer: User, case: Case, blob_root: Path
) -> None:
    services.document_upload(
        case=case, uploaded_by=lawyer, filename="mine.txt", source=io.BytesIO(NOTE), origin="client"
    )

    with pytest.raises(Conflict, match="already document"):
        services.document_create_generated(
            case=case,
            actor=lawyer,
            filename="summary.txt",
            data=NOTE,
            text=NOTE.decode(),
            media_type="text/plain",
            source="test",
        )

    assert Document.objects.get().origin == "client"
    assert GeneratedArtifact.objects.filter(size=len(NOTE)).count() == 1


def test_generated_document_refuses_what_an_upload_refuses(
    lawyer: User, case: Case, blob_root: Path
) -> None:
    with pytest.raises(DomainError, match="damaged or truncated"):
        services.document_create_generated(
            case=case,
            actor=lawyer,
            filename="broken.pdf",
            data=b"%PDF-1.7\n" + bytes(range(256)) * 4,
            text="what the model meant to export",
            media_type="application/pdf",
            source="test",
        )

    assert not Document.objects.exists()


def test_generated_document_with_a_hostile_name_is_stored_under_a_safe_one(
    lawyer: User, case: Case, blob_root: Path
) -> None:
    document = services.document_create_generated(
        case=case,
        actor=lawyer,
        filename="../../etc/\x00passwd\r\n<b>draft</b>" + "x" * 500 + ".md",
        data=SUMMARY.encode(),
        text=SUMMARY,
        media_type="text/markdown",
        source="drafter\r\nInjected: header" + "y" * 1000,
    )

    assert "/" not in document.filename and "\x00" not in document.filename
    assert "\r" not in document.filename and len(document.filename) <= 200
    artifact = GeneratedArtifact.objects.get(sha256=document.blob.sha256)
    assert "\n" not in artifact.source and len(artifact.source) <= 200


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"", "no bytes"), (b"x" * 2048, "larger than")],
    ids=["empty", "oversized"],
)
def test_generated_document_that_cannot_be_stored_is_refused_with_the_reason(
    lawyer: User, case: Case, blob_root: Path, settings: Any, data: bytes, message: str
) -> None:
    settings.LEXWEB_MAX_UPLOAD_BYTES = 1024
    with pytest.raises(DomainError, match=message):
        services.document_create_generated(
            case=case,
            actor=lawyer,
            filename="big.txt",
            data=data,
            text=data.decode(),
            media_type="text/plain",
            source="test",
        )

    assert not Document.objects.exists()
    # What a model wrote is registered even when it cannot be stored as a document.
    assert GeneratedArtifact.objects.filter(size=len(data)).count() == (1 if data else 0)
