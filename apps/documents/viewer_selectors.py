"""Reads for the document viewer: one page and what surrounds it (thumbnails, the document's
Bates ranges, the page's stamped versions, the previous and next document), and where a
search's words sit on a page. Every read starts from the user's case memberships (through
`selectors`) and is audited there."""

import re
from dataclasses import dataclass
from pathlib import Path

import pymupdf
from django.db import connection
from django.db.models import Q
from PIL import Image

from apps.accounts.models import User
from apps.cases import selectors as case_selectors
from apps.documents import list_forms, rendering, selectors, storage
from apps.documents.extraction import _own_dpi
from apps.documents.lineage_selectors import Link
from apps.documents.list_forms import DocumentListQuery
from apps.documents.models import (
    BatesPage,
    Document,
    Page,
    Production,
    ProductionDocument,
    Rendition,
)
from lexweb.errors import DomainError, NotFound

THUMBS_AROUND = 30  # thumbnails shown each side of the current page
CONTEXT_HITS = 200  # search hits read to find the previous and next document of a search
MAX_PAGE_WORDS = 20_000  # words of one page compared with the query; the rest are not
MAX_BOXES = 300  # boxes in one answer (each about 30 bytes of JSON)
MAX_QUERY_TERMS = 32
MAX_RENDERED_TEXT = 100_000  # characters of a rendered page's own text shown beside it
FIND_PAGES = 500  # rendered pages searched for the page holding a search's first match
FIND_CHARACTERS = 2_000_000  # characters of those pages' text searched, at most

# A negated word or phrase (`-word`, `-"a phrase"`) is never a hit to draw.
_NEGATED = re.compile(r'(?:^|\s)-(?:"[^"]*"?|\S+)')
_OR = re.compile(r"(?i)(?:^|\s)or(?=\s|$)")


@dataclass(frozen=True)
class BatesRange:
    production_id: int
    volume: str
    begin: str
    end: str
    status: str


@dataclass(frozen=True)
class StampedPage:
    """Page `production_page` of production `volume`'s stamped PDF, which carries `bates`."""

    production_id: int
    volume: str
    bates: str
    volume_document_id: int
    production_page: int


@dataclass(frozen=True)
class Neighbour:
    document_id: int
    filename: str
    page: int  # where to open it: the best hit of the search, else 1


def document_has_page_images(document: Document, number: int = 1) -> bool:
    """Whether page `number` has an image at the page-image endpoint: PDFs and images always;
    the kinds rendered to PDF (text, e-mail, Word, Excel, Outlook) once their rendition is
    ready and has that page. The one test of it: the viewer, its hit boxes and the drafting
    finding panel all ask here."""
    if document.kind in (Document.Kind.PDF, Document.Kind.IMAGE):
        return True
    rendition = selectors.rendition_for(document)
    return (
        rendition is not None
        and rendition.status == Rendition.Status.READY
        and rendition.output is not None
        and 1 <= number <= rendition.page_count
    )


def rendered_page_size(document: Document, number: int) -> tuple[float, float] | None:
    """Page `number` of the document's ready rendition: its width and height in PDF points;
    None without one, past its pages, or when the PDF cannot be read."""
    rendition = _ready_rendition(document)
    if rendition is None or rendition.output is None or not 1 <= number <= rendition.page_count:
        return None
    try:
        with pymupdf.open(storage.blob_path(rendition.output.sha256), filetype="pdf") as pdf:
            rect = pdf[number - 1].rect
    except (OSError, RuntimeError, ValueError, IndexError):
        return None
    return (round(rect.width, 2), round(rect.height, 2))


def _ready_rendition(document: Document) -> Rendition | None:
    rendition = selectors.rendition_for(document)
    if rendition is None or rendition.status != Rendition.Status.READY or rendition.output is None:
        return None
    return rendition


