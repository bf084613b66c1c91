"""Merge originals and Bates-stamp every page: a deterministic PDF transform (no database).

Speed: the stamps are written straight into each page's PDF objects: one Helvetica font
object per volume (the standard 14 font, WinAnsi), its glyph widths measured once per
character, and per page one small content stream (`BT ... Tj ET`) appended to the page's
contents, between a `q` stream shared by every page and a `Q`, so the original's graphics
state cannot move the stamps. No page is loaded as a MuPDF page object, and nothing re-parses
the original's content; originals are copied in one `insert_pdf` per document.
A legend outside Windows-1252 is written with PyMuPDF's TextWriter and its fallback fonts.

"Never over existing text": before stamping, the stamp areas are checked against the page's
text (the text layer, or the OCR word boxes of scanned pages). Where they collide, the page's
content is shrunk into the rest of the page, leaving the margin free for the stamps.

Searchable volumes: a page whose text came from OCR gets that text as an invisible text layer
(render mode 3, as OCRmyPDF and Tesseract's PDF renderer do): each OCR word at its word box,
in a glyph-less Type0 font whose codes are the characters' UTF-16 code units, so any script
extracts as it was read. Pages with a text layer are left as they are.
"""

import base64
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf
from pymupdf import mupdf

from apps.documents import bates

logger = logging.getLogger(__name__)

TRANSFORM = "bates-stamp/2"  # 2: stamps in the page objects, invisible OCR text layer
_PAD = 2.0  # points of clearance around a stamp
# An OCR page carries at most this many invisible words (a page of 6-point print holds ~3,000);
# the rest of a pathological page is left out of the layer, and the page's text stays in the
# database and the load files.
MAX_LAYER_WORDS = 20_000
_STAMP_FONT = "LxBates"
_OCR_FONT = "LxOcrText"
Box = tuple[float, float, float, float]
Matrix = tuple[float, float, float, float, float, float]


@dataclass(frozen=True)
class StampSettings:
    prefix: str
    digits: int
    position: str = "bottom_right"
    legend: str = ""
    legend_position: str = "bottom_left"
    font_size: float = 9.0
    margin: float = 18.0
    # 0: page k of a source takes `first_number + k`; N > 0: every page of a source takes its
    # `first_number` with the page as an N-digit suffix (ABC000123.001, .002, ...).
    page_suffix_digits: int = 0

    def label(self, number: int, page: int = 0) -> str:
        return bates.label(self.prefix, number, self.digits, self.page_suffix_digits, page)

    def page_label(self, first_number: int, k: int) -> str:
        """The label of 0-based page `k` of a source numbered from `first_number`."""
        if self.page_suffix_digits:
            return self.label(first_number, k + 1)
        return self.label(first_number + k)


@dataclass(frozen=True)
class OcrLayer:
    """One OCR page's words as stored at ingest: `[text, left, top, width, height, conf]` in
    pixels at `dpi`, from the top left of the page as rendered (the page's rect)."""

    dpi: float
    words: Sequence[Any]  # checked word by word: a malformed entry is skipped


@dataclass(frozen=True)
class Source:
    """One original: a PDF or an image file and its first Bates number. `known_boxes` holds, by
    0-based page index, the word boxes (points) in the page's margins as recorded at ingest;
    pages not in it are read here to find them. `ocr_layers`: by 0-based page index, the OCR
    words of the pages whose text came from OCR."""

    path: Path
    kind: str
    first_number: int
    known_boxes: Mapping[int, Sequence[Sequence[float]]] = field(default_factory=dict)
    ocr_layers: Mapping[int, OcrLayer] = field(default_factory=dict)
    # Or read when the document's turn comes (so a volume's OCR words are never all in memory).
    load_layers: Callable[[], Mapping[int, OcrLayer]] | None = None

    def layers(self) -> Mapping[int, OcrLayer]:
        return self.load_layers() if self.load_layers is not None else self.ocr_layers


