"""Merge originals and Bates-stamp every page: a deterministic PDF transform (no database).

Speed: the stamps are written with one `TextWriter` per page and a font made once, which is
about nine times cheaper than `Page.insert_text` (that re-balances the page's content stream
on every call); originals are copied in one `insert_pdf` per document.

"Never over existing text": before stamping, the stamp areas are checked against the page's
text (the text layer, or the OCR word boxes of scanned pages). Where they collide, the page's
content is shrunk into the rest of the page, leaving the margin free for the stamps.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pymupdf

TRANSFORM = "bates-stamp/1"
_PAD = 2.0  # points of clearance around a stamp


@dataclass(frozen=True)
class StampSettings:
    prefix: str
    digits: int
    position: str = "bottom_right"
    legend: str = ""
    legend_position: str = "bottom_left"
    font_size: float = 9.0
    margin: float = 18.0

    def label(self, number: int) -> str:
        return f"{self.prefix}{number:0{self.digits}d}"


@dataclass(frozen=True)
class Source:
    """One original: a PDF or an image file and its first Bates number. `known_boxes` holds, by
    0-based page index, the word boxes (points) in the page's margins as recorded at ingest;
    pages not in it are read here to find them."""

    path: Path
    kind: str
    first_number: int
    known_boxes: dict[int, list[pymupdf.Rect]] = field(default_factory=dict)


def _open(source: Source) -> pymupdf.Document:
    if source.kind == "pdf":
        return pymupdf.open(source.path, filetype="pdf")
    # Images (multi-page TIFF included) become one PDF page per frame at their own size.
    with pymupdf.open(source.path) as image:
        return pymupdf.open("pdf", image.convert_to_pdf())


def _stamp_rect(
    page_rect: pymupdf.Rect, position: str, width: float, size: float, margin: float
) -> pymupdf.Rect:
    bottom = position.startswith("bottom")
    y1 = page_rect.height - margin if bottom else margin + size
    if position.endswith("right"):
        x0 = page_rect.width - margin - width
    elif position.endswith("left"):
        x0 = margin
    else:
        x0 = (page_rect.width - width) / 2
    return pymupdf.Rect(x0, y1 - size, x0 + width, y1 + size * 0.25)


@dataclass
class _Stamp:
    text: str
    rect: pymupdf.Rect


def _stamps(
    page_rect: pymupdf.Rect, settings: StampSettings, font: pymupdf.Font, number: int
) -> list[_Stamp]:
    size, margin = settings.font_size, settings.margin
    label = settings.label(number)
    stamps = [
        _Stamp(
            label,
            _stamp_rect(page_rect, settings.position, font.text_length(label, size), size, margin),
        )
    ]
    if settings.legend:
        width = font.text_length(settings.legend, size)
        stamps.append(
            _Stamp(
                settings.legend,
                _stamp_rect(page_rect, settings.legend_position, width, size, margin),
            )
        )
    return stamps


def _collides(page: pymupdf.Page, stamps: list[_Stamp], known: list[pymupdf.Rect] | None) -> bool:
    """Whether any stamp area (plus clearance) touches text already on `page`: the boxes known
    from ingest, else the page's own text.

    `page` must be the ORIGINAL's page: extracting text from a page of the volume being written
    makes MuPDF's later writes to it several times slower.
    """
    areas = [
        pymupdf.Rect(s.rect.x0 - _PAD, s.rect.y0 - _PAD, s.rect.x1 + _PAD, s.rect.y1 + _PAD)
        for s in stamps
    ]
    if known is not None:
        return any(area.intersects(box) for area in areas for box in known)
    band = pymupdf.Rect(areas[0])
    for area in areas[1:]:
        band |= area
    # One text extraction per page, clipped to the band that holds every stamp.
    for x0, y0, x1, y1, word, *_ in page.get_text("words", clip=band):
        if word.strip() and any(area.intersects((x0, y0, x1, y1)) for area in areas):
            return True
    return False


def _shrink_into(
    out: pymupdf.Document, index: int, source: pymupdf.Document, source_index: int, reserve: float
) -> pymupdf.Page:
    """Replace page `index` of `out` by the same content scaled to leave `reserve` points free
    at the top and bottom (where stamps go)."""
    original = out[index]
    rect = original.rect
    out.delete_page(index)
    page = out.new_page(pno=index, width=rect.width, height=rect.height)
    scale = (rect.height - 2 * reserve) / rect.height
    width = rect.width * scale
    target = pymupdf.Rect(
        (rect.width - width) / 2, reserve, (rect.width + width) / 2, rect.height - reserve
    )
    page.show_pdf_page(target, source, source_index)
    return page


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

    Page k of source s gets number `s.first_number + k`. `on_page(pages_done)` reports progress.
    The file is saved in increments (see FLUSH_EVERY_PAGES), so memory stays flat.
    """
    font = pymupdf.Font("helv")
    done = unsaved = 0
    saved_once = False
    out = pymupdf.open()
    try:
        for source in sources:
            with _open(source) as original:
                _append_stamped(out, original, source, settings, font)
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
        out.save(path, deflate=True)
    out.close()
    return pymupdf.open(path)


def _append_stamped(
    out: pymupdf.Document,
    original: pymupdf.Document,
    source: Source,
    settings: StampSettings,
    font: pymupdf.Font,
) -> None:
    reserve = settings.margin + settings.font_size * 1.6
    start = out.page_count
    out.insert_pdf(original)
    for k in range(original.page_count):
        page = out[start + k]
        stamps = _stamps(page.rect, settings, font, source.first_number + k)
        if _collides(original[k], stamps, source.known_boxes.get(k)):
            page = _shrink_into(out, start + k, original, k, reserve)
        writer = pymupdf.TextWriter(page.rect)
        for stamp in stamps:
            baseline = (stamp.rect.x0, stamp.rect.y1 - settings.font_size * 0.25)
            writer.append(baseline, stamp.text, font=font, fontsize=settings.font_size)
        writer.write_text(page)
