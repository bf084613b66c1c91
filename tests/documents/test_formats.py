"""Requirement 1's formats: images (PNG, JPEG, multi-page TIFF), plain text in the encodings
people really send, and e-mail with attachments; each file keeps the origin chosen at upload."""

import io
from collections.abc import Callable
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.test import Client
from PIL import Image, ImageSequence

from apps.cases.models import Case
from apps.documents import storage
from apps.documents.models import Blob, Derivation, Document, Page
from tests.documents.files import REAL, png_of, real, tiff_of, upload

pytestmark = pytest.mark.django_db(databases="__all__")


def flat(text: str) -> str:
    return " ".join(text.split()).lower()


def assert_ocr_words(page: Page) -> None:
    assert page.source == "ocr"
    assert page.ocr_confidence is not None and page.ocr_confidence > 70
    assert page.needs_review is False
    assert page.words and all(len(w) == 6 and isinstance(w[0], str) for w in page.words)


def assert_store_matches_rows(root: Path) -> None:
    tmp = root / "tmp"
    # Each process's (empty) temporary folder may stay; no file may.
    assert not tmp.exists() or [p for p in tmp.rglob("*") if not p.is_dir()] == []
    stored = {p for p in root.rglob("*") if p.is_file() and tmp not in p.parents}
    assert stored == {storage.blob_path(s) for s in Blob.objects.values_list("sha256", flat=True)}


# --- Images ------------------------------------------------------------------------------------


def jpeg_of(source: str, dpi: int) -> bytes:
    with Image.open(io.BytesIO(png_of(source, dpi=dpi))) as image:
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, format="JPEG", quality=90, dpi=(dpi, dpi))
        return buffer.getvalue()


@pytest.mark.slow
def test_png_jpeg_and_multipage_tiff_are_ocred_page_by_page(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    tiff = tiff_of("ca2_docketing-notice_17-3510.pdf", pages=2, dpi=200)
    with Image.open(io.BytesIO(tiff)) as check:
        assert sum(1 for _ in ImageSequence.Iterator(check)) == 2

    response = post_files(
        lawyer_api,
        case,
        upload("order.png", png_of("ca10_order_in-re-liebowitz_21-800.pdf", dpi=200)),
        upload("judgment.jpg", jpeg_of("cacd_judgment_regalado-v-sullivan_2-18-cv-10166.pdf", 200)),
        upload("notice.tif", tiff),
    )
    assert response.status_code == 201 and response.json()["created"] == 3
    run_jobs()

    png = Document.objects.get(filename="order.png")
    jpeg = Document.objects.get(filename="judgment.jpg")
    tif = Document.objects.get(filename="notice.tif")
    assert [(d.kind, d.content_type, d.status) for d in (png, jpeg, tif)] == [
        ("image", "image/png", "ready"),
        ("image", "image/jpeg", "ready"),
        ("image", "image/tiff", "ready"),
    ]
    assert (png.page_count, jpeg.page_count, tif.page_count, tif.pages_done) == (1, 1, 2, 2)

    png_page = png.pages.get()
    assert_ocr_words(png_page)
    assert "liebowitz" in flat(png_page.text) and "tenth circuit" in flat(png_page.text)

    jpeg_page = jpeg.pages.get()
    assert_ocr_words(jpeg_page)
    assert "regalado" in flat(jpeg_page.text) and "judgment" in flat(jpeg_page.text)
    assert jpeg_page.ocr_dpi == 200

    first, second = tif.pages.order_by("number")
    for page in (first, second):
        assert_ocr_words(page)
        assert page.ocr_dpi == 200  # boxes are in the frame's own pixels
    assert "thurgood marshall" in flat(first.text)
    assert "appellate filer account" in flat(second.text)
    assert "thurgood marshall" not in flat(second.text)


def test_tiff_frames_are_served_as_page_images_and_there_is_no_third(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    # Two small blank frames: the page images are checked here, not the OCR.
    frames = [Image.new("L", (300, 400), 255), Image.new("L", (400, 300), 255)]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="TIFF", save_all=True, append_images=frames[1:], dpi=(100, 100))
    post_files(lawyer_api, case, upload("blank.tiff", buffer.getvalue()))
    run_jobs()

    document = Document.objects.get()
    base = f"/api/v1/cases/{case.pk}/documents/{document.pk}/pages"
    assert document.page_count == 2
    sizes = []
    for number in (1, 2):
        response = lawyer_api.get(f"{base}/{number}/image", {"dpi": 100})
        assert response.status_code == 200 and response["Content-Type"] == "image/png"
        with Image.open(io.BytesIO(response.content)) as image:
            sizes.append(image.size)
    assert sizes == [(300, 400), (400, 300)]
    assert lawyer_api.get(f"{base}/3/image").status_code == 404
    # Blank frames have no text: kept as pages and flagged, not dropped.
    assert [(p.source, p.needs_review) for p in document.pages.order_by("number")] == [
        ("none", True),
        ("none", True),
    ]


# --- Plain text ---------------------------------------------------------------------------------

SAMPLE = "Müller v. Café “Zürich” — damages of €1,250 under § 3.\nSecond line: naïve façade."


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("utf8.txt", SAMPLE.encode("utf-8")),
        ("utf8-bom.txt", b"\xef\xbb\xbf" + SAMPLE.encode("utf-8")),
        ("windows.txt", SAMPLE.encode("cp1252")),
    ],
    ids=["utf-8", "utf-8-with-bom", "cp1252"],
)
def test_plain_text_is_decoded_exactly_whatever_the_encoding(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
    name: str,
    data: bytes,
) -> None:
    post_files(lawyer_api, case, upload(name, data))
    run_jobs()

    document = Document.objects.get()
    assert (document.kind, document.content_type, document.page_count) == ("text", "text/plain", 1)
    page = document.pages.get()
    assert page.source == "text_file"
    assert page.text == SAMPLE  # no BOM, no mojibake
    assert page.needs_review is False
    assert storage.blob_path(document.blob.sha256).read_bytes() == data  # original untouched


