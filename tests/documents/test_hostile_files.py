"""Hostile files are bounded (issue 8, requirement 7).

Page images are rendered within LEXWEB_MAX_RENDER_PIXELS, without a full-size copy of a huge
frame in a wider mode; a PDF page with a giant media box is scaled down, for page images and
for OCR; a TIFF's frames are bounded like a PDF's pages and checked for bombs one by one, and
an upload decodes at most LEXWEB_MAX_RENDER_PIXELS pixels of a file.
"""

import io
import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.conf import settings as django_settings
from django.test import Client
from PIL import Image, TiffImagePlugin

from apps.cases.models import Case
from apps.documents import extraction, storage
from apps.documents.models import Document, Page
from lexweb.errors import DomainError
from tests.conftest import database_url_for_tests
from tests.documents.files import upload

pytestmark = pytest.mark.django_db(databases="__all__")

HUGE = 14_000  # pixels a side: the 12 KB TIFF of the issue


# --- Building hostile files ------------------------------------------------------------------


@cache
def huge_bilevel_tiff() -> bytes:
    """14000 x 14000 bilevel pixels at 300 dpi in about 12 KB (Group 4 compresses blank rows
    to nothing): 196 million pixels, under LEXWEB_MAX_IMAGE_PIXELS."""
    buffer = io.BytesIO()
    Image.new("1", (HUGE, HUGE), 1).save(
        buffer, format="TIFF", compression="group4", dpi=(300, 300)
    )
    return buffer.getvalue()


@cache
def huge_grey_jpeg() -> bytes:
    buffer = io.BytesIO()
    Image.new("L", (HUGE, HUGE), 255).save(buffer, format="JPEG", quality=50, dpi=(300, 300))
    return buffer.getvalue()