def _open(source: Source, first_only: bool = False) -> pymupdf.Document:
    if source.kind == "pdf":
        return pymupdf.open(source.path, filetype="pdf")
    # Images (multi-page TIFF included) become one PDF page per frame at their own size.
    with pymupdf.open(source.path) as image:
        pdf = image.convert_to_pdf(to_page=0) if first_only else image.convert_to_pdf()
        return pymupdf.open("pdf", pdf)


def _stamp_rect(
    page_width: float, page_height: float, position: str, width: float, size: float, margin: float
) -> Box:
    bottom = position.startswith("bottom")
    y1 = page_height - margin if bottom else margin + size
    if position.endswith("right"):
        x0 = page_width - margin - width
    elif position.endswith("left"):
        x0 = margin
    else:
        x0 = (page_width - width) / 2
    return (x0, y1 - size, x0 + width, y1 + size * 0.25)


@dataclass
class _Stamp:
    text: str
    rect: Box  # x0, y0, x1, y1 in points from the page's top left


class _Widths:
    """Text widths in the stamp font, each character's advance read from the font once
    (the same sums as `Font.text_length`, without its per-character encoding calls)."""

    def __init__(self, font: pymupdf.Font) -> None:
        self.font = font
        self.advance: dict[str, float] = {}

    def __call__(self, text: str, size: float) -> float:
        advance = self.advance
        total = 0.0
        for ch in text:
            width = advance.get(ch)
            if width is None:
                width = advance[ch] = self.font.text_length(ch, 1.0)
            total += width
        return total * size


def _stamps(
    width: float, height: float, settings: StampSettings, widths: _Widths, label: str
) -> list[_Stamp]:
    size, margin = settings.font_size, settings.margin
    stamps = [
        _Stamp(
            label,
            _stamp_rect(width, height, settings.position, widths(label, size), size, margin),
        )
    ]
    if settings.legend:
        legend_width = widths(settings.legend, size)
        stamps.append(
            _Stamp(
                settings.legend,
                _stamp_rect(width, height, settings.legend_position, legend_width, size, margin),
            )
        )
    return stamps


# The page the stamps must fit: A4 portrait, the narrowest of the common office sizes.
FIT_WIDTH, FIT_HEIGHT = 595.0, 842.0


def stamp_fit_problem(settings: StampSettings) -> str | None:
    """Why the Bates number and the legend would not both be readable on an A4 page (one past
    the page's edge, or the two over each other), as a message to show; None when they fit.
    Measured in the stamp font; a legend in other scripts is measured in it too (close)."""
    widths = _Widths(pymupdf.Font("helv"))
    # The longest label: with a page suffix, the number and its suffix (digits are all one
    # width in Helvetica, so number 0 page 1 is as wide as any).
    stamps = _stamps(FIT_WIDTH, FIT_HEIGHT, settings, widths, settings.label(0, 1))
    off_page = any(s.rect[0] < 0 or s.rect[2] > FIT_WIDTH for s in stamps)
    padded = [(s.rect[0] - _PAD, s.rect[1], s.rect[2] + _PAD, s.rect[3]) for s in stamps]
    if not off_page and not (len(padded) == 2 and _overlap(padded[0], padded[1])):
        return None
    size = settings.font_size
    label_width = widths(settings.label(0, 1), size)
    if len(stamps) == 1:
        return (
            f"At {size:g} pt the Bates number is {label_width:.0f} pt wide, wider than an A4 "
            f"page ({FIT_WIDTH:.0f} pt) within its margins; choose a smaller font size."
        )
    return (
        f"At {size:g} pt the legend ({widths(settings.legend, size):.0f} pt) and the Bates "
        f"number ({label_width:.0f} pt) do not both fit within the margins of an A4 page "
        f"({FIT_WIDTH:.0f} pt wide); shorten the legend, choose a smaller font size, or put "
        "the legend at the top."
    )


def _overlap(a: Box, b: Sequence[float]) -> bool:
    """Whether two boxes share an area (as `pymupdf.Rect.intersects`: empty boxes never do)."""
    return (
        b[0] < a[2] and a[0] < b[2] and b[1] < a[3] and a[1] < b[3] and b[0] < b[2] and b[1] < b[3]
    )


