"""Bad files at the upload edge and bad jobs in the worker.

Every bad file gets its own readable error in `results`, the good files of the same upload still
go in, nothing half-written stays behind (no rows, no temporaries, no stray originals), and the
worker carries on with the next job.
"""

import io
import re
import struct
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from PIL import Image
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import intake, services, storage
from apps.documents.models import Blob, Document, Page
from apps.documents.tasks import document_extract_text_task
from lexweb.errors import DomainError
from tests.documents.files import png_of, real, upload

pytestmark = pytest.mark.django_db(databases="__all__")

GOOD_NOTE = b"Memo to file: the estoppel argument is preserved for appeal.\n"


# --- Building bad files ----------------------------------------------------------------------


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb_png(width: int, height: int) -> bytes:
    """A valid 1-bit PNG of huge dimensions that stays small on disk (all rows are blank)."""
    row = b"\x00" * (1 + (width + 7) // 8)  # filter byte + packed pixels
    packer = zlib.compressobj(9)
    idat = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )


def gray_png(width: int, height: int) -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (width, height), 255).save(buffer, format="PNG")
    return buffer.getvalue()


def encrypted_pdf(source: str, **passwords: str) -> bytes:
    with pymupdf.open(stream=real(source), filetype="pdf") as document:
        return document.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, **passwords)


