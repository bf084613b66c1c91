"""Reads of documents and pages; every one starts from the user's case memberships."""

import html
import re
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from pathlib import Path

from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank
from django.db import DatabaseError, connection, transaction
from django.db.models import Case as SqlCase
from django.db.models import (
    CharField,
    Count,
    Exists,
    Expression,
    F,
    Func,
    IntegerField,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, Concat, LPad
from django.utils import timezone

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.documents import list_forms, rendering, storage
from apps.documents.evidence_hooks import evidence
from apps.documents.list_forms import DocumentListQuery
from apps.documents.models import (
    BatesPage,
    Derivation,
    Document,
    DocumentTag,
    Page,
    Production,
    ProductionDocument,
    Rendition,
    Tag,
)
from lexweb.errors import DomainError, NotFound

SEARCH_CONFIG = "english"
# Private-use markers around hits: the page text is escaped first, then they become <mark>.
_HIT_START, _HIT_END = "\ue000", "\ue001"
MAX_QUERY_LENGTH = 500


def _case(*, user: User, case_id: int) -> Case:
    return case_selectors.case_get_for_user(user=user, case_id=case_id)


def _attachment_count() -> Subquery:
    attached = (
        Derivation.objects.filter(parent=OuterRef("pk"), transform__in=Derivation.FAMILY)
        .order_by()
        .values("parent")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return Subquery(attached, output_field=IntegerField())


def _documents(case: Case) -> QuerySet[Document]:
    """The case's documents, newest first, each with `attachment_count` (documents taken out
    of it as e-mail attachments) and `production_volume`: the volume's name when the document
    is a production's stamped volume, else None.

    Production volumes are listed like any document, with that label; full-text search leaves
    them out (see page_search_for_user), so a produced page is found once, in its original.
    Withdrawn documents are left out (document_review_page_for_user lists them on request).
    """
    return (
        Document.objects.filter(case=case, withdrawn_at__isnull=True)
        .select_related("blob", "rendition__output")
        .annotate(
            attachment_count=Coalesce(_attachment_count(), 0),
            production_volume=F("volume_of__volume"),
        )
        .order_by("-created_at", "-id")
    )


def _document(*, case: Case, document_id: int) -> Document:
    document = (
        Document.objects.select_related("blob", "case", "rendition__output")
        .filter(pk=document_id, case=case)
        .first()
    )
    if document is None:
        raise NotFound(f"No document {document_id} in this case.")
    return document


def _pages(document: Document) -> QuerySet[Page]:
    return (
        Page.objects.filter(document=document)
        .annotate(bates=Subquery(_bates_label()))
        .order_by("number")
    )


def document_list_for_user(*, user: User, case_id: int) -> QuerySet[Document]:
    """The case's documents, newest first. Audited as one read of the list."""
    case = _case(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="document.list", case=case)
    return _documents(case)


def document_choices_for_user(*, user: User, case_id: int) -> list[tuple[int, str]]:
    """(id, file name) of the case's documents, by name: the choices of a filter menu.
    Audited as a read of the list (file names are client material too)."""
    case = _case(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="document.list", case=case)
    return list(
        Document.objects.filter(case=case, withdrawn_at__isnull=True)
        .order_by("filename", "pk")
        .values_list("pk", "filename")
    )


def document_get_for_user(*, user: User, case_id: int, document_id: int) -> Document:
    """The document if it belongs to a case the user is a member of; otherwise NotFound.
    Audited as a view of the document."""
    case = _case(user=user, case_id=case_id)
    document = _document(case=case, document_id=document_id)
    read_audit.read_record(user=user, action="document.view", case=case, target=document)
    return document


def document_original_for_user(*, user: User, case_id: int, document_id: int) -> Document:
    """The document whose original file is about to be sent. Audited as a download."""
    case = _case(user=user, case_id=case_id)
    document = _document(case=case, document_id=document_id)
    read_audit.read_record(user=user, action="document.download", case=case, target=document)
    return document


def page_list_for_user(*, user: User, case_id: int, document_id: int) -> QuerySet[Page]:
    """The document's pages in order, each with `bates`: its number in the latest production
    (None when the page has not been produced). Audited as one read of the document's pages."""
    case = _case(user=user, case_id=case_id)
    document = _document(case=case, document_id=document_id)
    read_audit.read_record(user=user, action="document.pages", case=case, target=document)
    return _pages(document)


def page_get_for_user(*, user: User, case_id: int, document_id: int, number: int) -> Page:
    """One page (with its document and blob), for its image. Audited with the page number."""
    case = _case(user=user, case_id=case_id)
    document = _document(case=case, document_id=document_id)
    page = _pages(document).filter(number=number).select_related("document__blob").first()
    if page is None:
        raise NotFound(f"No page {number} in this document.")
    read_audit.read_record(
        user=user, action="document.page", case=case, target=document, detail={"page": number}
    )
    return page


@dataclass(frozen=True)
class PageImageSource:
    """The file page `number`'s image is drawn from, and its kind ("pdf" or "image")."""

    path: Path
    kind: str
    number: int


def page_image_source_for_user(
    *, user: User, case_id: int, document_id: int, number: int
) -> PageImageSource:
    """Where page `number`'s image comes from: a PDF's or image's original, or for the
    rendered kinds (text, e-mail, Word, Excel, Outlook) page `number` of the rendition's PDF,
    which may have more pages than the text stored. NotFound for a page that does not exist,
    or while the rendition is not ready (saying so). Audited with the page number."""
    case = _case(user=user, case_id=case_id)
    document = _document(case=case, document_id=document_id)
    if document.kind not in rendering.RENDERED_KINDS:
        page = page_get_for_user(user=user, case_id=case_id, document_id=document_id, number=number)
        return PageImageSource(storage.blob_path(document.blob.sha256), document.kind, page.number)
    rendition = rendition_for(document)
    if rendition is None or rendition.output is None:
        state = rendition.label if rendition else "not rendered yet"
        raise NotFound(f"This document has no page images yet ({state}); read its text instead.")
    if not 1 <= number <= rendition.page_count:
        raise NotFound(f"No page {number} in this document.")
    read_audit.read_record(
        user=user, action="document.page", case=case, target=document, detail={"page": number}
    )
    return PageImageSource(storage.blob_path(rendition.output.sha256), "pdf", number)


def rendition_for(document: Document) -> Rendition | None:
    """The document's rendering to PDF (status, `label` to show, page count, lineage), or
    None for a kind that is not rendered or one not queued yet. For a document the caller
    has already read through a `_for_user` selector (no audit row of its own)."""
    if document.kind not in rendering.RENDERED_KINDS:
        return None
    try:
        return document.rendition  # read with the document where its selector joined it
    except Rendition.DoesNotExist:
        return None


@dataclass(frozen=True)
class SearchHit:
    document_id: int
    filename: str
    origin: str
    page: int
    bates: str | None
    rank: float
    snippet: str  # HTML-safe; hits wrapped in <mark>


@dataclass(frozen=True)
class SearchResults:
    """Hits, best first. `capped`: the query matched more than RANK_CANDIDATES pages, and the
    hits are the best of the first RANK_CANDIDATES of them (in upload order)."""

    hits: list[SearchHit]
    capped: bool

    def __iter__(self) -> Iterator[SearchHit]:
        return iter(self.hits)

    def __len__(self) -> int:
        return len(self.hits)


# Ranking reads every candidate's vector: past this many matches, rank a first slice only
# (keeps p95 under 100 ms on 100,000 pages; see bench/bench_search.py).
RANK_CANDIDATES = 1000


def page_search_for_user(
    *,
    user: User,
    case_id: int,
    query: str,
    origin: str | None = None,
    document_id: int | None = None,
    limit: int = 200,
) -> SearchResults:
    """Pages of the case matching `query` (web-search syntax: words, "phrases", -not, or),
    best first, at most `limit`. Any text is a valid query or a DomainError saying what to
    change. Audited (with the query and the number of hits) when it answers.

    Production volumes are left out unless `document_id` names one: a volume's pages are
    copies of its originals' pages, and each would otherwise be found twice.
    """
    case = _case(user=user, case_id=case_id)
    query = search_query_clean(query)
    search = SearchQuery(query, search_type="websearch", config=SEARCH_CONFIG)
    # A withdrawn document (a wrong upload) is found by no search.
    pages = Page.objects.filter(
        document__case=case, document__withdrawn_at__isnull=True, search_vector=search
    )
    if origin:
        pages = pages.filter(document__origin=origin)
    if document_id is not None:
        pages = pages.filter(document_id=document_id)
    else:
        # A short list (one per production) checked as a hashed NOT IN, not a join per page.
        volumes = Production.objects.filter(case=case, volume_document__isnull=False)
        pages = pages.exclude(document_id__in=volumes.values("volume_document_id"))
    candidates = _candidates(pages)
    rows = (
        Page.objects.filter(pk__in=candidates[:RANK_CANDIDATES])
        .annotate(
            bates=Subquery(_bates_label()),
            rank=SearchRank(F("search_vector"), search),
            raw_snippet=SearchHeadline(
                # The page's own marker characters are dropped: only real hits become <mark>.
                Func(F("text"), Value(_HIT_START + _HIT_END), Value(""), function="translate"),
                search,
                config=SEARCH_CONFIG,
                start_sel=_HIT_START,
                stop_sel=_HIT_END,
                max_fragments=2,
                max_words=30,
                min_words=12,
            ),
        )
        .order_by("-rank", "document_id", "number")
        .values_list(
            "document_id",
            "document__filename",
            "document__origin",
            "number",
            "bates",
            "rank",
            "raw_snippet",
        )[:limit]
    )
    hits = [
        SearchHit(doc, name, org, number, bates, float(rank), snippet_html(raw))
        for doc, name, org, number, bates, rank, raw in rows
    ]
    read_audit.read_record(
        user=user,
        action="case.search",
        case=case,
        detail={"query": query, "hits": len(hits)},
    )
    return SearchResults(hits, capped=len(candidates) > RANK_CANDIDATES)


# A run of "-" with only separators between is that many NOTs to websearch_to_tsquery, and 33
# of them overflow PostgreSQL's parser stack ("tsquery stack too small"). Negating twice is not
# negating: the run becomes one "-" or none.
_NOT_RUN = re.compile(r'-(?:[^\w"]*-)+')


def search_query_clean(query: str) -> str:
    """The query as it is sent to PostgreSQL; DomainError when there is nothing to send."""
    # NUL cannot be sent to PostgreSQL in a string, and is never part of a word.
    query = " ".join(query.replace("\x00", " ").split())
    if not query:
        raise DomainError("Type something to search for.")
    if len(query) > MAX_QUERY_LENGTH:
        raise DomainError(f"A search is at most {MAX_QUERY_LENGTH} characters.")
    # A run negated an even number of times goes, so what is left may be nothing ("--"): a
    # query of negations alone is one "-", a search that finds nothing (as "--" always was),
    # and cleaning it again gives it back.
    query = " ".join(
        _NOT_RUN.sub(lambda run: "-" if run.group().count("-") % 2 else " ", query).split()
    )
    return query or "-"


def _candidates(pages: QuerySet[Page]) -> list[int]:
    """Up to RANK_CANDIDATES + 1 matching page ids, straight from the index (no ORDER BY:
    sorting every match is slow)."""
    # Inside a transaction, a savepoint keeps it usable after a refused query; in autocommit
    # (a request) a refused query spoils nothing.
    guard = transaction.atomic() if connection.in_atomic_block else nullcontext()
    try:
        with guard:
            return list(pages.order_by().values_list("pk", flat=True)[: RANK_CANDIDATES + 1])
    except DatabaseError as error:
        # Class 54, "program limit exceeded": a query PostgreSQL finds too complex to parse.
        if not str(getattr(error.__cause__, "sqlstate", "") or "").startswith("54"):
            raise
        raise DomainError(
            "That search is too complex; use fewer operators (-, or, quotes)."
        ) from None


def _bates_label() -> "QuerySet[BatesPage, dict[str, str]]":
    """The page's Bates number in its latest production (None before any production)."""
    return (
        BatesPage.objects.filter(
            document_id=OuterRef("document_id"), page_number=OuterRef("number")
        )
        .order_by("-production_id")
        .annotate(label=_label_sql(prefix="prefix", number="number", page=F("page_suffix")))
        .values("label")[:1]
    )


def _label_sql(*, prefix: str, number: str, page: Expression | F) -> Concat:
    """SQL for `bates.label` over a row with a `production`: `prefix` and `number` its
    columns, `page` the page (of a production with a page suffix) the label names."""
    suffix = SqlCase(
        When(production__page_suffix_digits=0, then=Value("")),
        default=Concat(
            Value("."),
            LPad(Cast(page, CharField()), F("production__page_suffix_digits"), Value("0")),  # type: ignore[arg-type]  # F is an Expression at run time
        ),
        output_field=CharField(),
    )
    return Concat(
        F(prefix),
        LPad(Cast(number, CharField()), F("production__digits"), Value("0")),  # type: ignore[arg-type]  # F is an Expression at run time
        suffix,
        output_field=CharField(),
    )


def snippet_html(raw: str) -> str:
    """Escape a headline, then turn the hit markers into <mark> tags."""
    cleaned = html.escape(raw)
    return cleaned.replace(_HIT_START, "<mark>").replace(_HIT_END, "</mark>")


# --- For the browser's pages -----------------------------------------------------------------


def document_table_for_user(*, user: User, case_id: int) -> QuerySet[Document]:
    """The case's documents, newest first, each with `review_count` (its pages flagged for
    review), `attachment_count` and `production_volume` (see _documents). NotFound for
    non-members, as for a missing case. Audited as one read of the list."""
    case = _case(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="document.list", case=case)
    flagged = (
        Page.objects.filter(document=OuterRef("pk"), needs_review=True)
        .order_by()
        .values("document")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return _documents(case).annotate(
        review_count=Coalesce(Subquery(flagged, output_field=IntegerField()), 0)
    )


def attachment_list_for_user(*, user: User, case_id: int, document_id: int) -> QuerySet[Document]:
    """The documents that came out of an e-mail (its "email-attachment" derivations; empty for
    anything else), by name. Audited as a view of the e-mail."""
    case = _case(user=user, case_id=case_id)
    document = _document(case=case, document_id=document_id)
    read_audit.read_record(user=user, action="document.view", case=case, target=document)
    return Document.objects.filter(
        derived_from__parent=document, derived_from__transform__in=Derivation.FAMILY
    ).order_by("filename", "id")


# --- The review list: filters, sorts, keyset pages -------------------------------------------

# The list counts matches up to this many and then says "more than"; counting all of a
# 100,000-document case on every page turn costs more than the page.
REVIEW_COUNT_CAP = 10_000


@dataclass(frozen=True)
class ReviewPage:
    """One page of the review list. `total` is exact up to REVIEW_COUNT_CAP (`capped` past it);
    the cursors are for the next and previous pages (None at either end)."""

    documents: list[Document]
    total: int
    capped: bool
    next_cursor: str | None
    previous_cursor: str | None


def _review_filtered(case: Case, query: DocumentListQuery) -> QuerySet[Document]:
    docs = Document.objects.filter(case=case, withdrawn_at__isnull=not query.withdrawn)
    exact = {"origin": query.origin, "kind": query.kind, "status": query.status}
    docs = docs.filter(**{name: value for name, value in exact.items() if value})
    if query.custodian:
        docs = docs.filter(custodian=query.custodian)
    zone = timezone.get_current_timezone()
    if query.added_from:
        docs = docs.filter(created_at__gte=datetime.combine(query.added_from, time(), zone))
    if query.added_to:
        end = query.added_to + timedelta(days=1)
        docs = docs.filter(created_at__lt=datetime.combine(end, time(), zone))
    flags = {
        "needs_review": (
            query.needs_review,
            Exists(Page.objects.filter(document=OuterRef("pk"), needs_review=True)),
        ),
        "produced": (query.produced, Exists(_productions_of_row())),
        "in_packet": (query.in_packet, evidence().in_packet()),
    }
    for wanted, exists in flags.values():
        if wanted is not None:
            docs = docs.filter(exists if wanted else ~exists)
    if query.tag is not None:
        docs = docs.filter(
            Exists(DocumentTag.objects.filter(document=OuterRef("pk"), tag_id=query.tag))
        )
    return docs


def _productions_of_row() -> QuerySet[ProductionDocument]:
    """The row's places in productions that did not fail, latest first."""
    return (
        ProductionDocument.objects.filter(document=OuterRef("pk"))
        .exclude(production__status=Production.Status.FAILED)
        .order_by("-production_id")
    )


def _bates_end(field: str) -> Subquery:
    """BEGBATES ("first_number") or ENDBATES ("last_number") of the row's latest production
    item: with a page suffix, its number's first page (1) or last page (its page count)."""
    page = Value(1) if field == "first_number" else F("page_count")
    label = _label_sql(prefix="production__prefix", number=field, page=page)
    return Subquery(_productions_of_row().annotate(label=label).values("label")[:1])


def _cursor_value(document: Document, field: str) -> object:
    value = document.blob.size if field == "blob__size" else getattr(document, field)
    return value.isoformat() if isinstance(value, datetime) else value


def document_review_page_for_user(
    *, user: User, case_id: int, query: DocumentListQuery
) -> ReviewPage:
    """A page of the case's documents for review: filtered, sorted (then by id), one keyset
    page after `query.after` or before `query.before`, each with `review_count`,
    `attachment_count`, `production_volume`, `bates_begin`/`bates_end` (its range in the
    latest production that did not fail, None if never produced) and its tags. Withdrawn
    documents only when `query.withdrawn`, and then only they. Audited as a read of the list."""
    case = _case(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="document.list", case=case)
    filtered = _review_filtered(case, query)
    field = list_forms.SORTS[query.sort.lstrip("-")]
    backward = query.before is not None
    ids, more = _review_page_ids(filtered, query)
    documents = _review_rows(ids)
    total = filtered.order_by().values("pk")[: REVIEW_COUNT_CAP + 1].count()

    def cursor_of(document: Document) -> str:
        return list_forms.cursor_encode(_cursor_value(document, field), document.pk)

    has_next = (more and not backward) or (backward and bool(documents))
    has_previous = (more and backward) or (query.after is not None and bool(documents))
    return ReviewPage(
        documents=documents,
        total=min(total, REVIEW_COUNT_CAP),
        capped=total > REVIEW_COUNT_CAP,
        next_cursor=cursor_of(documents[-1]) if has_next and documents else None,
        previous_cursor=cursor_of(documents[0]) if has_previous and documents else None,
    )


def _review_page_ids(
    filtered: QuerySet[Document], query: DocumentListQuery
) -> tuple[list[int], bool]:
    """The ids of `query`'s keyset page of `filtered`, in the list's order (its sort, then id),
    and whether there are more past it in the direction it was read."""
    field = list_forms.SORTS[query.sort.lstrip("-")]
    backward = query.before is not None
    descending = query.sort.startswith("-") != backward
    cursor = query.before if backward else query.after
    keyed = filtered
    if cursor is not None:
        value, pk = cursor
        op = "lt" if descending else "gt"
        keyed = filtered.filter(
            Q(**{f"{field}__{op}": value}) | Q(**{field: value, f"pk__{op}": pk})
        )
    order = _review_order(query.sort, descending=descending)
    ids = list(keyed.order_by(*order).values_list("pk", flat=True)[: query.per_page + 1])
    more = len(ids) > query.per_page
    ids = ids[: query.per_page]
    if backward:
        ids.reverse()
    return ids, more


def _review_rows(ids: list[int]) -> list[Document]:
    """The documents `ids`, in that order, with what a row of the review list shows."""
    flagged = (
        Page.objects.filter(document=OuterRef("pk"), needs_review=True)
        .order_by()
        .values("document")
        .annotate(n=Count("pk"))
        .values("n")
    )
    rows = (
        Document.objects.filter(pk__in=ids)
        .select_related("blob")
        .annotate(
            attachment_count=Coalesce(_attachment_count(), 0),
            production_volume=F("volume_of__volume"),
            review_count=Coalesce(Subquery(flagged, output_field=IntegerField()), 0),
            bates_begin=_bates_end("first_number"),
            bates_end=_bates_end("last_number"),
        )
        .prefetch_related(
            Prefetch(
                "document_tags",
                queryset=DocumentTag.objects.select_related("tag").order_by("tag__name"),
            )
        )
    )
    by_id: dict[int, Document] = {d.pk: d for d in rows}
    return [by_id[pk] for pk in ids if pk in by_id]


# A live page asks for at most this many rows at once (those whose state changed, new ones).
REVIEW_ROWS_MAX = 200


@dataclass(frozen=True)
class ReviewRows:
    """Rows of the review list read again for a live page: those of `ids` still in the list's
    filtered set, `newer` (documents of the set added after the newest the page shows, newest
    first) and the list's count, as ReviewPage says it."""

    documents: list[Document]
    newer: list[Document]
    total: int
    capped: bool
    order: list[int] | None = None  # with `shown`: the page's ids as a reload shows them


def document_review_rows_for_user(
    *,
    user: User,
    case_id: int,
    query: DocumentListQuery,
    ids: list[int],
    newer_than: int | None = None,
    shown: list[int] | None = None,
) -> ReviewRows:
    """The rows `ids` of the review list with `query`'s filters, as the list renders them, and
    its count; with `newer_than` (an id) also the set's documents of a higher id (at most
    query.per_page, newest first): what a live page adds on top of its newest-first first page.
    With `shown` (the ids a page of any sort, filter or cursor shows), `order` is its page as a
    reload would show it now (`query`'s keyset page, in its order) and `newer` the rows of that
    page it does not show yet: documents added, or moved into it by their sort value. A row
    that left the filtered set (withdrawn, no longer matching) is not returned. Audited as a
    read of the list."""
    case = _case(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="document.list", case=case)
    filtered = _review_filtered(case, query)
    wanted = list(dict.fromkeys(ids))[:REVIEW_ROWS_MAX]
    found = set(filtered.filter(pk__in=wanted).values_list("pk", flat=True))
    newer_ids: list[int] = []
    order: list[int] | None = None
    if shown is not None:
        order, _more = _review_page_ids(filtered, query)
        showing = set(shown)
        newer_ids = [pk for pk in order if pk not in showing][:REVIEW_ROWS_MAX]
    elif newer_than is not None:
        newer_ids = list(
            filtered.filter(pk__gt=newer_than)
            .order_by("-pk")
            .values_list("pk", flat=True)[: min(query.per_page, REVIEW_ROWS_MAX)]
        )
    rows = _review_rows([pk for pk in wanted if pk in found and pk not in newer_ids] + newer_ids)
    newer_set = set(newer_ids)
    total = filtered.order_by().values("pk")[: REVIEW_COUNT_CAP + 1].count()
    return ReviewRows(
        documents=[d for d in rows if d.pk not in newer_set],
        newer=[d for d in rows if d.pk in newer_set],
        total=min(total, REVIEW_COUNT_CAP),
        capped=total > REVIEW_COUNT_CAP,
        order=order,
    )


def tag_list_for_user(*, user: User, case_id: int) -> list[Tag]:
    """The case's tags, by name, to be shown: audited as a read (`tag.list`), since the names
    say what the team found in the material."""
    case = _case(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="tag.list", case=case)
    return _tags(case)


def tag_choices_for_user(*, user: User, case_id: int) -> list[Tag]:
    """The case's tags, by name, to check a submitted filter or bulk action against. Nothing
    is shown by this, so no audit row: a page that shows them records its own read."""
    return _tags(_case(user=user, case_id=case_id))


def _tags(case: Case) -> list[Tag]:
    return list(Tag.objects.filter(case=case).order_by("name", "pk")[:500])


def _review_order(sort: str, *, descending: bool | None = None) -> tuple[str, str]:
    """The review list's ORDER BY for `sort` ("-added", "name", ...): its column, then the id
    the same way (`descending` overrides the sort's own direction, for a page read backward)."""
    field = list_forms.SORTS[sort.lstrip("-")]
    if descending is None:
        descending = sort.startswith("-")
    return (f"-{field}", "-pk") if descending else (field, "pk")


def document_review_ids_for_user(
    *, user: User, case_id: int, query: DocumentListQuery
) -> list[int]:
    """The ids of every document the review list's filters match (for "all matching" bulk
    actions), in the list's order (its sort, then id); DomainError past MAX_BULK_DOCUMENTS.
    Ids only: nothing shown, no audit."""
    case = _case(user=user, case_id=case_id)
    limit = list_forms.MAX_BULK_DOCUMENTS
    order = _review_order(query.sort)
    ids = list(
        _review_filtered(case, query).order_by(*order).values_list("pk", flat=True)[: limit + 1]
    )
    if len(ids) > limit:
        raise DomainError(
            f"More than {limit:,} documents match; narrow the filters to act on all of them."
        )
    return ids


def document_ids_in_list_order(
    *, user: User, case_id: int, query: DocumentListQuery, ids: list[int]
) -> list[int]:
    """`ids` (ticked on the review list), each once, the case's documents among them in the
    list's order (its sort, then id), then any other id as given (left for the action's own
    service to refuse by name). Ids only: no audit."""
    case = _case(user=user, case_id=case_id)
    picked = Document.objects.filter(case=case, pk__in=set(ids))
    ordered = list(picked.order_by(*_review_order(query.sort)).values_list("pk", flat=True))
    known = set(ordered)
    return ordered + [i for i in dict.fromkeys(ids) if i not in known]