def _collides(
    original: pymupdf.Document,
    index: int,
    stamps: list[_Stamp],
    known: Sequence[Sequence[float]] | None,
) -> bool:
    """Whether any stamp area (plus clearance) touches text already on page `index`: the boxes
    known from ingest, else the page's own text.

    `original` must be the ORIGINAL document: extracting text from a page of the volume being
    written makes MuPDF's later writes to it several times slower.
    """
    areas = [
        (s.rect[0] - _PAD, s.rect[1] - _PAD, s.rect[2] + _PAD, s.rect[3] + _PAD) for s in stamps
    ]
    if known is not None:
        return any(_overlap(area, box) for box in known for area in areas)
    band = pymupdf.Rect(areas[0])
    for area in areas[1:]:
        band |= area
    # One text extraction per page, clipped to the band that holds every stamp.
    for x0, y0, x1, y1, word, *_ in original[index].get_text("words", clip=band):
        if word.strip() and any(_overlap(area, (x0, y0, x1, y1)) for area in areas):
            return True
    return False


def _shrink_into(
    out: pymupdf.Document, index: int, source: pymupdf.Document, source_index: int, reserve: float
) -> tuple[float, float, float]:
    """Replace page `index` of `out` by the same content scaled to leave `reserve` points free
    at the top and bottom (where stamps go). Returns the (scale, dx, dy) that maps a point of
    the original page to the new one."""
    rect = source[source_index].rect
    out.delete_page(index)
    page = out.new_page(pno=index, width=rect.width, height=rect.height)
    scale = (rect.height - 2 * reserve) / rect.height
    width = rect.width * scale
    target = pymupdf.Rect(
        (rect.width - width) / 2, reserve, (rect.width + width) / 2, rect.height - reserve
    )
    page.show_pdf_page(target, source, source_index)
    return scale, target.x0, target.y0


def stamp_first_page(source: Source, settings: StampSettings) -> pymupdf.Document:
    """Page 1 of `source`, stamped exactly as `stamp_volume` stamps it (number
    `source.first_number`, legend, shrink-to-margin, OCR layer), as a one-page document in
    memory: the stamp preview. Nothing is written; the caller closes the document."""
    out = pymupdf.open()
    try:
        with _open(source, first_only=True) as original:
            if original.page_count > 1:
                original.select([0])
            _Writer(settings).append(out, original, source)
    except Exception:
        out.close()
        raise
    return out


# The volume is written to disk every this many pages and reopened: MuPDF keeps every object
# of an open document in memory, and a 10,000-page volume would otherwise need gigabytes.
FLUSH_EVERY_PAGES = 500


def stamp_volume(
    sources: Sequence[Source],
    settings: StampSettings,
    out_path: Path,
    on_page: Callable[[int], None] = lambda done: None,
) -> int:
    """Write the merged, stamped volume to `out_path`; returns its page count.

    Page k of source s gets number `s.first_number + k`, or with a page suffix number
    `s.first_number` and suffix k + 1. `on_page(pages_done)` reports progress.
    The file is saved in increments (see FLUSH_EVERY_PAGES), so memory stays flat.
    """
    writer = _Writer(settings)
    done = unsaved = 0
    saved_once = False
    out = pymupdf.open()
    try:
        for source in sources:
            with _open(source) as original:
                writer.append(out, original, source)
                pages = original.page_count
            done += pages
            unsaved += pages
            on_page(done)
            if unsaved >= FLUSH_EVERY_PAGES:
                out = _flush(out, out_path, saved_once)
                saved_once, unsaved = True, 0
        if saved_once:
            out.saveIncr()
        else:
            out.save(out_path, garbage=1, deflate=True)
    finally:
        out.close()
    return done


def _flush(out: pymupdf.Document, path: Path, saved_once: bool) -> pymupdf.Document:
    if saved_once:
        out.saveIncr()
    else:
        out.save(path, deflate=True)  # no garbage collection: object numbers stay as they are
    out.close()
    return pymupdf.open(path)


