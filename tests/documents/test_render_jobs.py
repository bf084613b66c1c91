"""Renditions end to end: the `documents.render` job after ingest (real worker), its lineage,
page images from the rendition, productions that stamp rendered pages with BEGATTACH/ENDATTACH,
and the refusals (not ready, failed, unavailable)."""

import io
import shutil
import zipfile
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.core.management import call_command
from django.db import transaction
from django.test import Client
from PIL import Image

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import rendition_services, storage
from apps.documents.models import BatesPage, Blob, Document, Production, Rendition
from lexweb.errors import DomainError
from tests.documents.files import upload
from tests.documents.test_render import unreadable_word_file, word_file

pytestmark = pytest.mark.django_db(databases="__all__")

JSON = "application/json"
SEP, QUOTE = "\x14", "\u00fe"
LONG_TEXT = "\n".join(f"Line {k} of the tenant's notes on the lease." for k in range(130))


def _post(client: Client, case: Case, *files: Any) -> list[dict[str, Any]]:
    response = client.post(
        f"/api/v1/cases/{case.pk}/documents", {"files": list(files), "origin": "client"}
    )
    assert response.status_code == 201, response.content
    return [r["document"] for r in response.json()["results"]]


def _email_with_text_attachment() -> bytes:
    message = EmailMessage()
    message["From"] = "Client <client@acme.test>"
    message["To"] = "Counsel <counsel@firm.test>"
    message["Subject"] = "Notes on the lease"
    message["Date"] = "Mon, 02 Nov 2026 10:00:00 +0000"
    message.set_content("Dear counsel,\nmy notes are attached.\nRegards")
    message.add_attachment(LONG_TEXT.encode(), maintype="text", subtype="plain", filename="n.txt")
    return message.as_bytes()


def _word(client: Client, case: Case, path: Path) -> Document:
    """A Word file uploaded and read (its render is queued when ingest finishes)."""
    (posted,) = _post(client, case, upload(path.name, path.read_bytes()))
    return Document.objects.get(pk=posted["id"])


def test_a_text_upload_is_rendered_after_ingest_with_its_lineage(
    lawyer_api: Client, outsider_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    (document,) = _post(lawyer_api, case, upload("notes.txt", LONG_TEXT.encode()))
    run_jobs()

    rendition = Rendition.objects.get(document_id=document["id"])
    assert rendition.status == Rendition.Status.READY and rendition.output is not None
    assert (rendition.transform, rendition.version) == ("render-text", "1")
    assert rendition.tool.startswith("PyMuPDF ")
    assert rendition.input_sha256 == document["sha256"]
    assert rendition.page_count >= 2  # one stored page of text, several rendered pages
    assert rendition.label == f"rendered ({rendition.page_count} pages)"
    assert rendition.finished_at is not None
    shown = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents/{document['id']}").json()
    assert shown["rendition"]["status"] == "ready"
    assert shown["rendition"]["input_sha256"] == document["sha256"]
    assert shown["rendition"]["sha256"] == rendition.output.sha256
    listed = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents").json()["items"]
    assert listed[0]["rendition"]["label"] == rendition.label
    base = f"/api/v1/cases/{case.pk}/documents/{document['id']}/pages"
    image = lawyer_api.get(f"{base}/2/image?dpi=50")
    assert image.status_code == 200 and image["Content-Type"] == "image/png"
    assert Image.open(io.BytesIO(image.content)).size[0] > 0
    assert lawyer_api.get(f"{base}/{rendition.page_count + 1}/image").status_code == 404
    assert lawyer_api.get(f"{base}/0/image").status_code in (404, 422)
    assert outsider_api.get(f"{base}/1/image").status_code == 404


def test_page_images_wait_for_the_rendition_and_say_so(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    (document,) = _post(lawyer_api, case, upload("notes.txt", b"short notes"))

    response = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents/{document['id']}/pages/1/image")

    assert response.status_code == 404
    assert "no page images yet" in response.json()["detail"]


@pytest.mark.slow
def test_a_word_upload_is_rendered_by_libreoffice_in_the_job(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None], tmp_path: Path
) -> None:
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice is not installed (make system-deps installs it)")
    document = _word(lawyer_api, case, word_file(tmp_path / "memo.docx"))

    run_jobs()

    rendition = Rendition.objects.get(document=document)
    assert rendition.status == Rendition.Status.READY, rendition.error
    assert rendition.transform == "render-office" and rendition.tool.startswith("LibreOffice")
    assert rendition.parameters == {"network_isolated": True, "filesystem_isolated": True}


def test_without_libreoffice_the_document_stays_searchable_and_says_unavailable(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None], tmp_path: Path, settings: Any
) -> None:
    settings.LEXWEB_SOFFICE = str(tmp_path / "nowhere" / "soffice")
    document = _word(lawyer_api, case, word_file(tmp_path / "memo.docx"))

    run_jobs()

    rendition = Rendition.objects.get(document=document)
    assert rendition.status == Rendition.Status.UNAVAILABLE
    assert rendition.label.startswith("rendering unavailable: LibreOffice")
    shown = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents/{document.pk}").json()
    assert shown["rendition"]["status"] == "unavailable" and shown["rendition"]["sha256"] is None
    document.refresh_from_db()
    assert document.status == Document.Status.READY and document.error == ""
    hits = lawyer_api.get(f"/api/v1/cases/{case.pk}/search?q=tenant").json()["items"]
    assert [hit["document_id"] for hit in hits] == [document.pk]
    refused = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "V1", "prefix": "ACME", "document_ids": [document.pk]},
        content_type=JSON,
    )
    assert refused.status_code == 400
    assert "cannot be produced: rendering unavailable" in refused.json()["detail"]
    assert not Production.objects.exists() and not BatesPage.objects.exists()


