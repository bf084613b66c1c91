"""Word boxes of the words a finding matched on its frozen page, in PDF points from the page's
top left ([x0, y0, x1, y1], one per word), for the viewer to draw.

The snapshot keeps a page's text, not its words, so the words come from where the text came
from, and only while they still give exactly that text:
1. OCR pages: the document page's OCR words (pixels at its OCR dpi, scaled to points), used
   only while the page's text is the frozen text (same SHA-256).
2. Text-layer pages: the words of the original PDF's text layer (the blob is content-addressed
   and never changes), used only while that page's text still reads as the frozen text.
3. Each word is found in the page text in order; the words overlapping the match are boxed.
Anything else (a text file, a page re-read since freezing, an unreadable blob) has no boxes.
"""

import hashlib
from collections.abc import Sequence

import pymupdf

from apps.documents import storage
from apps.documents.models import Page
from apps.evidence.models import FrozenPage

Box = list[float]
_Word = tuple[str, float, float, float, float]  # token, x0, y0, x1, y1 in points


def word_spans(text: str, tokens: Sequence[str]) -> list[tuple[int, int] | None]:
    """Where each token is in `text`, searching on from the previous one (None: not found)."""
    spans: list[tuple[int, int] | None] = []
    cursor = 0
    for token in tokens:
        at = text.find(token, cursor) if token else -1
        if at < 0:
            spans.append(None)
            continue
        spans.append((at, at + len(token)))
        cursor = at + len(token)
    return spans


def boxes_in(text: str, words: Sequence[_Word], match: tuple[int, int]) -> list[Box]:
    start, end = match
    spans = word_spans(text, [word[0] for word in words])
    return [
        [round(v, 1) for v in word[1:]]
        for word, span in zip(words, spans, strict=True)
        if span is not None and span[0] < end and span[1] > start
    ]


def _ocr_words(page: FrozenPage) -> list[_Word] | None:
    live = (
        Page.objects.filter(document_id=page.document_id, number=page.page_number)
        .values_list("text", "words", "ocr_dpi")
        .first()
    )
    if (
        live is None
        or not live[2]
        or hashlib.sha256(live[0].encode()).hexdigest() != (page.text_sha256)
    ):
        return None
    scale = 72.0 / live[2]
    return [
        (
            str(w[0]),
            float(w[1]) * scale,
            float(w[2]) * scale,
            (float(w[1]) + float(w[3])) * scale,
            (float(w[2]) + float(w[4])) * scale,
        )
        for w in live[1]
    ]


class _Pdfs:
    """Open PDFs of one run, by blob digest (each opened once)."""

    def __init__(self) -> None:
        self.open: dict[str, pymupdf.Document | None] = {}

    def words(self, page: FrozenPage) -> list[_Word] | None:
        sha = page.document.blob.sha256
        if sha not in self.open:
            try:
                with storage.blob_open(sha) as source:
                    self.open[sha] = pymupdf.open(stream=source.read(), filetype="pdf")
            except (OSError, RuntimeError, ValueError):
                self.open[sha] = None
        pdf = self.open[sha]
        if pdf is None or not 0 < page.page_number <= pdf.page_count:
            return None
        textpage = pdf[page.page_number - 1].get_textpage(flags=pymupdf.TEXTFLAGS_TEXT)
        if textpage.extractText().strip() != page.text:
            return None
        return [(str(w[4]), *(float(v) for v in w[:4])) for w in textpage.extractWORDS()]  # type: ignore[misc]  # a 5-tuple

    def close(self) -> None:
        for pdf in self.open.values():
            if pdf is not None:
                pdf.close()


def match_boxes(
    pages_and_matches: Sequence[tuple[FrozenPage, tuple[int, int]]],
) -> list[list[Box]]:
    """The boxes of each (page, match) pair (pages with `document__blob` selected)."""
    pdfs = _Pdfs()
    words: dict[int, list[_Word] | None] = {}
    try:
        out = []
        for page, match in pages_and_matches:
            if page.pk not in words:
                if page.source == Page.Source.OCR:
                    words[page.pk] = _ocr_words(page)
                elif page.source == Page.Source.TEXT_LAYER:
                    words[page.pk] = pdfs.words(page)
                else:
                    words[page.pk] = None
            found = words[page.pk]
            out.append(boxes_in(page.text, found, match) if found else [])
        return out
    finally:
        pdfs.close()