def half_of(source: str) -> bytes:
    data = real(source)
    return data[: len(data) // 2]


EXE_LIKE = b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + bytes(range(256)) * 8


# --- Checks ------------------------------------------------------------------------------------


def assert_store_matches_rows(root: Path) -> None:
    """The blob root holds exactly one file per Blob row, at its SHA-256 path, and tmp/ is
    empty: nothing half-written remains."""
    tmp = root / "tmp"
    # Each process's (empty) temporary folder may stay; no file may.
    assert not tmp.exists() or [p for p in tmp.rglob("*") if not p.is_dir()] == []
    stored = {p for p in root.rglob("*") if p.is_file() and tmp not in p.parents}
    shas = Blob.objects.values_list("sha256", flat=True)
    assert stored == {storage.blob_path(sha) for sha in shas}
    assert len(stored) == Blob.objects.count()


def last_job_id() -> int:
    """Job rows are not flushed between tests: count only those created after this id."""
    return ProcrastinateJob.objects.order_by("-id").values_list("id", flat=True).first() or 0


def job_statuses(since: int) -> list[str]:
    """The ingest jobs' statuses since `since` (a text file's rendering to PDF follows its
    ingest as a job of its own: tests/documents/test_render_jobs.py)."""
    return list(
        ProcrastinateJob.objects.filter(id__gt=since, task_name="documents.extract_text")
        .order_by("id")
        .values_list("status", flat=True)
    )


def upload_with_a_good_note(
    post_files: Callable[..., Any],
    client: Client,
    case: Case,
    bad: SimpleUploadedFile,
) -> dict[str, Any]:
    """Upload the bad file between two good ones; return the API body."""
    response = post_files(
        client, case, upload("before.txt", GOOD_NOTE), bad, upload("after.txt", GOOD_NOTE + b"2")
    )
    assert response.status_code == 201, response.content
    body: dict[str, Any] = response.json()
    assert [r["status"] for r in body["results"]] == ["created", "error", "created"]
    assert (body["created"], body["errors"], body["duplicates"]) == (2, 1, 0)
    return body


BAD_FILES = [
    pytest.param(
        "corrupt.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 16, "damaged", id="corrupt-pdf"
    ),
    pytest.param(
        "truncated.pdf",
        half_of("ca5_st-pierre-v-standard-ins_21-50498.pdf"),
        "truncated",
        id="truncated-pdf-that-mupdf-can-half-repair",
    ),
    pytest.param(
        "truncated-small.pdf",
        half_of("ca10_order_in-re-liebowitz_21-800.pdf"),
        "truncated",
        id="truncated-pdf-with-no-pages-left",
    ),
    pytest.param(
        "truncated-mixed.pdf",
        half_of("ca3_doc42_21-1298_mixed-text-image_p1.pdf"),
        "truncated",
        id="truncated-pdf-that-will-not-open",
    ),
    pytest.param("empty.pdf", b"", "empty", id="zero-bytes"),
    pytest.param(
        "locked.pdf",
        encrypted_pdf("ca7_order_in-re-fedex-ground_17-2400.pdf", user_pw="x", owner_pw="y"),
        "password",
        id="password-protected-pdf",
    ),
    pytest.param("setup.pdf", EXE_LIKE, "not supported", id="binary-named-pdf"),
    pytest.param("bomb.png", bomb_png(30_000, 30_000), "pixels", id="decompression-bomb-png"),
    pytest.param("broken.png", gray_png(200, 100)[:60], "damaged", id="truncated-png"),
]


@pytest.mark.parametrize(("name", "data", "phrase"), BAD_FILES)
def test_bad_file_gets_its_own_error_and_the_rest_of_the_upload_goes_in(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
    name: str,
    data: bytes,
    phrase: str,
) -> None:
    since = last_job_id()
    body = upload_with_a_good_note(post_files, lawyer_api, case, upload(name, data))

    failed = body["results"][1]
    assert failed["filename"] == name
    assert failed["document"] is None
    assert phrase in failed["error"].lower()
    assert failed["error"].endswith(".")
    assert Document.objects.filter(filename=name).count() == 0
    assert Document.objects.count() == Blob.objects.count() == 2
    assert_store_matches_rows(blob_root)

    run_jobs()

    assert list(Document.objects.values_list("status", flat=True)) == ["ready", "ready"]
    assert Page.objects.count() == 2
    assert job_statuses(since) == ["succeeded", "succeeded"]
    assert_store_matches_rows(blob_root)


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_image_over_the_pixel_limit_but_under_pillows_own_bomb_check_is_refused(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    settings: Any,
) -> None:
    # Pillow only warns between 1x and 2x its limit; our own check must still refuse.
    settings.LEXWEB_MAX_IMAGE_PIXELS = 1_000_000
    body = upload_with_a_good_note(
        post_files, lawyer_api, case, upload("large.png", gray_png(1_500, 1_000))
    )

    assert "1,000,000 pixels" in body["results"][1]["error"]
    assert_store_matches_rows(blob_root)


def test_pdf_with_more_pages_than_the_limit_is_refused(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    settings: Any,
) -> None:
    settings.LEXWEB_MAX_PDF_PAGES = 4
    body = upload_with_a_good_note(
        post_files,
        lawyer_api,
        case,
        upload("long.pdf", real("azd_order_bard-ivc-mdl_15-02641.pdf")),
    )

    assert "has 5 pages; the limit is 4" in body["results"][1]["error"]
    assert_store_matches_rows(blob_root)


def test_multipage_tiff_with_more_frames_than_the_limit_is_refused(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    settings: Any,
) -> None:
    settings.LEXWEB_MAX_PDF_PAGES = 2
    frames = [Image.new("L", (50, 50), 255) for _ in range(3)]
    buffer = io.BytesIO()
    frames[0].save(buffer, format="TIFF", save_all=True, append_images=frames[1:])

    body = upload_with_a_good_note(
        post_files, lawyer_api, case, upload("three.tif", buffer.getvalue())
    )

    assert "3 pages; the limit is 2" in body["results"][1]["error"]
    assert_store_matches_rows(blob_root)


def test_file_over_the_size_limit_is_refused_and_its_temporary_removed(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    settings: Any,
) -> None:
    settings.LEXWEB_MAX_UPLOAD_BYTES = 100_000
    body = upload_with_a_good_note(
        post_files,
        lawyer_api,
        case,
        upload("big.pdf", real("azd_order_bard-ivc-mdl_15-02641.pdf")),
    )

    assert "larger than 100,000 bytes" in body["results"][1]["error"]
    assert_store_matches_rows(blob_root)


def test_upload_where_every_file_fails_is_a_400_with_per_file_errors(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    since = last_job_id()
    response = post_files(
        lawyer_api, case, upload("a.pdf", b""), upload("b.pdf", b"%PDF-1.4 nothing")
    )

    assert response.status_code == 400
    body = response.json()
    assert (body["created"], body["errors"]) == (0, 2)
    assert [r["status"] for r in body["results"]] == ["error", "error"]
    assert all(r["error"] for r in body["results"])
    assert not Document.objects.exists() and job_statuses(since) == []
    assert_store_matches_rows(blob_root)


def test_permissions_only_pdf_without_an_open_password_is_ingested(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    data = encrypted_pdf(
        "ca7_order_in-re-fedex-ground_17-2400.pdf", owner_pw="y", permissions=pymupdf.PDF_PERM_PRINT
    )

    response = post_files(lawyer_api, case, upload("print-only.pdf", data))
    run_jobs()

    assert response.status_code == 201
    page = Page.objects.get()
    assert page.source == "text_layer"
    assert "FEDEX GROUND PACKAGE SYSTEM" in page.text


def test_pdf_with_a_broken_xref_that_ends_properly_is_repaired_and_ingested(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    """Only truncation is refused: a complete file with a wrong xref offset is common and
    every reader repairs it."""
    data = real("ca7_order_in-re-fedex-ground_17-2400.pdf")
    offset = re.search(rb"startxref\s+(\d+)", data)
    assert offset is not None
    broken = data[: offset.start(1)] + b"9" * len(offset.group(1)) + data[offset.end(1) :]
    with pymupdf.open(stream=broken, filetype="pdf") as check:
        assert check.is_repaired

    response = post_files(lawyer_api, case, upload("repaired.pdf", broken))
    run_jobs()

    assert response.status_code == 201
    page = Page.objects.get()
    assert page.source == "text_layer" and "FEDEX GROUND PACKAGE SYSTEM" in page.text


# --- Lying extensions --------------------------------------------------------------------------


@pytest.mark.slow
def test_extensions_are_ignored_content_decides(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    pdf = real("ca10_order_in-re-liebowitz_21-800.pdf")
    png = png_of("cacd_civil-minutes_lewis-v-travertine_cv17-00016.pdf", dpi=150)

    response = post_files(
        lawyer_api,
        case,
        upload("really-a-pdf.png", pdf, "image/png"),
        upload("really-a-png.pdf", png, "application/pdf"),
        upload("setup.pdf", EXE_LIKE, "application/pdf"),
    )
    run_jobs()

    body = response.json()
    assert [r["status"] for r in body["results"]] == ["created", "created", "error"]
    assert "not supported" in body["results"][2]["error"]
    as_pdf = Document.objects.get(filename="really-a-pdf.png")
    as_png = Document.objects.get(filename="really-a-png.pdf")
    assert (as_pdf.kind, as_pdf.content_type, as_pdf.status) == ("pdf", "application/pdf", "ready")
    assert (as_png.kind, as_png.content_type, as_png.status) == ("image", "image/png", "ready")
    pdf_page = as_pdf.pages.get()
    assert pdf_page.source == "text_layer" and "LIEBOWITZ" in pdf_page.text
    png_page = as_png.pages.get()
    assert png_page.source == "ocr"
    assert "TRAVERTINE" in png_page.text.upper()
    assert Document.objects.count() == 2
    assert_store_matches_rows(blob_root)


# --- Whole-request refusals ----------------------------------------------------------------


def test_more_files_than_the_limit_refuses_the_whole_request_and_stores_nothing(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    settings: Any,
) -> None:
    settings.LEXWEB_MAX_FILES_PER_UPLOAD = 3
    since = last_job_id()
    files = [upload(f"note-{i}.txt", GOOD_NOTE + bytes([65 + i])) for i in range(4)]

    response = post_files(lawyer_api, case, *files)

    assert response.status_code == 400
    assert response.json() == {
        "detail": "At most 3 files at once; upload the rest next.",
        "code": "invalid",
    }
    assert not Document.objects.exists() and job_statuses(since) == []
    assert_store_matches_rows(blob_root)


@pytest.mark.slow
def test_the_configured_file_limit_is_what_the_server_accepts(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any], settings: Any
) -> None:
    """Django parses multipart bodies with its own file-count cap (100 by default); the
    documented lexweb limit must be the one that applies, and past it the answer is JSON."""
    limit = settings.LEXWEB_MAX_FILES_PER_UPLOAD  # 200 unless configured otherwise
    files = [upload(f"n{i}.txt", b"note %d" % i) for i in range(limit)]

    accepted = post_files(lawyer_api, case, *files)

    assert accepted.status_code == 201, accepted.content[:200]
    assert accepted.json()["created"] == limit

    extra = [upload(f"m{i}.txt", b"more %d" % i) for i in range(limit + 1)]
    refused = post_files(lawyer_api, case, *extra)

    assert refused.status_code == 400
    assert refused["Content-Type"].startswith("application/json")
    assert f"At most {limit} files" in refused.json()["detail"]
    assert Document.objects.count() == limit
    assert_store_matches_rows(blob_root)


def test_unknown_origin_is_refused_and_nothing_is_stored(
    lawyer_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    response = post_files(lawyer_api, case, upload("a.txt", GOOD_NOTE), origin="the-internet")

    assert response.status_code == 422
    body = response.json()
    assert body["code"] == "invalid" and ["form", "origin"] in [e["loc"] for e in body["errors"]]
    assert not Document.objects.exists() and not Blob.objects.exists()
    assert_store_matches_rows(blob_root)


def test_unknown_origin_is_refused_by_the_service_too(
    lawyer: User, case: Case, blob_root: Path
) -> None:
    with pytest.raises(DomainError, match="Unknown origin 'rumour'"):
        services.documents_upload(
            case=case,
            uploaded_by=lawyer,
            files=[("a.txt", io.BytesIO(GOOD_NOTE))],
            origin="rumour",
        )

    assert not Document.objects.exists()
    assert_store_matches_rows(blob_root)


def test_no_files_at_all_is_refused(lawyer_api: Client, case: Case, blob_root: Path) -> None:
    response = lawyer_api.post(f"/api/v1/cases/{case.pk}/documents", {"origin": "client"})

    assert response.status_code == 422
    body = response.json()
    assert ["file", "files"] in [e["loc"] for e in body["errors"]]
    assert not Document.objects.exists()
    assert_store_matches_rows(blob_root)


def test_outsider_upload_is_404_and_nothing_is_stored(
    outsider_api: Client, case: Case, blob_root: Path, post_files: Callable[..., Any]
) -> None:
    since = last_job_id()
    response = post_files(outsider_api, case, upload("a.txt", GOOD_NOTE))

    assert response.status_code == 404
    assert not Document.objects.exists() and job_statuses(since) == []
    assert_store_matches_rows(blob_root)


# --- Hostile names -------------------------------------------------------------------------


HOSTILE_NAMES = [
    "../../etc/passwd",
    "a/b\\c.pdf",
    "..\\..\\windows\\system32\\config.txt",
    "bad\x01\x07\x1bname\x00.txt",
    "line\nbreak\r.txt",
    "\u202etxt.exe",
    "é" * 5_000 + ".txt",
    "ß" * 5_000,
    "..",
    ".",
    "",
    "   ",
    "/",
]


def assert_clean_display_name(name: str) -> None:
    assert name
    assert "/" not in name and "\\" not in name
    assert all(ch.isprintable() for ch in name)
    assert name not in {".", ".."}
    assert len(name) <= intake.MAX_FILENAME == 200


@pytest.mark.parametrize("hostile", HOSTILE_NAMES, ids=range(len(HOSTILE_NAMES)))
def test_hostile_name_is_cleaned_for_display_and_never_reaches_a_path(
    lawyer: User, case: Case, blob_root: Path, hostile: str
) -> None:
    """Names arrive unfiltered at the service from e-mail attachments and other callers."""
    data = GOOD_NOTE + hostile.encode().hex().encode()

    outcome = services.document_upload(
        case=case, uploaded_by=lawyer, filename=hostile, source=io.BytesIO(data), origin="client"
    )

    assert outcome.status == "created", outcome.error
    document = Document.objects.get()
    assert document.filename == outcome.filename
    assert_clean_display_name(document.filename)
    stored = storage.blob_path(document.blob.sha256)
    assert stored.is_file() and stored.read_bytes() == data
    assert stored.relative_to(blob_root).parts == (
        document.blob.sha256[:2],
        document.blob.sha256[2:4],
        document.blob.sha256,
    )
    assert_store_matches_rows(blob_root)


def test_long_name_keeps_its_extension_within_the_limit() -> None:
    cleaned = intake.clean_filename("é" * 5_000 + ".pdf")

    assert len(cleaned) <= 200
    assert cleaned.endswith("….pdf")
    assert cleaned.startswith("éé")


def _multipart(boundary: str, names: list[str]) -> bytes:
    parts = [
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="files"; '
            f'filename="{name}"\r\nContent-Type: text/plain\r\n\r\n'
        ).encode()
        + b"body of file %d\r\n" % i
        for i, name in enumerate(names)
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="origin"\r\n\r\ncourt\r\n'
        f"--{boundary}--\r\n".encode()
    )
    return b"".join(parts)


def test_hostile_names_sent_over_http_are_stored_with_clean_names(
    lawyer_api: Client, case: Case, blob_root: Path
) -> None:
    # Django's test client strips paths itself, so the body is written by hand.
    names = [
        "../../etc/passwd",
        "a/b\\c.pdf",
        "bad\x01\x07name\x00.txt",
        "\u202egnp.exe",
        "ü" * 300 + ".txt",
        "plain.txt",
    ]
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        _multipart("xYzBoundary", names),
        content_type="multipart/form-data; boundary=xYzBoundary",
    )

    assert response.status_code == 201, response.content
    results = response.json()["results"]
    assert [r["status"] for r in results] == ["created"] * len(names)
    shown = [r["filename"] for r in results]
    assert shown[:4] == ["passwd", "c.pdf", "badname.txt", "gnp.exe"]
    assert shown[5] == "plain.txt"
    for name in shown:
        assert_clean_display_name(name)
    assert sorted(Document.objects.values_list("filename", flat=True)) == sorted(shown)
    assert set(Document.objects.values_list("origin", flat=True)) == {"court"}
    assert_store_matches_rows(blob_root)


def test_unreadable_multipart_body_gets_the_json_error_shape(
    lawyer_api: Client, case: Case, blob_root: Path
) -> None:
    # A 5,000-character name does not fit Django's 1 KB limit on a part's headers.
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        _multipart("xYzBoundary", ["é" * 5_000 + ".txt"]),
        content_type="multipart/form-data; boundary=xYzBoundary",
    )

    assert response.status_code == 400
    body = response.json()
    assert set(body) == {"detail", "code"} and body["detail"]
    assert not Document.objects.exists()
    assert_store_matches_rows(blob_root)


# --- Jobs that cannot do their work --------------------------------------------------------


def test_job_whose_original_vanished_fails_cleanly_and_the_next_job_runs(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    since = last_job_id()
    post_files(
        lawyer_api, case, upload("gone.pdf", real("ca7_order_in-re-fedex-ground_17-2400.pdf"))
    )
    post_files(lawyer_api, case, upload("note.txt", GOOD_NOTE))
    gone = Document.objects.get(filename="gone.pdf")
    storage.blob_path(gone.blob.sha256).unlink()

    run_jobs()

    gone.refresh_from_db()
    assert gone.status == "failed"
    assert "Reading the pages failed" in gone.error
    assert not gone.pages.exists()
    note = Document.objects.get(filename="note.txt")
    assert note.status == "ready" and note.pages.get().text == GOOD_NOTE.decode().strip()
    assert job_statuses(since) == ["failed", "succeeded"]


def test_job_whose_document_was_deleted_ends_quietly_and_the_next_job_runs(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    since = last_job_id()
    post_files(lawyer_api, case, upload("deleted.txt", b"soon deleted"))
    post_files(lawyer_api, case, upload("note.txt", GOOD_NOTE))
    deleted = Document.objects.get(filename="deleted.txt")
    deleted_id = deleted.pk
    deleted.delete()

    run_jobs()

    assert not Page.objects.filter(document_id=deleted_id).exists()
    assert Document.objects.get(filename="note.txt").status == "ready"
    assert job_statuses(since) == ["succeeded", "succeeded"]


def test_job_with_a_malformed_argument_fails_and_the_next_job_runs(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    post_files: Callable[..., Any],
    run_jobs: Callable[[], None],
) -> None:
    since = last_job_id()
    document_extract_text_task.defer(document_id="1; DROP TABLE documents_document")  # type: ignore[arg-type]
    post_files(lawyer_api, case, upload("note.txt", GOOD_NOTE))

    run_jobs()

    assert Document.objects.get().status == "ready"
    assert job_statuses(since) == ["failed", "succeeded"]