@pytest.mark.slow
def test_a_word_file_libreoffice_cannot_read_fails_rendering_with_the_reason(
    lawyer: User, case: Case, run_jobs: Callable[[], None], tmp_path: Path
) -> None:
    """Intake refuses damaged files; one LibreOffice still cannot read (here: read at ingest,
    then found broken by the renderer) fails its rendering, not the document."""
    if shutil.which("soffice") is None:
        pytest.skip("LibreOffice is not installed (make system-deps installs it)")
    broken = unreadable_word_file(tmp_path / "broken.docx")
    with storage.blob_receive(source=broken.open("rb"), max_bytes=10**8) as received:
        received.commit()
    blob, _ = Blob.objects.get_or_create(sha256=received.sha256, defaults={"size": received.size})
    with transaction.atomic():
        document = Document.objects.create(
            case=case,
            blob=blob,
            filename="broken.docx",
            kind=Document.Kind.WORD,
            content_type="application/octet-stream",
            origin=Document.Origin.CLIENT,
            status=Document.Status.READY,
            page_count=1,
            pages_done=1,
            uploaded_by=lawyer,
        )
        rendition_services.rendition_queue(document)

    run_jobs()

    rendition = Rendition.objects.get(document=document)
    assert rendition.status == Rendition.Status.FAILED
    assert rendition.label.startswith("rendering failed: LibreOffice could not convert the file")
    document.refresh_from_db()
    assert document.status == Document.Status.READY


def test_a_production_waits_for_renditions(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    (document,) = _post(lawyer_api, case, upload("notes.txt", LONG_TEXT.encode()))
    run_jobs()
    Rendition.objects.filter(document_id=document["id"]).update(
        status=Rendition.Status.QUEUED, output=None, page_count=0
    )

    refused = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "V1", "prefix": "ACME", "document_ids": [document["id"]]},
        content_type=JSON,
    )

    assert refused.status_code == 400
    assert refused.json()["detail"] == (
        "notes.txt is not rendered to PDF yet (queued); produce it once its rendering is ready."
    )


def _parse_dat(raw: bytes) -> list[dict[str, str]]:
    rows = [line for line in raw.decode("utf-8-sig").split("\r\n") if line]
    fields = [f.strip(QUOTE) for f in rows[0].split(SEP)]
    return [
        dict(zip(fields, (v.strip(QUOTE) for v in row.split(SEP)), strict=True)) for row in rows[1:]
    ]


