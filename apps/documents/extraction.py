"""Page text from originals: the PDF text layer where it is usable, Tesseract where it is not,
and both on a page whose images cover most of it (see "A text layer over an image").

OCR runs one Tesseract process per core with OMP_THREAD_LIMIT=1 (unbounded OpenMP threads make
Tesseract several times slower on small machines), and reads text, word boxes and confidences
from ONE pass per page (`image_to_data`). Pages whose text layer is usable never reach Tesseract.
"""

import io
import logging
import math
import os
import re
import types
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pymupdf
from django.conf import settings
from PIL import Image

from apps.documents import render_slots
from lexweb.errors import DomainError, NotFound

logger = logging.getLogger(__name__)

# Read by every Tesseract child process this worker starts (pytesseract passes os.environ on).
os.environ["OMP_THREAD_LIMIT"] = "1"

Word = list[str | int | float]


@dataclass
class PageText:
    number: int
    text: str
    source: str  # Page.Source value
    confidence: float | None = None
    words: list[Word] = field(default_factory=list)
    dpi: int | None = None
    damaged: bool = False
    margin_boxes: list[list[float]] | None = None
    # Why the page needs review, when a rule above says so (shown beside the flag).
    review_reason: str = ""


class OcrUnavailableError(DomainError):
    code = "ocr_unavailable"


def _pytesseract() -> types.ModuleType:
    """pytesseract, imported when first used: it brings numpy (0.08 s), which every process
    (web, each worker, each command) would otherwise pay at start."""
    import pytesseract

    return pytesseract


def tesseract_version() -> str | None:
    pytesseract = _pytesseract()
    try:
        return str(pytesseract.get_tesseract_version())
    except (pytesseract.TesseractNotFoundError, OSError):
        return None


# --- Deciding ------------------------------------------------------------------------------


def _garbled(text: str) -> bool:
    """Text layers with broken font encodings come out as replacement or private-use glyphs."""
    visible = [ch for ch in text if not ch.isspace()]
    if not visible:
        return True
    bad = sum(1 for ch in visible if ch == "\ufffd" or "\ue000" <= ch <= "\uf8ff" or ord(ch) < 32)
    return bad / len(visible) > 0.1


def text_layer_usable(page: pymupdf.Page, text: str) -> bool:
    """Usable: real words, not garbled, and not a scan with a stamped line of text on top.

    A page that shows an image and carries only a few words (an ECF header over a scanned body)
    is a scanned page: the words of the body are in the image.
    """
    words = len(text.split())
    if words == 0 or _garbled(text):
        return False
    has_images = bool(page.get_image_info())
    return not (has_images and words < settings.LEXWEB_OCR_MIN_TEXT_WORDS)


# --- OCR -----------------------------------------------------------------------------------


def ocr_image(image: Image.Image, *, number: int, dpi: int) -> PageText:
    """One Tesseract pass: text (lines and paragraphs kept), word boxes, mean confidence."""
    # pytesseract hands the image to Tesseract through a temporary file in `image.format`
    # (PNG when unset): uncompressed BMP saves the PNG compression, ~0.3 s a page.
    image.format = "BMP"
    pytesseract = _pytesseract()
    try:
        data = pytesseract.image_to_data(
            image, lang=settings.LEXWEB_OCR_LANGUAGE, output_type=pytesseract.Output.DICT
        )
    except pytesseract.TesseractNotFoundError:
        raise OcrUnavailableError("OCR is unavailable: Tesseract is not installed.") from None
    words: list[Word] = []
    lines: dict[tuple[int, int, int], list[str]] = {}
    for i, token in enumerate(data["text"]):
        token = token.strip()
        conf = float(data["conf"][i])
        if not token or conf < 0:
            continue
        key = (data["block_num"][i], data["par_num"][i], data["line_num"][i])
        lines.setdefault(key, []).append(token)
        box = [data["left"][i], data["top"][i], data["width"][i], data["height"][i]]
        words.append([token, *box, round(conf, 1)])
    text_lines: list[str] = []
    previous: tuple[int, int] | None = None
    for (block, par, _line), tokens in lines.items():
        if previous is not None and previous != (block, par):
            text_lines.append("")
        text_lines.append(" ".join(tokens))
        previous = (block, par)
    confidence = sum(float(w[5]) for w in words) / len(words) if words else 0.0
    return PageText(number, "\n".join(text_lines), "ocr", round(confidence, 1), words, dpi)