def _pdf_string(text: str) -> bytes:
    """`text` (Windows-1252) as a PDF literal string."""
    raw = text.encode("cp1252")
    return b"(" + raw.replace(b"\\", b"\\\\").replace(b"(", b"\\(").replace(b")", b"\\)") + b")"


def _cp1252(text: str) -> bool:
    try:
        text.encode("cp1252")
    except UnicodeEncodeError:
        return False
    return True


def _num(value: float) -> str:
    return f"{value:.3f}".rstrip("0").rstrip(".") or "0"


class _Writer:
    """Writes stamps and OCR text layers into the pages of one volume. The font objects are
    made once per volume (the OCR font only when a page needs it) and found again by object
    number after the volume is flushed and reopened."""

    def __init__(self, settings: StampSettings) -> None:
        self.settings = settings
        self.font = pymupdf.Font("helv")
        self.widths = _Widths(self.font)
        self.legend_fast = _cp1252(settings.legend)
        self.stamp_font = 0  # object numbers, 0 until made
        self.ocr_font = 0
        self.open_q = 0

    def append(self, out: pymupdf.Document, original: pymupdf.Document, source: Source) -> None:
        settings = self.settings
        reserve = settings.margin + settings.font_size * 1.6
        start = out.page_count
        out.insert_pdf(original)
        pdf = mupdf.pdf_document_from_fz_document(out.this)
        layers = source.layers()
        for k in range(original.page_count):
            index = start + k
            page_obj = mupdf.pdf_lookup_page_obj(pdf, index)
            box, ctm = mupdf.FzRect(), mupdf.FzMatrix()
            mupdf.pdf_page_obj_transform(page_obj, box, ctm)
            bounds = mupdf.fz_transform_rect(box, ctm)
            stamps = _stamps(
                bounds.x1 - bounds.x0,
                bounds.y1 - bounds.y0,
                settings,
                self.widths,
                settings.page_label(source.first_number, k),
            )
            # Point of the original page -> point of the volume's page (shrunk pages move).
            place = (1.0, 0.0, 0.0)
            if _collides(original, k, stamps, source.known_boxes.get(k)):
                place = _shrink_into(out, index, original, k, reserve)
                page_obj = mupdf.pdf_lookup_page_obj(pdf, index)
                mupdf.pdf_page_obj_transform(page_obj, box, ctm)
            # Our drawing is in the page's top-left space; the PDF's is the inverse of ctm.
            inverse = mupdf.fz_invert_matrix(ctm)
            to_pdf = (inverse.a, inverse.b, inverse.c, inverse.d, inverse.e, inverse.f)
            content = [self._stamp_content(pdf, stamps, to_pdf)]
            layer = layers.get(k)
            if layer is not None:
                content.append(self._ocr_content(pdf, layer, place, to_pdf))
            self._add_content(pdf, page_obj, b"".join(content))
            if not self.legend_fast and settings.legend:
                self._legend_with_textwriter(out, index, stamps[-1])

    # --- fonts ----------------------------------------------------------------------------

    def _ref(self, pdf: mupdf.PdfDocument, number: int) -> mupdf.PdfObj:
        return mupdf.pdf_new_indirect(pdf, number, 0)

    def _stamp_font_ref(self, pdf: mupdf.PdfDocument) -> mupdf.PdfObj:
        if not self.stamp_font:
            made = mupdf.pdf_add_simple_font(pdf, self.font.this, mupdf.PDF_SIMPLE_ENCODING_LATIN)
            self.stamp_font = mupdf.pdf_to_num(made)
        return self._ref(pdf, self.stamp_font)

    def _open_q_ref(self, pdf: mupdf.PdfDocument) -> mupdf.PdfObj:
        if not self.open_q:
            made = mupdf.pdf_add_stream(
                pdf, mupdf.fz_new_buffer_from_copied_data(b"q\n"), mupdf.PdfObj(), 0
            )
            self.open_q = mupdf.pdf_to_num(made)
        return self._ref(pdf, self.open_q)

    def _ocr_font_ref(self, pdf: mupdf.PdfDocument) -> mupdf.PdfObj:
        if not self.ocr_font:
            self.ocr_font = _glyphless_font(pdf)
        return self._ref(pdf, self.ocr_font)

    # --- content --------------------------------------------------------------------------

    def _stamp_content(self, pdf: mupdf.PdfDocument, stamps: list[_Stamp], to_pdf: Matrix) -> bytes:
        size = self.settings.font_size
        self._stamp_font_ref(pdf)
        a, b, c, d, e, f = to_pdf
        parts = [b"BT 0 g 0 Tr /", _STAMP_FONT.encode(), b" ", _num(size).encode(), b" Tf\n"]
        for n, stamp in enumerate(stamps):
            if n == 1 and not self.legend_fast:
                continue  # written with TextWriter
            x, y = stamp.rect[0], stamp.rect[3] - size * 0.25  # the baseline's start
            # [1 0 0 -1 x y] (glyph space -> page space, y down) times to_pdf.
            parts.append(
                f"{_num(a)} {_num(b)} {_num(-c)} {_num(-d)} "
                f"{_num(x * a + y * c + e)} {_num(x * b + y * d + f)} Tm ".encode()
            )
            parts.append(_pdf_string(stamp.text))
            parts.append(b" Tj\n")
        parts.append(b"ET\n")
        return b"".join(parts)

    def _ocr_content(
        self,
        pdf: mupdf.PdfDocument,
        layer: OcrLayer,
        place: tuple[float, float, float],
        to_pdf: Matrix,
    ) -> bytes:
        words = _layer_words(layer, place)
        if not words:
            return b""
        self._ocr_font_ref(pdf)
        a, b, c, d, e, f = to_pdf
        lines = [b"BT 3 Tr /", _OCR_FONT.encode(), b" 1 Tf\n"]
        for text, x0, y0, x1, y1 in words:
            height = y1 - y0
            # Glyph-less font: every code is 0.5 em wide, ascent 0.8, descent 0.2. Scale the
            # run to the box: width to the box's, 1 em to its height, baseline 0.2 em up.
            sx = (x1 - x0) / (0.5 * len(text))
            sy = height
            bx, by = x0, y1 - 0.2 * height
            # [sx 0 0 -sy bx by] (glyph -> page, y down) times to_pdf.
            lines.append(
                f"{sx * a:.3f} {sx * b:.3f} {-sy * c:.3f} {-sy * d:.3f} {bx * a + by * c + e:.2f} "
                f"{bx * b + by * d + f:.2f} Tm <{text.encode('utf-16-be').hex()}> Tj\n".encode()
            )
        lines.append(b"ET\n")
        return b"".join(lines)

    def _add_content(self, pdf: mupdf.PdfDocument, page_obj: mupdf.PdfObj, body: bytes) -> None:
        """Append `body` to the page, after the page's own content wrapped in q ... Q, with
        the fonts it names in the page's resources."""
        resources = mupdf.pdf_dict_get(page_obj, mupdf.PDF_ENUM_NAME_Resources)
        if not resources.m_internal:
            inherited = mupdf.pdf_dict_get_inheritable(page_obj, mupdf.PDF_ENUM_NAME_Resources)
            resources = (
                mupdf.pdf_copy_dict(inherited)
                if inherited.m_internal
                else mupdf.pdf_new_dict(pdf, 2)
            )
            mupdf.pdf_dict_put(page_obj, mupdf.PDF_ENUM_NAME_Resources, resources)
        fonts = mupdf.pdf_dict_get(resources, mupdf.PDF_ENUM_NAME_Font)
        if not fonts.m_internal:
            fonts = mupdf.pdf_dict_put_dict(resources, mupdf.PDF_ENUM_NAME_Font, 2)
        mupdf.pdf_dict_puts(fonts, _STAMP_FONT, self._ref(pdf, self.stamp_font))
        if self.ocr_font:
            mupdf.pdf_dict_puts(fonts, _OCR_FONT, self._ref(pdf, self.ocr_font))
        stream = mupdf.pdf_add_stream(
            pdf, mupdf.fz_new_buffer_from_copied_data(b"Q\n" + body), mupdf.PdfObj(), 0
        )
        # A new array of the page's own: an original's contents (a stream or an array) may be
        # shared with its other pages, and each page gets its own stamps.
        contents = mupdf.pdf_dict_get(page_obj, mupdf.PDF_ENUM_NAME_Contents)
        array = mupdf.pdf_new_array(pdf, 3)
        mupdf.pdf_array_push(array, self._open_q_ref(pdf))
        if mupdf.pdf_is_array(contents):
            for n in range(mupdf.pdf_array_len(contents)):
                mupdf.pdf_array_push(array, mupdf.pdf_array_get(contents, n))
        elif contents.m_internal:
            mupdf.pdf_array_push(array, contents)
        mupdf.pdf_array_push(array, stream)
        mupdf.pdf_dict_put(page_obj, mupdf.PDF_ENUM_NAME_Contents, array)

    def _legend_with_textwriter(self, out: pymupdf.Document, index: int, stamp: _Stamp) -> None:
        page = out[index]
        writer = pymupdf.TextWriter(page.rect)
        size = self.settings.font_size
        writer.append(
            (stamp.rect[0], stamp.rect[3] - size * 0.25), stamp.text, font=self.font, fontsize=size
        )
        writer.write_text(page)