@pytest.mark.slow
def test_an_email_and_its_text_attachment_produce_as_a_family_of_rendered_pages(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    (message,) = _post(lawyer_api, case, upload("mail.eml", _email_with_text_attachment()))
    run_jobs()
    listed = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents").json()["items"]
    attachment = next(d for d in listed if d["parent_id"] == message["id"])
    pages = {
        r.document_id: r.page_count for r in Rendition.objects.filter(status=Rendition.Status.READY)
    }
    assert pages[message["id"]] == 1 and pages[attachment["id"]] >= 2

    created = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "V1", "prefix": "ACME", "document_ids": [message["id"], attachment["id"]]},
        content_type=JSON,
    )
    assert created.status_code == 201, created.content
    run_jobs()
    production = Production.objects.get(pk=created.json()["id"])
    total = pages[message["id"]] + pages[attachment["id"]]
    assert production.status == Production.Status.READY, production.error
    assert production.page_count == total == production.last_number - production.first_number + 1
    assert production.output is not None
    with pymupdf.open(storage.blob_path(production.output.sha256)) as volume:
        assert volume.page_count == total
        assert "From: Client" in volume[0].get_text()
        assert "ACME000002" in volume[1].get_text() and "Line 0 of" in volume[1].get_text()
    assert production.volume_document is not None
    volume_pages = list(production.volume_document.pages.order_by("number"))
    assert [p.number for p in volume_pages] == list(range(1, total + 1))
    assert "Line 129" in volume_pages[-1].text and "Line 0 of" not in volume_pages[-1].text

    base = f"/api/v1/cases/{case.pk}/productions/{production.pk}/exports"
    export = lawyer_api.post(base, {"encoding": "utf-8", "image_dpi": 100}, content_type=JSON)
    run_jobs()
    zipped = lawyer_api.get(f"{base}/{export.json()['id']}/zip")
    archive = zipfile.ZipFile(io.BytesIO(b"".join(zipped.streaming_content)))
    rows = _parse_dat(archive.read("V1/V1.dat"))
    last = f"ACME{total:06d}"
    assert [(r["BEGBATES"], r["ENDBATES"]) for r in rows] == [
        ("ACME000001", "ACME000001"),
        ("ACME000002", last),
    ]
    assert {(r["BEGATTACH"], r["ENDATTACH"]) for r in rows} == {("ACME000001", last)}
    assert [r["PGCOUNT"] for r in rows] == ["1", str(total - 1)]
    opt = archive.read("V1/V1.opt").decode("utf-8-sig").split("\r\n")
    assert len([line for line in opt if line]) == total


def test_the_render_job_refuses_a_malformed_argument_and_ignores_a_missing_document() -> None:
    from apps.documents import tasks

    with pytest.raises(DomainError, match="document_id must be int"):
        tasks.rendition_render_task(document_id="1; DROP TABLE")  # type: ignore[arg-type]
    rendition_services.rendition_render(document_id=10**9)  # nothing to do, no error


def test_stamping_fails_with_the_reason_when_a_rendition_is_gone(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    (document,) = _post(lawyer_api, case, upload("notes.txt", LONG_TEXT.encode()))
    run_jobs()
    created = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "V1", "prefix": "ACME", "document_ids": [document["id"]]},
        content_type=JSON,
    )
    assert created.status_code == 201
    Rendition.objects.filter(document_id=document["id"]).update(status=Rendition.Status.FAILED)

    run_jobs()

    production = Production.objects.get(pk=created.json()["id"])
    assert production.status == Production.Status.FAILED
    assert production.error == "notes.txt is not rendered to PDF yet."
    assert production.output is None and production.volume_document is None


def test_render_missing_queues_documents_read_before_rendering_and_retries_on_request(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    old, failed = _post(
        lawyer_api, case, upload("old.txt", b"read long ago"), upload("f.txt", b"failed once")
    )
    run_jobs()
    Rendition.objects.filter(document_id=old["id"]).delete()
    Rendition.objects.filter(document_id=failed["id"]).update(
        status=Rendition.Status.FAILED, error="x", output=None, page_count=0
    )
    out = io.StringIO()

    call_command("render_missing", stdout=out)
    run_jobs()

    assert out.getvalue().strip() == "Queued 1 rendering job(s) on the cpu queue."
    assert Rendition.objects.get(document_id=old["id"]).status == Rendition.Status.READY
    assert Rendition.objects.get(document_id=failed["id"]).status == Rendition.Status.FAILED
    call_command("render_missing", "--retry", stdout=out)
    run_jobs()
    assert Rendition.objects.get(document_id=failed["id"]).status == Rendition.Status.READY