def tiff(*sizes: tuple[int, int], mode: str = "L", compression: str = "tiff_lzw") -> bytes:
    """A multi-frame TIFF, one frame of each size, each with a dark bar so it is not blank."""
    frames = []
    for width, height in sizes:
        frame = Image.new(mode, (width, height), 255 if mode == "L" else 1)
        frame.paste(0, (width // 8, height // 8, width // 2, height // 4))
        frames.append(frame)
    buffer = io.BytesIO()
    frames[0].save(
        buffer, format="TIFF", save_all=True, append_images=frames[1:], compression=compression
    )
    return buffer.getvalue()


def with_damaged_frame(data: bytes, index: int) -> bytes:
    """`data` (an LZW TIFF) with the compressed strips of frame `index` overwritten: the
    header still reads, decoding that frame fails."""
    damaged = bytearray(data)
    with Image.open(io.BytesIO(data)) as image:
        assert isinstance(image, TiffImagePlugin.TiffImageFile)
        image.seek(index)
        strips = zip(image.tag_v2[273], image.tag_v2[279], strict=True)  # offsets, byte counts
        for offset, length in strips:
            damaged[offset : offset + length] = bytes((i * 37 + 11) % 256 for i in range(length))
    return bytes(damaged)


def pdf_page(width: float, height: float, *, text: str | None = None) -> bytes:
    with pymupdf.open() as document:
        page = document.new_page(width=width, height=height)
        if text:
            page.insert_text((72, 72), text, fontsize=11)
        return document.tobytes()


def pdf_with_image(width: int, height: int) -> bytes:
    """A one-page PDF showing one blank 1-bit image of `width` x `height` pixels, written by
    hand: its compressed stream is tiny whatever the size."""
    packer = zlib.compressobj(9)
    row = b"\xff" * ((width + 7) // 8)
    data = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    content = b"q 612 0 0 792 0 0 cm /Im0 Do Q"
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /XObject << /Im0 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
        b"/BitsPerComponent 1 /Filter /FlateDecode /Length %d >>\nstream\n%b\nendstream"
        % (width, height, len(data), data),
        b"<< /Length %d >>\nstream\n%b\nendstream" % (len(content), content),
    ]
    out = bytearray(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%b\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(b"\x89PNG\r\n\x1a\n")
    with Image.open(io.BytesIO(data)) as image:
        return image.size


# --- Helpers ---------------------------------------------------------------------------------


def upload_one(client: Client, case: Case, name: str, data: bytes) -> dict[str, Any]:
    response = client.post(
        f"/api/v1/cases/{case.pk}/documents", {"files": [upload(name, data)], "origin": "client"}
    )
    assert response.status_code in (201, 400), response.content
    (result,) = response.json()["results"]
    return dict(result)


def page_image(client: Client, case: Case, document_id: int, number: int, dpi: int) -> Any:
    return client.get(
        f"/api/v1/cases/{case.pk}/documents/{document_id}/pages/{number}/image?dpi={dpi}"
    )


def written(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


_MEASURE = """
import io, json, os, sys
from pathlib import Path
import django
django.setup()
from PIL import Image, TiffImagePlugin
from apps.documents import extraction

def status(key):
    with open("/proc/self/status") as handle:
        return next(int(l.split()[1]) for l in handle if l.startswith(key)) // 1024

with open("/proc/self/clear_refs", "w") as handle:  # 5: the peak (VmHWM) starts again from now
    handle.write("5")
before = status("VmRSS")
png = extraction.page_png(Path(sys.argv[1]), kind=sys.argv[2], number=1, dpi=int(sys.argv[3]))
peak = status("VmHWM") - before
print(json.dumps({"peak_mb": peak, "size": Image.open(io.BytesIO(png)).size}))
"""


def render_in_a_fresh_process(path: Path, *, kind: str, dpi: int) -> dict[str, Any]:
    """Render a page image in a new Python process and report how much its resident memory
    grew at the peak (Linux VmHWM, reset just before the render) and the image's size."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "lexweb.settings",
        "DATABASE_URL": database_url_for_tests(),
        "LEXWEB_LOG_LEVEL": "WARNING",
    }
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(path), kind, str(dpi)],
        cwd=django_settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


# --- Page images within the pixel budget -------------------------------------------------


@pytest.mark.slow
def test_page_image_of_a_14000_pixel_bilevel_tiff_is_rendered_within_the_budget(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    result = upload_one(lawyer_api, case, "bomb-ish.tif", huge_bilevel_tiff())
    assert result["status"] == "created", result
    document_id = result["document"]["id"]
    run_jobs()
    page = Page.objects.get(document_id=document_id)
    budget = django_settings.LEXWEB_MAX_RENDER_PIXELS

    response = page_image(lawyer_api, case, document_id, 1, dpi=100)

    assert response.status_code == 200
    width, height = png_size(response.content)
    # 100 dpi of a 300 dpi frame would be 4666 x 4666 = 21.8 million pixels: over the budget,
    # so scaled down to fit it, square as the page, and not needlessly smaller.
    assert width == height
    assert width * height <= budget
    assert width >= int((budget**0.5) * 0.99)
    # OCR read the frame scaled into the same budget; its resolution says so.
    assert page.ocr_dpi is not None and page.ocr_dpi < 300
    assert Document.objects.get(pk=document_id).status == "ready"

    # Below the budget the requested resolution is what you get.
    small = page_image(lawyer_api, case, document_id, 1, dpi=36)
    assert png_size(small.content) == (HUGE * 36 // 300, HUGE * 36 // 300)


@pytest.mark.slow
def test_rendering_a_huge_bilevel_frame_costs_about_the_frame_itself(tmp_path: Path) -> None:
    """The old render converted the whole frame to RGB first (three bytes a pixel, plus a
    resized copy): 1.3 GB for this 12 KB file. Kept in its own mode and reduced band by band,
    the frame itself (one byte a pixel: 196 MB) is nearly all of it."""
    path = written(tmp_path, "huge.tif", huge_bilevel_tiff())

    measured = render_in_a_fresh_process(path, kind="image", dpi=100)

    frame_mb = HUGE * HUGE // 2**20
    assert measured["peak_mb"] < frame_mb * 1.6, measured
    width, height = measured["size"]
    assert width * height <= django_settings.LEXWEB_MAX_RENDER_PIXELS


@pytest.mark.slow
def test_a_huge_jpeg_is_decoded_at_a_reduced_size(tmp_path: Path) -> None:
    path = written(tmp_path, "huge.jpg", huge_grey_jpeg())

    measured = render_in_a_fresh_process(path, kind="image", dpi=100)

    # Decoded whole it would be 187 MB; DCT scaling decodes an eighth of each side.
    assert measured["peak_mb"] < 100, measured
    width, height = measured["size"]
    assert width * height <= django_settings.LEXWEB_MAX_RENDER_PIXELS


@pytest.mark.parametrize(
    ("budget", "expected"),
    [(999_999, (999, 999)), (1_000_000, (1000, 1000)), (1_000_001, (1000, 1000))],
    ids=["just-below", "at", "just-above"],
)
def test_image_render_budget_at_just_below_and_just_above(
    tmp_path: Path, settings: Any, budget: int, expected: tuple[int, int]
) -> None:
    settings.LEXWEB_MAX_RENDER_PIXELS = budget
    buffer = io.BytesIO()
    Image.new("1", (1000, 1000), 1).save(buffer, format="PNG", dpi=(96, 96))
    path = written(tmp_path, "page.png", buffer.getvalue())

    png = extraction.page_png(path, kind="image", number=1, dpi=96)

    assert png_size(png) == expected


@pytest.mark.parametrize(
    ("budget", "scaled"),
    [(518_399, True), (518_400, False), (518_401, False)],
    ids=["just-below", "at", "just-above"],
)
def test_pdf_render_budget_at_just_below_and_just_above(
    tmp_path: Path, settings: Any, budget: int, scaled: bool
) -> None:
    # A 10 x 10 inch page at 72 dpi is 720 x 720 = 518,400 pixels.
    settings.LEXWEB_MAX_RENDER_PIXELS = budget
    path = written(tmp_path, "page.pdf", pdf_page(720, 720, text="Exhibit 4"))

    width, height = png_size(extraction.page_png(path, kind="pdf", number=1, dpi=72))

    assert width * height <= budget
    assert ((width, height) != (720, 720)) == scaled


def test_page_image_of_a_giant_pdf_page_is_scaled_into_the_budget(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    # 200 x 200 inches: at 100 dpi, 400 million pixels (MuPDF itself refuses to allocate it).
    result = upload_one(
        lawyer_api, case, "poster.pdf", pdf_page(14_400, 14_400, text="Site plan, sheet 1")
    )
    document_id = result["document"]["id"]
    run_jobs()

    response = page_image(lawyer_api, case, document_id, 1, dpi=100)

    assert response.status_code == 200
    width, height = png_size(response.content)
    assert width == height
    assert width * height <= django_settings.LEXWEB_MAX_RENDER_PIXELS
    assert Page.objects.get(document_id=document_id).source == "text_layer"


def test_giant_pdf_page_without_text_is_ocred_at_a_resolution_within_the_budget(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    result = upload_one(lawyer_api, case, "blank-poster.pdf", pdf_page(14_400, 14_400))
    document_id = result["document"]["id"]

    run_jobs()

    page = Page.objects.get(document_id=document_id)
    # 300 dpi would be 3.6 billion pixels; the largest whole dpi within 12 million is 17.
    budget = django_settings.LEXWEB_MAX_RENDER_PIXELS
    expected = int(72 * (budget / 14_400**2) ** 0.5)
    assert page.ocr_dpi == expected
    assert (200 * expected) ** 2 <= budget
    assert Document.objects.get(pk=document_id).status == "ready"


def test_page_too_large_even_at_one_dpi_is_stored_without_text_and_flagged(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    run_jobs: Callable[[], None],
    settings: Any,
) -> None:
    settings.LEXWEB_MAX_RENDER_PIXELS = 100_000  # 1 dpi of a 30,000-point page is 173,611
    result = upload_one(
        lawyer_api,
        case,
        "two-pages.pdf",
        _two_page_pdf(first=(30_000, 30_000), second=(612, 792)),
    )
    document_id = result["document"]["id"]

    run_jobs()

    document = Document.objects.get(pk=document_id)
    assert (document.status, document.pages_done) == ("ready", 2)
    giant, normal = document.pages.order_by("number")
    assert (giant.text, giant.source, giant.needs_review) == ("", "none", True)
    assert normal.source == "text_layer" and "Page two" in normal.text


def _two_page_pdf(*, first: tuple[float, float], second: tuple[float, float]) -> bytes:
    with pymupdf.open() as document:
        document.new_page(width=first[0], height=first[1])
        page = document.new_page(width=second[0], height=second[1])
        page.insert_text((72, 72), "Page two of the exhibit, read from its text layer.")
        return document.tobytes()


@pytest.mark.parametrize(
    ("height", "refused"), [(999, False), (1000, False), (1001, True)], ids=["below", "at", "above"]
)
def test_pdf_page_showing_an_image_over_the_pixel_limit_is_not_rendered(
    tmp_path: Path, settings: Any, height: int, refused: bool
) -> None:
    settings.LEXWEB_MAX_IMAGE_PIXELS = 1_000_000
    path = written(tmp_path, "scan.pdf", pdf_with_image(1000, height))

    if refused:
        with pytest.raises(DomainError, match="more than 1,000,000 pixels"):
            extraction.page_png(path, kind="pdf", number=1, dpi=72)
    else:
        assert png_size(extraction.page_png(path, kind="pdf", number=1, dpi=72)) == (612, 792)


@pytest.mark.slow
def test_pdf_image_bomb_is_stored_unread_and_its_page_image_is_a_clear_refusal(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    # 40,000 x 40,000 pixels (1.6 billion) in a 200 KB file: seconds of MuPDF for every render.
    result = upload_one(lawyer_api, case, "bomb.pdf", pdf_with_image(40_000, 40_000))
    document_id = result["document"]["id"]

    run_jobs()

    page = Page.objects.get(document_id=document_id)
    assert (page.source, page.needs_review, page.ocr_dpi) == ("none", True, None)
    assert Document.objects.get(pk=document_id).status == "ready"
    response = page_image(lawyer_api, case, document_id, 1, dpi=100)
    assert response.status_code == 400
    assert "decompression bomb" in response.json()["detail"]


# --- TIFF frames bounded like PDF pages ------------------------------------------------------


@pytest.mark.parametrize(
    ("frames", "refusal"),
    [
        (2, None),
        (3, None),
        (4, "The image has 4 pages; the limit is 3. Split it and upload the parts."),
        (7, "The image has more than 6 pages; the limit is 3. Split it and upload the parts."),
    ],
    ids=["below", "at", "just-above", "far-above"],
)
def test_tiff_frames_at_and_below_the_limit_go_in_and_more_are_refused_with_the_count(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    settings: Any,
    frames: int,
    refusal: str | None,
) -> None:
    settings.LEXWEB_MAX_PDF_PAGES = 3

    result = upload_one(lawyer_api, case, "frames.tif", tiff(*[(60, 60)] * frames))

    if refusal is None:
        assert result["status"] == "created"
        assert Document.objects.get().page_count == frames
    else:
        assert (result["status"], result["error"]) == ("error", refusal)
        assert not Document.objects.exists()
        assert not list((blob_root).glob("??/*"))


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_a_bomb_in_a_later_frame_is_refused_before_anything_is_stored(
    lawyer_api: Client, case: Case, blob_root: Path, settings: Any
) -> None:
    settings.LEXWEB_MAX_IMAGE_PIXELS = 1_000_000
    # Two small frames, then one of 1,000,001 pixels: the first frame alone passes Pillow.
    data = tiff((60, 60), (60, 60), (1_000_001, 1), mode="1", compression="group4")

    result = upload_one(lawyer_api, case, "later-bomb.tif", data)

    assert result["status"] == "error"
    assert "more than 1,000,000 pixels" in result["error"]
    assert not Document.objects.exists()


@pytest.mark.parametrize(
    ("width", "accepted"), [(999, True), (1000, True), (1001, False)], ids=["below", "at", "above"]
)
def test_every_frame_is_checked_against_the_pixel_limit(
    lawyer_api: Client, case: Case, blob_root: Path, settings: Any, width: int, accepted: bool
) -> None:
    settings.LEXWEB_MAX_IMAGE_PIXELS = 1_000_000
    data = tiff((60, 60), (width, 1000), mode="1", compression="group4")

    result = upload_one(lawyer_api, case, "second-frame.tif", data)

    assert (result["status"] == "created") == accepted, result


def test_upload_decodes_within_the_render_budget_and_a_damaged_later_frame_is_flagged(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,
    run_jobs: Callable[[], None],
    settings: Any,
) -> None:
    settings.LEXWEB_MAX_RENDER_PIXELS = 1_000_000
    frames = tiff((800, 800), (800, 800), (800, 800))

    # Frame 1 (640,000 pixels) fits the budget and is decoded at upload: damage is refused.
    refused = upload_one(lawyer_api, case, "bad-first.tif", with_damaged_frame(frames, 0))
    assert (refused["status"], refused["error"]) == (
        "error",
        "The image is damaged or truncated and cannot be read.",
    )
    # Frame 2 would take the pixels decoded past the budget: not decoded at upload, so the
    # upload goes in and ingest finds the damage.
    result = upload_one(lawyer_api, case, "bad-second.tif", with_damaged_frame(frames, 1))
    assert result["status"] == "created", result
    document_id = result["document"]["id"]

    run_jobs()

    document = Document.objects.get(pk=document_id)
    assert (document.status, document.pages_done, document.page_count) == ("ready", 3, 3)
    pages = list(document.pages.order_by("number"))
    assert [(p.source, p.needs_review) for p in pages][1] == ("none", True)
    assert pages[0].ocr_dpi is not None and pages[2].ocr_dpi is not None
    assert pages[1].ocr_dpi is None
    # Its page image is a clear refusal, not a server error.
    response = page_image(lawyer_api, case, document_id, 2, dpi=72)
    assert response.status_code == 400
    assert "cannot be decoded" in response.json()["detail"]
    assert page_image(lawyer_api, case, document_id, 3, dpi=72).status_code == 200


@pytest.mark.parametrize(
    ("budget", "accepted"),
    [(1_279_999, True), (1_280_000, False), (1_280_001, False)],
    ids=["just-below", "at", "just-above"],
)
def test_upload_decode_budget_at_just_below_and_just_above(
    lawyer_api: Client, case: Case, blob_root: Path, settings: Any, budget: int, accepted: bool
) -> None:
    # Two frames of 640,000 pixels, the second damaged: decoded (and refused) only when both
    # fit the budget.
    settings.LEXWEB_MAX_RENDER_PIXELS = budget
    data = with_damaged_frame(tiff((800, 800), (800, 800)), 1)

    result = upload_one(lawyer_api, case, "second-damaged.tif", data)

    assert (result["status"] == "created") == accepted, result


def test_a_frame_larger_than_the_budget_is_not_decoded_at_upload(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    # 4000 x 4000 = 16 million pixels, over the 12 million budget: the upload reads only its
    # header (the web process never holds the frame); its damage is found at ingest.
    data = with_damaged_frame(tiff((4000, 4000)), 0)

    result = upload_one(lawyer_api, case, "big-damaged.tif", data)

    assert result["status"] == "created", result
    run_jobs()
    page = Page.objects.get(document_id=result["document"]["id"])
    assert (page.source, page.needs_review, page.ocr_dpi) == ("none", True, None)


def test_with_the_default_budget_every_frame_of_a_small_tiff_is_decoded_at_upload(
    lawyer_api: Client, case: Case, blob_root: Path
) -> None:
    # 3 x 640,000 pixels is well within 12 million: all are decoded, damage is refused.
    frames = tiff((800, 800), (800, 800), (800, 800))

    result = upload_one(lawyer_api, case, "bad-third.tif", with_damaged_frame(frames, 2))

    assert result["status"] == "error" and "damaged" in result["error"]


@pytest.mark.filterwarnings("ignore::PIL.Image.DecompressionBombWarning")
def test_frame_over_the_pixel_limit_is_refused_when_read_directly(
    tmp_path: Path, settings: Any
) -> None:
    """Defence in depth: a stored image is checked again whenever a frame is rendered (the
    limit may have been lowered since it was uploaded)."""
    path = written(tmp_path, "big.tif", tiff((1200, 1000), mode="1", compression="group4"))
    settings.LEXWEB_MAX_IMAGE_PIXELS = 1_000_000

    with pytest.raises(DomainError, match="more than 1,000,000 pixels"):
        extraction.page_png(path, kind="image", number=1, dpi=72)
    assert [p.source for p in extraction.image_pages(path)] == ["none"]


def test_stored_original_is_untouched_by_rendering(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    data = tiff((800, 800), (800, 800))
    document_id = upload_one(lawyer_api, case, "two.tif", data)["document"]["id"]
    run_jobs()

    for number in (1, 2):
        assert page_image(lawyer_api, case, document_id, number, dpi=72).status_code == 200

    document = Document.objects.get(pk=document_id)
    assert storage.blob_path(document.blob.sha256).read_bytes() == data