def ocr_dpi(page: pymupdf.Page) -> int:
    """The resolution to render a scanned page at for OCR: the scan's own resolution (upscaling
    adds pixels, not information, and Tesseract's time grows with pixels), within
    [LEXWEB_OCR_MIN_DPI, LEXWEB_OCR_DPI]; LEXWEB_OCR_DPI when the page holds no image."""
    best = 0.0
    for info in page.get_image_info():
        x0, _, x1, _ = info["bbox"]
        if x1 - x0 > page.rect.width * 0.3:
            best = max(best, info["width"] / ((x1 - x0) / 72.0))
    if best <= 0:
        return int(settings.LEXWEB_OCR_DPI)
    return int(min(settings.LEXWEB_OCR_DPI, max(settings.LEXWEB_OCR_MIN_DPI, round(best))))


class PageTooLargeError(DomainError):
    code = "page_too_large"


def page_zoom(rect: pymupdf.Rect, *, dpi: float, max_pixels: int) -> float:
    """Pixels per point for rendering a page of `rect` at `dpi`, lowered so the image has at
    most `max_pixels` (a page with a giant media box is scaled down, never rendered whole)."""
    width, height = max(abs(rect.width), 1e-3), max(abs(rect.height), 1e-3)
    zoom = min(dpi / 72.0, math.sqrt(max_pixels / (width * height)))
    # MuPDF rounds the pixel box outwards; its own rounding says how many pixels there will be.
    while zoom > 0 and _rendered_pixels(rect, zoom) > max_pixels:
        zoom *= 0.99
    return zoom


def _rendered_pixels(rect: pymupdf.Rect, zoom: float) -> int:
    box = (rect * pymupdf.Matrix(zoom, zoom)).irect
    return int(box.width) * int(box.height)


def ocr_render_dpi(rect: pymupdf.Rect, dpi: int) -> int:
    """`dpi`, or the whole-number resolution under it that keeps the page within
    LEXWEB_MAX_RENDER_PIXELS. Raises PageTooLargeError when not even 1 dpi does."""
    zoom = page_zoom(rect, dpi=dpi, max_pixels=settings.LEXWEB_MAX_RENDER_PIXELS)
    capped = min(dpi, math.floor(zoom * 72.0))
    if capped < 1:
        raise PageTooLargeError(
            f"The page is {rect.width:.0f} x {rect.height:.0f} points, too large to read."
        )
    return capped


def check_page_images(page: pymupdf.Page) -> None:
    """Decompression bombs inside a PDF: an image shown on the page whose stated size exceeds
    LEXWEB_MAX_IMAGE_PIXELS is not rendered (MuPDF decodes it in strips, so memory stays low,
    but 1.6 billion pixels from a 200 KB file take seconds of every render). Read from the
    page's content (inline images too), without decoding anything."""
    for info in page.get_image_info():
        if int(info["width"]) * int(info["height"]) > settings.LEXWEB_MAX_IMAGE_PIXELS:
            raise PageTooLargeError(
                f"The page holds an image of more than {settings.LEXWEB_MAX_IMAGE_PIXELS:,} "
                "pixels (a possible decompression bomb); it is not rendered. Download the "
                "original to look at it."
            )


def _render(page: pymupdf.Page, dpi: int) -> Image.Image:
    pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    return Image.frombytes("L", (pixmap.width, pixmap.height), pixmap.samples)


# --- Image frames within a pixel budget ------------------------------------------------------

# Source pixels converted at a time while a frame is scaled down: bounds the working copies.
_BAND_PIXELS = 2_000_000


def check_frame_pixels(size: tuple[int, int]) -> None:
    """Decompression-bomb guard for one frame, read from its header before any decoding."""
    if size[0] * size[1] > settings.LEXWEB_MAX_IMAGE_PIXELS:
        raise DomainError(
            f"The image has more than {settings.LEXWEB_MAX_IMAGE_PIXELS:,} pixels "
            "(a possible decompression bomb); it was not opened."
        )


def _output_mode(mode: str) -> str:
    grey = mode in ("1", "L", "LA", "I", "F") or mode.startswith("I;16")
    return "L" if grey else "RGB"