def _layer_words(
    layer: OcrLayer, place: tuple[float, float, float]
) -> list[tuple[str, float, float, float, float]]:
    """The layer's usable words as (text, x0, y0, x1, y1) in points of the volume's page:
    malformed entries, empty words and empty or non-finite boxes are skipped, characters
    outside the Basic Multilingual Plane read as U+FFFD, and at most MAX_LAYER_WORDS kept."""
    try:
        dpi = float(layer.dpi)
    except (TypeError, ValueError):
        return []
    if not math.isfinite(dpi) or dpi <= 0:
        return []
    scale, dx, dy = place
    k = 72.0 / dpi * scale
    words: list[tuple[str, float, float, float, float]] = []
    for word in layer.words:
        if len(words) >= MAX_LAYER_WORDS:
            logger.warning(
                "An OCR page has more than %s words; the rest are left out of its text layer",
                MAX_LAYER_WORDS,
            )
            break
        try:
            text, left, top, width, height = word[0], *map(float, word[1:5])
        except (TypeError, ValueError, IndexError):
            continue
        if not isinstance(text, str):
            continue
        text = text.strip()
        if not (text.isprintable() and max(text, default="") < "\ud800"):  # else char by char
            text = "".join(
                ch if ord(ch) < 0x10000 and not 0xD800 <= ord(ch) < 0xE000 else "\ufffd"
                for ch in text
                if ch.isprintable()
            )
        if not text or not all(map(math.isfinite, (left, top, width, height))):
            continue
        if width <= 0 or height <= 0:
            continue
        words.append(
            (text, dx + left * k, dy + top * k, dx + (left + width) * k, dy + (top + height) * k)
        )
    return words