@dataclass(frozen=True)
class ViewerPage:
    document: Document
    # The stored page `number` (its text, source, Bates). None while no page is stored yet,
    # and for pages 2.. of a rendered document (a text file stores its text as one page).
    page: Page | None
    number: int  # the page shown
    page_count: int  # pages to move through: the rendition's when ready, else those stored
    # A ready rendition's page text, read from its PDF (what the image shows), at most
    # MAX_RENDERED_TEXT characters, when it has more than one page; None otherwise (the
    # stored page's text is shown).
    rendered_text: str | None
    rendered_text_truncated: bool
    rendition_state: str  # why a rendered kind has no images yet ("being rendered"...), or ""
    shown: bool  # a page to show (False: the document has no pages yet)
    thumbs: list[int]  # page numbers of the thumbnail strip
    ranges: list[BatesRange]
    stamped: list[StampedPage]
    previous: Neighbour | None
    next: Neighbour | None
    search_context: bool  # previous/next follow the search `query`, not the case's order


def viewer_page_for_user(
    *,
    user: User,
    case_id: int,
    document_id: int,
    number: int,
    query: str = "",
    list_query: DocumentListQuery | None = None,
    at_first_hit: bool = False,
) -> ViewerPage:
    """Page `number` of the document for the viewer. NotFound for a document outside the
    user's cases or a page the document does not have (page 1 of a document with no pages
    yet is the empty viewer). `query`: the search the user came from; previous and next
    document then follow its hits, else the review list's filters and sort `list_query` (by
    default the case's documents, newest first). `at_first_hit`: open the page holding the
    query's first match instead of `number`: for a rendered document the first rendered page
    whose text matches (see rendered_page_of_first_hit), else `number`.
    Audited as one view of the document."""
    document = selectors.document_get_for_user(user=user, case_id=case_id, document_id=document_id)
    if at_first_hit and query.strip() and document.kind in rendering.RENDERED_KINDS:
        number = rendered_page_of_first_hit(document, query)
    pages = selectors.page_list_for_user(user=user, case_id=case_id, document_id=document.pk)
    stored = pages.count()
    rendition = _ready_rendition(document)
    count = rendition.page_count if rendition else stored
    page = pages.filter(number=number).first()
    shown = page is not None or (rendition is not None and 1 <= number <= count)
    if not shown and not (number == 1 and stored == 0):
        raise NotFound(f"No page {number} in this document (it has {count}).")
    # A one-page rendition shows the whole stored text (exact, as the file has it); past one
    # page, each page's own text read from the rendition (what its image shows).
    many = rendition is not None and rendition.page_count > 1
    text, truncated = _rendered_text(rendition, number) if rendition and many else (None, False)
    low, high = max(1, number - THUMBS_AROUND), min(count, number + THUMBS_AROUND)
    previous, following, in_search = _neighbours(
        user=user, document=document, query=query, list_query=list_query
    )
    return ViewerPage(
        document=document,
        page=page,
        number=number,
        page_count=count,
        rendered_text=text,
        rendered_text_truncated=truncated,
        rendition_state=_rendition_state(document),
        shown=shown,
        thumbs=list(range(low, high + 1)),
        ranges=_ranges(document),
        stamped=_stamped(document, number),
        previous=previous,
        next=following,
        search_context=in_search,
    )


def _rendition_state(document: Document) -> str:
    """For a rendered kind without page images, why: "being rendered", "rendering failed:
    <reason>", "rendering unavailable: <reason>", "not rendered yet"; "" otherwise."""
    if document.kind not in rendering.RENDERED_KINDS:
        return ""
    rendition = selectors.rendition_for(document)
    if rendition is None:
        return "not rendered yet"
    if rendition.status in (Rendition.Status.QUEUED, Rendition.Status.PROCESSING):
        return "being rendered"
    if rendition.status == Rendition.Status.READY and rendition.output is not None:
        return ""
    return rendition.label


def _rendered_text(rendition: Rendition, number: int) -> tuple[str | None, bool]:
    """Page `number`'s own text in the rendition's PDF, at most MAX_RENDERED_TEXT characters
    (and whether there was more); None past its pages."""
    if rendition.output is None:  # never for a ready one (a constraint)
        return None, False
    path = storage.blob_path(rendition.output.sha256)
    with pymupdf.open(path, filetype="pdf") as pdf:
        if not 1 <= number <= pdf.page_count:
            return None, False
        text = pdf[number - 1].get_text("text")
    return text[:MAX_RENDERED_TEXT], len(text) > MAX_RENDERED_TEXT