def test_text_with_replacement_characters_is_flagged_for_review(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    damaged = "38 U.S.C. \ufffd\ufffd 1155, 5107(b)".encode()
    post_files(lawyer_api, case, upload("damaged.txt", damaged))
    run_jobs()

    page = Page.objects.get()
    assert page.text == "38 U.S.C. \ufffd\ufffd 1155, 5107(b)"
    assert page.needs_review is True


# --- E-mail -------------------------------------------------------------------------------------


def build_email(attachments: list[tuple[str, bytes, str]], body: str = "") -> bytes:
    message = EmailMessage()
    message["From"] = "Opposing Counsel <counsel@widget.test>"
    message["To"] = "Laura Lawyer <lawyer@firm.test>"
    message["Subject"] = "Production of the Liebowitz order"
    message["Date"] = format_datetime(datetime(2026, 3, 2, 9, 30, tzinfo=UTC))
    message.set_content(body or "Please find the order and my notes attached.\nRegards")
    for filename, payload, mime in attachments:
        maintype, subtype = mime.split("/")
        message.add_attachment(payload, maintype=maintype, subtype=subtype, filename=filename)
    return message.as_bytes()


NOTES = b"Notes on the order: sanctions were imposed in the district court.\n"


def test_email_becomes_a_document_and_each_attachment_a_child_document(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    order = real("ca10_order_in-re-liebowitz_21-800.pdf")
    eml = build_email([("order.pdf", order, "application/pdf"), ("notes.txt", NOTES, "text/plain")])

    response = post_files(lawyer_api, case, upload("message.eml", eml), origin="opposing")
    assert response.status_code == 201
    (result,) = response.json()["results"]
    assert result["status"] == "created" and result["notes"] == []
    assert result["document"]["kind"] == "email"

    run_jobs()

    message = Document.objects.get(filename="message.eml")
    children = {
        d.filename: d
        for d in Document.objects.filter(
            derived_from__parent=message, derived_from__transform="email-attachment"
        )
    }
    assert set(children) == {"order.pdf", "notes.txt"}
    assert Document.objects.count() == 3
    everything = [message, *children.values()]
    assert {d.origin for d in everything} == {"opposing"}
    assert {d.status for d in everything} == {"ready"}
    assert (message.kind, message.content_type) == ("email", "message/rfc822")
    assert not message.derived_from.exists()

    text = message.pages.get().text
    assert "Subject: Production of the Liebowitz order" in text
    assert "From: Opposing Counsel <counsel@widget.test>" in text
    assert "Please find the order and my notes attached." in text

    pdf = children["order.pdf"]
    assert (pdf.kind, pdf.page_count) == ("pdf", 1)
    assert storage.blob_path(pdf.blob.sha256).read_bytes() == order  # attachment stored as sent
    pdf_page = pdf.pages.get()
    assert pdf_page.source == "text_layer" and "RICHARD P. LIEBOWITZ" in pdf_page.text
    notes = children["notes.txt"]
    assert notes.kind == "text" and notes.pages.get().text == NOTES.decode().strip()

    listed = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents").json()["items"]
    parents = {d["filename"]: d["parent_id"] for d in listed}
    assert parents == {"message.eml": None, "order.pdf": message.pk, "notes.txt": message.pk}
    assert_store_matches_rows(blob_root)


def test_corrupt_attachment_is_skipped_with_a_note_and_the_rest_goes_in(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    broken = b"%PDF-1.7\n" + bytes(range(256)) * 8
    eml = build_email(
        [
            ("broken.pdf", broken, "application/pdf"),
            ("../../etc/notes.txt", NOTES, "text/plain"),
        ]
    )

    response = post_files(lawyer_api, case, upload("with-broken.eml", eml))
    run_jobs()

    (result,) = response.json()["results"]
    assert result["status"] == "created"
    assert result["notes"] == [
        "Attachment broken.pdf was not added: The PDF is damaged or truncated and cannot be opened."
    ]
    assert sorted(Document.objects.values_list("filename", "status")) == [
        ("notes.txt", "ready"),
        ("with-broken.eml", "ready"),
    ]
    notes = Document.objects.get(filename="notes.txt")
    assert list(notes.derived_from.values_list("parent_id", "transform")) == [
        (result["document"]["id"], "email-attachment")
    ]
    assert_store_matches_rows(blob_root)


def test_attachment_already_in_the_case_is_reported_not_stored_again(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
) -> None:
    post_files(lawyer_api, case, upload("notes-first.txt", NOTES))

    response = post_files(
        lawyer_api, case, upload("reply.eml", build_email([("notes.txt", NOTES, "text/plain")]))
    )

    (result,) = response.json()["results"]
    assert result["notes"] == ["Attachment notes.txt is already in this case."]
    assert Document.objects.count() == 2
    assert not Derivation.objects.exists()


def test_email_is_recognised_by_its_headers_even_without_the_eml_extension(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    response = post_files(lawyer_api, case, upload("forwarded.msg.txt", build_email([])))

    assert response.json()["results"][0]["document"]["kind"] == "email"


# --- Origins -----------------------------------------------------------------------------------


@pytest.mark.parametrize("origin", [choice.value for choice in Document.PERSON_ORIGINS])
def test_origin_is_stored_as_chosen(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    origin: str,
) -> None:
    response = post_files(
        lawyer_api,
        case,
        upload("a.txt", b"first " + origin.encode()),
        upload("b.pdf", real("ca7_order_in-re-fedex-ground_17-2400.pdf")),
        origin=origin,
    )

    assert response.status_code == 201
    assert [r["document"]["origin"] for r in response.json()["results"]] == [origin, origin]
    assert set(Document.objects.values_list("origin", flat=True)) == {origin}
    listed = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents").json()["items"]
    assert {d["origin"] for d in listed} == {origin}


def test_a_pdf_original_is_stored_once_byte_for_byte_and_downloadable(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    data = (REAL / "cacd_civil-minutes_lewis-v-travertine_cv17-00016.pdf").read_bytes()
    response = post_files(lawyer_api, case, upload("minutes.pdf", data))
    document = Document.objects.get(pk=response.json()["results"][0]["document"]["id"])

    path = storage.blob_path(document.blob.sha256)
    assert path.read_bytes() == data and not path.stat().st_mode & 0o222  # read-only
    download = lawyer_api.get(f"/api/v1/cases/{case.pk}/documents/{document.pk}/original")
    assert b"".join(download.streaming_content) == data  # type: ignore[attr-defined]
    with pymupdf.open(stream=data) as check:
        assert document.page_count == check.page_count