# A TrueType font of one blank glyph, 0.5 em wide (ascent 0.8, descent 0.2), made with
# fontTools' FontBuilder: what the invisible OCR text is set in.
_GLYPHLESS_TTF = base64.b64decode(
    "AAEAAAAKAIAAAwAgT1MvMkUAQ7AAAAEoAAAAYGNtYXAADABzAAABkAAAADRnbHlmAAAAAAAAAcwAAAABaGVhZC2Ao14A"
    "AACsAAAANmhoZWEDIgEuAAAA5AAAACRobXR4AfQAAAAAAYgAAAAGbG9jYQAAAAAAAAHEAAAABm1heHAAAwACAAABCAAA"
    "ACBuYW1lGZ8ZNAAAAdAAAABycG9zdAAHAAAAAAJEAAAAJgABAAAAAQAAgwCZMl8PPPUAAwPoAAAAAOc1MT8AAAAA5zUx"
    "PwAAAAAAAAAAAAAAAwACAAAAAAAAAAEAAAMg/zgAAAH0AAAAAAAAAAEAAAAAAAAAAAAAAAAAAAABAAEAAAACAAAAAAAA"
    "AAAAAgAAAAAAAAAAAAAAAAAAAAAAAwH0AZAABQAEAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABAAAA"
    "AAAAAAAAAAAAPz8/PwAAACAAIAMg/zgAAAMgAMgAAAAAAAAAAAAAAAAAAAAgAAAB9AAAAAAAAAAAAAIAAAADAAAAFAAD"
    "AAEAAAAUAAQAIAAAAAQABAABAAAAIP//AAAAIP///+EAAQAAAAAAAAAAAAAAAAAAAAAAAAAEADYAAQAAAAAAAQANAAAA"
    "AQAAAAAAAgAHAA0AAwABBAkAAQAaABQAAwABBAkAAgAOAC5HbHlwaExlc3NGb250UmVndWxhcgBHAGwAeQBwAGgATABl"
    "AHMAcwBGAG8AbgB0AFIAZQBnAHUAbABhAHIAAAACAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIAAAADAAA="
)