def rendered_page_of_first_hit(document: Document, query: str) -> int:
    """The first page of the document's ready rendition whose own text the search `query`
    matches (PostgreSQL's websearch syntax and English configuration, as search matches the
    stored text); 1 when none does, the document has no ready rendition, or the query is not
    a valid search. Reads at most FIND_PAGES pages and FIND_CHARACTERS characters of them: a
    match past those opens page 1. For a document already read through a `_for_user`
    selector."""
    rendition = _ready_rendition(document)
    try:
        query = selectors.search_query_clean(query)
    except DomainError:
        return 1
    if rendition is None or rendition.output is None:
        return 1
    texts: list[str] = []
    budget = FIND_CHARACTERS
    with pymupdf.open(storage.blob_path(rendition.output.sha256), filetype="pdf") as pdf:
        for index in range(min(pdf.page_count, FIND_PAGES)):
            text = pdf[index].get_text("text").replace("\x00", "")[:budget]
            texts.append(text)
            budget -= len(text)
            if budget <= 0:
                break
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT i FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, i) "
            "WHERE to_tsvector(%s::regconfig, t) @@ websearch_to_tsquery(%s::regconfig, %s) "
            "ORDER BY i LIMIT 1",
            [texts, selectors.SEARCH_CONFIG, selectors.SEARCH_CONFIG, query],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 1


def _ranges(document: Document) -> list[BatesRange]:
    """The document's Bates range in each production that did not fail, oldest first."""
    rows = (
        ProductionDocument.objects.filter(document=document)
        .exclude(production__status=Production.Status.FAILED)
        .select_related("production")
        .order_by("production_id")
    )
    return [
        BatesRange(
            production_id=row.production_id,
            volume=row.production.volume,
            begin=row.production.item_bates(row)[0],
            end=row.production.item_bates(row)[1],
            status=row.production.status,
        )
        for row in rows
    ]


def _stamped(document: Document, number: int) -> list[StampedPage]:
    """Page `number` as stamped in each finished production, oldest first."""
    rows = (
        BatesPage.objects.filter(
            document=document,
            page_number=number,
            production__status=Production.Status.READY,
            production__volume_document__isnull=False,
        )
        .select_related("production")
        .order_by("production_id")
    )
    return [
        StampedPage(
            production_id=row.production_id,
            volume=row.production.volume,
            bates=row.production.bates(row.number, row.page_suffix),
            volume_document_id=row.production.volume_document_id or 0,
            production_page=row.production_page,
        )
        for row in rows
    ]


def _neighbours(
    *, user: User, document: Document, query: str, list_query: DocumentListQuery | None
) -> tuple[Neighbour | None, Neighbour | None, bool]:
    if query.strip():
        try:
            results = selectors.page_search_for_user(
                user=user, case_id=document.case_id, query=query, limit=CONTEXT_HITS
            )
        except DomainError:
            results = None
        if results is not None:
            order: dict[int, Neighbour] = {}
            for hit in results.hits:
                order.setdefault(
                    hit.document_id, Neighbour(hit.document_id, hit.filename, hit.page)
                )
            found = list(order.values())
            ids = [n.document_id for n in found]
            if document.pk in ids:
                at = ids.index(document.pk)
                before = found[at - 1] if at > 0 else None
                after = found[at + 1] if at + 1 < len(found) else None
                return before, after, True
    return (*_listed_neighbours(document, list_query or DocumentListQuery()), False)