def frame_scaled(
    image: Image.Image, *, scale: float, max_pixels: int, mode: str | None = None
) -> Image.Image:
    """The current frame of `image` scaled by `scale` (never up) and further down to at most
    `max_pixels`, as a new image in `mode` ("L" or "RGB"; default: the frame's own kind).

    1. The frame's size comes from its header and is checked before anything is decoded.
    2. A JPEG is decoded straight at a reduced size (DCT scaling, `draft`); other formats are
       decoded in the mode they are stored in (a bilevel page stays one byte a pixel).
    3. Bands of rows are converted and box-reduced by a whole factor one at a time, so no
       full-size copy in a wider mode is made; a last resize gives the exact size.
    """
    width, height = image.size
    check_frame_pixels((width, height))
    scale = min(1.0, scale, math.sqrt(max_pixels / (width * height)))
    target = (max(1, int(width * scale)), max(1, int(height * scale)))
    mode = mode or _output_mode(image.mode)
    if image.format == "JPEG" and target != (width, height):
        image.draft(mode, target)
    image.load()
    factor = max(1, min(image.width // target[0], image.height // target[1]))
    reduced = _reduce_in_bands(image, factor=factor, mode=mode)
    if reduced.size != target:
        reduced = reduced.resize(target, Image.Resampling.LANCZOS)
    return reduced


def _reduce_in_bands(image: Image.Image, *, factor: int, mode: str) -> Image.Image:
    width, height = image.size
    out = Image.new(mode, (math.ceil(width / factor), math.ceil(height / factor)))
    rows = max(1, _BAND_PIXELS // (width * factor)) * factor
    for top in range(0, height, rows):
        band = image.crop((0, top, width, min(height, top + rows)))
        if band.mode != mode:
            band = band.convert(mode)
        if factor > 1:
            band = band.reduce(factor)
        out.paste(band, (0, top // factor))
    return out


def _own_dpi(image: Image.Image) -> int:
    """The resolution the file states, in whole dots per inch as PyMuPDF reads it (which sizes
    an image's PDF page by it, assuming 96 when the file states none or nonsense)."""
    try:
        dpi = int(float((image.info.get("dpi") or (96, 96))[0]))
    except (TypeError, ValueError, IndexError, OverflowError):
        return 96
    return dpi if 1 <= dpi <= 100_000 else 96


# --- Walking a document ----------------------------------------------------------------------


def _in_order(
    jobs: Iterator[PageText | Callable[[], PageText]],
) -> Iterator[PageText]:
    """Yield results in page order; OCR jobs run on a pool, at most 2x pool size in flight."""
    workers = settings.LEXWEB_OCR_WORKERS
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ocr") as pool:
        pending: deque[Future[PageText] | PageText] = deque()
        for job in jobs:
            pending.append(pool.submit(job) if callable(job) else job)
            while len(pending) > 2 * workers or (pending and _done(pending[0])):
                yield _result(pending.popleft())
        while pending:
            yield _result(pending.popleft())


def _done(item: "Future[PageText] | PageText") -> bool:
    return not isinstance(item, Future) or item.done()


def _result(item: "Future[PageText] | PageText") -> PageText:
    return item.result() if isinstance(item, Future) else item


def pdf_pages(path: Path, *, first: int = 1, last: int | None = None) -> Iterator[PageText]:
    """Pages `first`..`last` (1-based, inclusive; default: to the end) of a PDF, in order."""
    with pymupdf.open(path, filetype="pdf") as document:
        stop = document.page_count if last is None else min(last, document.page_count)

        def jobs() -> Iterator[PageText | Callable[[], PageText]]:
            for index in range(max(first, 1) - 1, stop):
                yield _pdf_page_job(document[index], index + 1)

        yield from _in_order(jobs())


def _pdf_page_job(page: pymupdf.Page, number: int) -> PageText | Callable[[], PageText]:
    # One text extraction serves text and boxes (flags as get_text("text") uses).
    textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_TEXT)
    text = textpage.extractText()
    layer: PageText | None = None
    usable = text_layer_usable(page, text)
    if text.strip() and not _garbled(text):
        margins = _margin_boxes(page.rect, textpage.extractWORDS())
        layer = PageText(number, text.strip(), "text_layer", margin_boxes=margins)
        if usable and image_cover(page) < IMAGE_COVER_OCR:
            return layer
    try:
        check_page_images(page)
        dpi = ocr_render_dpi(page.rect, ocr_dpi(page))
    except PageTooLargeError as exc:
        if layer is not None:  # its image cannot be read: the layer, and a person looks
            logger.warning("Page %s is not rendered for OCR (%s); text layer only", number, exc)
            layer.damaged = True
            layer.review_reason = IMAGE_UNREAD
            return layer
        logger.warning("Page %s is not rendered for OCR (%s); stored without text", number, exc)
        return PageText(number, "", "none", damaged=True)
    # Rendering is PyMuPDF (not thread-safe): done here; Tesseract on the pool.
    image = _render(page, dpi)
    if layer is not None:
        # A usable layer over an image is judged against it; a few words over a scan (a
        # stamped header) are kept beside its OCR but expected to differ.
        return partial(_ocr_beside_layer, image, page.rect, layer=layer, dpi=dpi, judge=usable)
    return partial(_ocr_pdf_page, image, page.rect, number=number, dpi=dpi)


# --- A text layer over an image ----------------------------------------------------------------
#
# A page can show one thing in its image and carry another in its (invisible) text layer: a
# searchable scan carries what its image shows; a forged one does not. A page whose images cover
# IMAGE_COVER_OCR of it or more is therefore OCR'd even when its text layer is usable, and:
#
# - its stored text is the text layer, followed by the OCR lines the layer lacks (a line is
#   lacking when at least half of its words are not in the layer), so search, the registry's
#   check and the verifier read both what the file says and what a person sees;
# - the page is flagged for review, with the reason, when the image and the layer disagree: at
#   least DISAGREE_MIN_WORDS of the OCR's confident words, and DISAGREE_SHARE of them, are not in
#   the layer (OCR misreads of a faithful searchable scan stay far below that).

IMAGE_COVER_OCR = 0.5
DISAGREE_SHARE = 0.2
DISAGREE_MIN_WORDS = 10
# OCR words under this confidence are not counted either way (specks, smudges, logos).
COUNTED_CONFIDENCE = 60.0
IMAGE_UNREAD = (
    "The page shows an image that could not be read for OCR; only its text layer was read."
)
_TOKEN = re.compile(r"[^\W_]+")


def image_cover(page: pymupdf.Page) -> float:
    """The share of the page's area that images cover: each image shown, clipped to the page,
    its areas added up (overlaps count twice, so this errs towards OCR), at most 1."""
    rect = page.rect
    area = abs(rect.width * rect.height)
    if area <= 0:
        return 0.0
    covered = 0.0
    for info in page.get_image_info():
        box = pymupdf.Rect(info["bbox"]) & rect
        if not box.is_empty:
            covered += abs(box.width * box.height)
    return min(1.0, covered / area)


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.casefold()) if len(t) > 1 or t.isdigit()]


def _ocr_beside_layer(
    image: Image.Image, rect: pymupdf.Rect, *, layer: PageText, dpi: float, judge: bool
) -> PageText:
    result = _ocr_pdf_page(image, rect, number=layer.number, dpi=dpi)
    return combine_layer_and_ocr(layer, result, judge=judge)


def _disagree(missing: int, of: int) -> bool:
    return missing >= DISAGREE_MIN_WORDS and missing >= DISAGREE_SHARE * max(of, 1)


def combine_layer_and_ocr(layer: PageText, ocr: PageText, *, judge: bool = True) -> PageText:
    """The page's text from its text layer and its OCR (the rule above); with `judge`, flagged
    for review when they disagree either way (the image shows words the layer lacks, or the
    layer holds words the image does not show)."""
    known = set(_tokens(layer.text))
    counted = [
        t for w in ocr.words if float(w[5]) >= COUNTED_CONFIDENCE for t in _tokens(str(w[0]))
    ]
    seen = set(counted)
    layer_tokens = _tokens(layer.text)
    unseen = sum(1 for t in layer_tokens if t not in seen)
    missing = sum(1 for t in counted if t not in known)
    added = []
    for line in ocr.text.splitlines():
        tokens = _tokens(line)
        if tokens and 2 * sum(1 for t in tokens if t not in known) >= len(tokens):
            added.append(line)
    reasons = []
    if judge and _disagree(missing, len(counted)):
        reasons.append(
            f"OCR read {missing} of {len(counted)} words on the page's image that its text "
            "layer does not have"
        )
    if judge and _disagree(unseen, len(layer_tokens)):
        reasons.append(
            f"{unseen} of the text layer's {len(layer_tokens)} words are not seen on its image"
        )
    reason = ""
    if reasons:
        reason = (
            "The page's image and its text layer disagree: "
            + "; ".join(reasons)
            + ". Both are kept as its text."
        )
    text = layer.text + ("\n\n" + "\n".join(added) if added else "")
    return PageText(
        layer.number,
        text,
        "ocr" if added else "text_layer",
        ocr.confidence if added else None,
        ocr.words if added else [],
        ocr.dpi if added else None,
        damaged=bool(reasons),
        margin_boxes=(layer.margin_boxes or []) + (ocr.margin_boxes or []),
        review_reason=reason,
    )


MARGIN_BAND = 120.0  # points: stamps sit within this distance of the top or bottom edge


def _margin_boxes(rect: pymupdf.Rect, words: Sequence[Sequence[Any]]) -> list[list[float]]:
    boxes = []
    for x0, y0, x1, y1, *_ in words:
        box = [float(x0), float(y0), float(x1), float(y1)]
        if box[1] < rect.y0 + MARGIN_BAND or box[3] > rect.y1 - MARGIN_BAND:
            boxes.append([round(v, 1) for v in box])
    return boxes


def _ocr_pdf_page(image: Image.Image, rect: pymupdf.Rect, *, number: int, dpi: float) -> PageText:
    """OCR a rendered page (or an image file's frame; `rect` is the PDF page it becomes) and
    record the word boxes in its margins, in points. `dpi`: the image's pixels per inch of
    `rect` (fractional for a frame scaled down to the render budget)."""
    result = ocr_image(image, number=number, dpi=max(1, round(dpi)))
    scale = 72.0 / dpi
    words = [
        (
            rect.x0 + float(w[1]) * scale,
            rect.y0 + float(w[2]) * scale,
            rect.x0 + (float(w[1]) + float(w[3])) * scale,
            rect.y0 + (float(w[2]) + float(w[4])) * scale,
        )
        for w in result.words
    ]
    result.margin_boxes = _margin_boxes(rect, words)
    return result


def image_pages(path: Path, *, first: int = 1, last: int | None = None) -> Iterator[PageText]:
    """Frames `first`..`last` (1-based, inclusive; default: to the end) of an image file.

    Each frame is checked against the pixel limit from its header and scaled into the render
    budget before OCR. A frame that cannot be decoded becomes a page without text, flagged for
    review; the other frames are still read.
    """
    Image.MAX_IMAGE_PIXELS = settings.LEXWEB_MAX_IMAGE_PIXELS
    with Image.open(path) as image:

        def jobs() -> Iterator[PageText | Callable[[], PageText]]:
            number = max(first, 1)
            while last is None or number <= last:
                try:
                    image.seek(number - 1)
                except EOFError:
                    return
                yield _frame_job(image, number)
                number += 1

        yield from _in_order(jobs())


def _frame_job(image: Image.Image, number: int) -> PageText | Callable[[], PageText]:
    width, height = image.size
    # PyMuPDF sizes an image's PDF page by its dpi, 96 when the file gives none; the same
    # figure here keeps word boxes and stamped pages in one coordinate space.
    dpi = _own_dpi(image)
    try:
        gray = frame_scaled(
            image, scale=1.0, max_pixels=settings.LEXWEB_MAX_RENDER_PIXELS, mode="L"
        )
    except (DomainError, OSError, SyntaxError, ValueError, Image.DecompressionBombError) as exc:
        logger.warning("Frame %s cannot be read (%s); stored without text", number, exc)
        return PageText(number, "", "none", damaged=True)
    rect = pymupdf.Rect(0, 0, width * 72.0 / dpi, height * 72.0 / dpi)
    return partial(_ocr_pdf_page, gray, rect, number=number, dpi=dpi * gray.width / width)


def page_png(path: Path, *, kind: str, number: int, dpi: int) -> bytes:
    """Page `number` (1-based) of a PDF or image original as PNG, at `dpi` or smaller: never
    more than LEXWEB_MAX_RENDER_PIXELS pixels, and never a full-size decoded copy of a huge
    frame in a wider mode (see `frame_scaled`). At most LEXWEB_PAGE_IMAGE_CONCURRENCY at once
    in a process (render_slots: PageImagesBusyError when none is free in time)."""
    with render_slots.render_slot():
        return _page_png(path, kind=kind, number=number, dpi=dpi)


def _page_png(path: Path, *, kind: str, number: int, dpi: int) -> bytes:
    budget = settings.LEXWEB_MAX_RENDER_PIXELS
    if kind == "pdf":
        with pymupdf.open(path, filetype="pdf") as document:
            if not 1 <= number <= document.page_count:
                raise NotFound(f"No page {number}.")
            page = document[number - 1]
            check_page_images(page)
            zoom = page_zoom(page.rect, dpi=dpi, max_pixels=budget)
            pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
            png: bytes = pixmap.tobytes("png")
            return png
    if kind == "image":
        Image.MAX_IMAGE_PIXELS = settings.LEXWEB_MAX_IMAGE_PIXELS
        with Image.open(path) as image:
            try:
                image.seek(number - 1)
            except EOFError:
                raise NotFound(f"No page {number}.") from None
            try:
                frame = frame_scaled(image, scale=dpi / _own_dpi(image), max_pixels=budget)
            except (OSError, SyntaxError, ValueError):
                raise DomainError(
                    f"Page {number} of this image cannot be decoded; download the original "
                    "to look at it."
                ) from None
            buffer = io.BytesIO()
            frame.save(buffer, format="PNG")
            return buffer.getvalue()
    raise NotFound("This kind of document has no page images; read its text instead.")