def _to_unicode_cmap() -> bytes:
    """Each two-byte code is the UTF-16 code unit it stands for (surrogates excepted)."""
    ranges = [
        f"<{hi:02X}00> <{hi:02X}FF> <{hi:02X}00>" for hi in range(256) if not 0xD8 <= hi < 0xE0
    ]
    body = []
    for n in range(0, len(ranges), 100):  # at most 100 entries per block
        chunk = ranges[n : n + 100]
        body.append(f"{len(chunk)} beginbfrange\n" + "\n".join(chunk) + "\nendbfrange")
    return (
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n"
        "/CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n"
        "/CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n"
        "1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n"
        + "\n".join(body)
        + "\nendcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n"
    ).encode()


def _glyphless_font(pdf: mupdf.PdfDocument) -> int:
    """Add the invisible text's Type0 font (Identity-H, every code drawn with the one blank
    glyph) to `pdf`; returns its object number."""

    def stream(data: bytes, extra: str = "") -> int:
        obj = mupdf.pdf_add_stream(
            pdf,
            mupdf.fz_new_buffer_from_copied_data(data),
            mupdf.pdf_new_dict(pdf, 1) if not extra else _parse(pdf, extra),
            0,
        )
        return mupdf.pdf_to_num(obj)

    font_file = stream(_GLYPHLESS_TTF, f"<</Length1 {len(_GLYPHLESS_TTF)}>>")
    cid_to_gid = stream(b"\x00\x01" * 65536)  # every code -> glyph 1
    to_unicode = stream(_to_unicode_cmap())
    descriptor = _add(
        pdf,
        f"<</Type/FontDescriptor/FontName/GlyphLessFont/Flags 5/FontBBox[0 -200 500 800]"
        f"/ItalicAngle 0/Ascent 800/Descent -200/CapHeight 800/StemV 80"
        f"/FontFile2 {font_file} 0 R>>",
    )
    cid_font = _add(
        pdf,
        "<</Type/Font/Subtype/CIDFontType2/BaseFont/GlyphLessFont"
        "/CIDSystemInfo<</Registry(Adobe)/Ordering(Identity)/Supplement 0>>"
        f"/FontDescriptor {descriptor} 0 R/DW 500/CIDToGIDMap {cid_to_gid} 0 R>>",
    )
    return _add(
        pdf,
        "<</Type/Font/Subtype/Type0/BaseFont/GlyphLessFont/Encoding/Identity-H"
        f"/DescendantFonts[{cid_font} 0 R]/ToUnicode {to_unicode} 0 R>>",
    )


def _parse(pdf: mupdf.PdfDocument, source: str) -> mupdf.PdfObj:
    stream = mupdf.fz_open_buffer(mupdf.fz_new_buffer_from_copied_data(source.encode()))
    return mupdf.pdf_parse_stm_obj(pdf, stream, mupdf.PdfLexbuf(mupdf.PDF_LEXBUF_SMALL))


def _add(pdf: mupdf.PdfDocument, source: str) -> int:
    return mupdf.pdf_to_num(mupdf.pdf_add_object(pdf, _parse(pdf, source)))