def _listed_neighbours(
    document: Document, query: DocumentListQuery
) -> tuple[Neighbour | None, Neighbour | None]:
    """The documents before and after this one in the review list's filters and sort (the
    list's default: the case's documents, newest first). A document the filters leave out
    (say a withdrawn one) still has neighbours: those on either side of where it would be."""
    listed = selectors._review_filtered(document.case, query)  # the list's own filters
    field = list_forms.SORTS[query.sort.lstrip("-")]
    value = document.blob.size if field == "blob__size" else getattr(document, field)
    descending = query.sort.startswith("-")

    def beside(forward: bool) -> Neighbour | None:
        later = forward != descending  # forward in an ascending list: greater values
        op = "gt" if later else "lt"
        order = (field, "pk") if later else (f"-{field}", "-pk")
        found = (
            listed.filter(
                Q(**{f"{field}__{op}": value}) | Q(**{field: value, f"pk__{op}": document.pk})
            )
            .order_by(*order)
            .values_list("pk", "filename")
            .first()
        )
        return Neighbour(found[0], found[1], 1) if found else None

    return beside(forward=False), beside(forward=True)


# --- Where the search's words are on a page ------------------------------------------------


@dataclass(frozen=True)
class HitBoxes:
    """Boxes [x0, y0, x1, y1] of the page's words that match the query, as fractions of the
    page's width and height (so they fit the page image at any size). `truncated`: more words
    matched than MAX_BOXES, or the page has more than MAX_PAGE_WORDS words."""

    page: int
    source: str
    boxes: list[list[float]]
    truncated: bool


def page_hit_boxes_for_user(
    *, user: User, case_id: int, document_id: int, number: int, query: str
) -> HitBoxes:
    """The boxes of the words of page `number` that the search `query` matches, as
    PostgreSQL's English configuration matches them (stemmed: "contracts" finds "contract";
    negated words are not drawn). Words come from the stored OCR words, or from the PDF's text
    layer (PyMuPDF); for the rendered kinds (text, e-mail, Word, Excel, Outlook) with a ready
    rendition, from the text layer of the rendition's page `number` (which may be past the
    pages stored). A page without either has no boxes. Audited as a read of the page."""
    # Membership first (NotFound outside the user's cases); each branch audits the page read.
    document = selectors._document(
        case=selectors._case(user=user, case_id=case_id), document_id=document_id
    )
    if _ready_rendition(document) is not None:
        # The rendition's page: checked (it exists) and audited as its image is.
        image = selectors.page_image_source_for_user(
            user=user, case_id=case_id, document_id=document_id, number=number
        )
        words, truncated = _pdf_words(image.path, image.number)
        source = "rendition"
    else:
        page = selectors.page_get_for_user(
            user=user, case_id=case_id, document_id=document_id, number=number
        )
        words, truncated = _page_words(page, document)
        source = page.source
    query = selectors.search_query_clean(query)
    wanted = _lexemes([_terms(query)])[0]
    boxes: list[list[float]] = []
    if wanted and words:
        unique = sorted({text for text, _ in words})
        matching = {
            text for text, found in zip(unique, _lexemes(unique), strict=True) if found & wanted
        }
        for text, box in words:
            if text in matching:
                if len(boxes) == MAX_BOXES:
                    truncated = True
                    break
                boxes.append(box)
    return HitBoxes(page=number, source=source, boxes=boxes, truncated=truncated)


def _terms(query: str) -> str:
    """The query's wanted words as plain text: negations and `or` left out, quotes dropped."""
    kept = _OR.sub(" ", _NEGATED.sub(" ", query)).replace('"', " ")
    return " ".join(kept.split()[:MAX_QUERY_TERMS])


def _lexemes(texts: list[str]) -> list[set[str]]:
    """Each text's lexemes under the search configuration (stop words have none), in one
    statement."""
    if not texts:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT tsvector_to_array(to_tsvector(%s::regconfig, t)) "
            "FROM unnest(%s::text[]) WITH ORDINALITY AS u(t, i) ORDER BY i",
            [selectors.SEARCH_CONFIG, texts],
        )
        return [set(row[0]) for row in cursor.fetchall()]


