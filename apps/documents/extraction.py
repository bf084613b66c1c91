"""Page text from originals: the PDF text layer where it is usable, Tesseract where it is not.

OCR runs one Tesseract process per core with OMP_THREAD_LIMIT=1 (unbounded OpenMP threads make
Tesseract several times slower on small machines), and reads text, word boxes and confidences
from ONE pass per page (`image_to_data`). Pages whose text layer is usable never reach Tesseract.
"""

import io
import os
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import pymupdf
import pytesseract
from django.conf import settings
from PIL import Image, ImageSequence

from lexweb.errors import DomainError, NotFound

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


class OcrUnavailableError(DomainError):
    code = "ocr_unavailable"


def tesseract_version() -> str | None:
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


def _render(page: pymupdf.Page, dpi: int) -> Image.Image:
    pixmap = page.get_pixmap(dpi=dpi, colorspace=pymupdf.csGRAY, alpha=False)
    return Image.frombytes("L", (pixmap.width, pixmap.height), pixmap.samples)


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


def pdf_pages(path: Path) -> Iterator[PageText]:
    with pymupdf.open(path, filetype="pdf") as document:

        def jobs() -> Iterator[PageText | Callable[[], PageText]]:
            for index, page in enumerate(document):
                # One text extraction serves text and boxes (flags as get_text("text") uses).
                textpage = page.get_textpage(flags=pymupdf.TEXTFLAGS_TEXT)
                text = textpage.extractText()
                if text_layer_usable(page, text):
                    margins = _margin_boxes(page.rect, textpage.extractWORDS())
                    yield PageText(index + 1, text.strip(), "text_layer", margin_boxes=margins)
                else:
                    # Rendering is PyMuPDF (not thread-safe): done here; Tesseract on the pool.
                    dpi = ocr_dpi(page)
                    image = _render(page, dpi)
                    yield partial(_ocr_pdf_page, image, page.rect, number=index + 1, dpi=dpi)

        yield from _in_order(jobs())


MARGIN_BAND = 120.0  # points: stamps sit within this distance of the top or bottom edge


def _margin_boxes(rect: pymupdf.Rect, words: Sequence[Sequence[Any]]) -> list[list[float]]:
    boxes = []
    for x0, y0, x1, y1, *_ in words:
        box = [float(x0), float(y0), float(x1), float(y1)]
        if box[1] < rect.y0 + MARGIN_BAND or box[3] > rect.y1 - MARGIN_BAND:
            boxes.append([round(v, 1) for v in box])
    return boxes


def _ocr_pdf_page(image: Image.Image, rect: pymupdf.Rect, *, number: int, dpi: int) -> PageText:
    """OCR a rendered page (or an image file's frame; `rect` is the PDF page it becomes) and
    record the word boxes in its margins, in points."""
    result = ocr_image(image, number=number, dpi=dpi)
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


def image_pages(path: Path) -> Iterator[PageText]:
    Image.MAX_IMAGE_PIXELS = settings.LEXWEB_MAX_IMAGE_PIXELS
    with Image.open(path) as image:

        def jobs() -> Iterator[Callable[[], PageText]]:
            for index, frame in enumerate(ImageSequence.Iterator(image)):
                gray = frame.convert("L")
                # PyMuPDF sizes an image's PDF page by its dpi, 96 when the file gives none;
                # the same figure here keeps word boxes and stamped pages in one coordinate space.
                dpi = int((frame.info.get("dpi") or (96, 96))[0]) or 96
                rect = pymupdf.Rect(0, 0, gray.width * 72.0 / dpi, gray.height * 72.0 / dpi)
                yield partial(_ocr_pdf_page, gray, rect, number=index + 1, dpi=dpi)

        yield from _in_order(jobs())


def page_png(path: Path, *, kind: str, number: int, dpi: int) -> bytes:
    """Render page `number` (1-based) of a PDF or image original as PNG."""
    if kind == "pdf":
        with pymupdf.open(path, filetype="pdf") as document:
            if not 1 <= number <= document.page_count:
                raise NotFound(f"No page {number}.")
            png: bytes = document[number - 1].get_pixmap(dpi=dpi, alpha=False).tobytes("png")
            return png
    if kind == "image":
        Image.MAX_IMAGE_PIXELS = settings.LEXWEB_MAX_IMAGE_PIXELS
        with Image.open(path) as image:
            try:
                image.seek(number - 1)
            except EOFError:
                raise NotFound(f"No page {number}.") from None
            frame = image.convert("RGB") if image.mode not in ("L", "RGB") else image.copy()
            scale = dpi / int((image.info.get("dpi") or (96, 96))[0] or 96)
            if scale < 1:
                frame = frame.resize(
                    (max(1, int(frame.width * scale)), max(1, int(frame.height * scale)))
                )
            buffer = io.BytesIO()
            frame.save(buffer, format="PNG")
            return buffer.getvalue()
    raise NotFound("This kind of document has no page images; read its text instead.")