def _page_words(page: Page, document: Document) -> tuple[list[tuple[str, list[float]]], bool]:
    """(text, box as fractions) of the page's words, in reading order, at most MAX_PAGE_WORDS;
    and whether there were more."""
    if page.source == Page.Source.OCR and page.words and page.ocr_dpi:
        width, height = _page_size(document, page.number)
        raw = [
            (
                str(w[0]),
                [float(w[1]), float(w[2]), float(w[1]) + float(w[3]), float(w[2]) + float(w[4])],
            )
            for w in page.words[:MAX_PAGE_WORDS]
        ]
        # Pixels at ocr_dpi: the page measures width * ocr_dpi / 72 of them across.
        pixels = page.ocr_dpi / 72.0
        return _fractions(raw, width * pixels, height * pixels), len(page.words) > MAX_PAGE_WORDS
    if page.source == Page.Source.TEXT_LAYER and document.kind == Document.Kind.PDF:
        return _pdf_words(storage.blob_path(document.blob.sha256), page.number)
    return [], False


def _pdf_words(path: Path, number: int) -> tuple[list[tuple[str, list[float]]], bool]:
    """(text, box as fractions) of the words of page `number` of the PDF at `path`, from its
    text layer, at most MAX_PAGE_WORDS; and whether there were more."""
    with pymupdf.open(path, filetype="pdf") as pdf:
        if not 1 <= number <= pdf.page_count:
            raise NotFound(f"No page {number}.")
        pdf_page = pdf[number - 1]
        rect, turn = pdf_page.rect, pdf_page.rotation_matrix
        words = pdf_page.get_text("words")
    raw = []
    for x0, y0, x1, y1, text, *_ in words[:MAX_PAGE_WORDS]:
        box = pymupdf.Rect(x0, y0, x1, y1) * turn  # text space is the unrotated page
        raw.append(
            (str(text), [box.x0 - rect.x0, box.y0 - rect.y0, box.x1 - rect.x0, box.y1 - rect.y0])
        )
    return _fractions(raw, rect.width, rect.height), len(words) > MAX_PAGE_WORDS


def _fractions(
    words: list[tuple[str, list[float]]], width: float, height: float
) -> list[tuple[str, list[float]]]:
    if width <= 0 or height <= 0:
        return []
    return [
        (
            _word_key(text),
            [
                round(min(max(box[0] / width, 0.0), 1.0), 4),
                round(min(max(box[1] / height, 0.0), 1.0), 4),
                round(min(max(box[2] / width, 0.0), 1.0), 4),
                round(min(max(box[3] / height, 0.0), 1.0), 4),
            ],
        )
        for text, box in words
        if _word_key(text)
    ]


def _word_key(text: str) -> str:
    # NUL cannot travel to PostgreSQL; a word longer than any real one is not looked up.
    return text.replace("\x00", "")[:100]


def _page_size(document: Document, number: int) -> tuple[float, float]:
    """The page's size in points, as its OCR words were measured (see extraction)."""
    path: Path = storage.blob_path(document.blob.sha256)
    if document.kind == Document.Kind.PDF:
        with pymupdf.open(path, filetype="pdf") as pdf:
            if not 1 <= number <= pdf.page_count:
                raise NotFound(f"No page {number}.")
            rect = pdf[number - 1].rect
            return rect.width, rect.height
    with Image.open(path) as image:
        try:
            image.seek(number - 1)
        except EOFError:
            raise NotFound(f"No page {number}.") from None
        dpi = _own_dpi(image)
        return image.width * 72.0 / dpi, image.height * 72.0 / dpi


def flag_can_clear(*, user: User, document: Document, generated_ancestor: Link | None) -> bool:
    """Whether to offer `user` the clearing of `document`'s flag: flagged, its lineage not
    generated (`generated_ancestor`, as `lineage_selectors.generated_ancestor` read it), and
    `user` a lawyer of its case. The evidence app's clearing service decides again (and refuses
    a byte match)."""
    return (
        document.provenance == Document.Provenance.FLAGGED
        and document.origin != Document.Origin.SYSTEM_GENERATED
        and generated_ancestor is None
        and case_selectors.case_is_lawyer(user=user, case=document.case)
    )
