"""Reads of documents and pages; every one starts from the user's case memberships."""

import html
import re
from collections.abc import Iterator
from contextlib import nullcontext
from dataclasses import dataclass

from django.contrib.postgres.search import SearchHeadline, SearchQuery, SearchRank
from django.db import DatabaseError, connection, transaction
from django.db.models import (
    CharField,
    Count,
    F,
    Func,
    IntegerField,
    OuterRef,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.functions import Cast, Coalesce, Concat, LPad

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.documents.models import BatesPage, Derivation, Document, Page, Production
from lexweb.errors import DomainError, NotFound

SEARCH_CONFIG = "english"
# Private-use markers around hits: the page text is escaped first, then they become <mark>.
_HIT_START, _HIT_END = "\ue000", "\ue001"
MAX_QUERY_LENGTH = 500


def _case(*, user: User, case_id: int) -> Case:
    return case_selectors.case_get_for_user(user=user, case_id=case_id)


def _attachment_count() -> Subquery:
    attached = (
        Derivation.objects.filter(parent=OuterRef("pk"), transform=Derivation.EMAIL_ATTACHMENT)
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
    """
    return (
        Document.objects.filter(case=case)
        .select_related("blob")
        .annotate(
            attachment_count=Coalesce(_attachment_count(), 0),
            production_volume=F("volume_of__volume"),
        )
        .order_by("-created_at", "-id")
    )


def _document(*, case: Case, document_id: int) -> Document:
    document = (
        Document.objects.select_related("blob", "case").filter(pk=document_id, case=case).first()
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
        Document.objects.filter(case=case).order_by("filename", "pk").values_list("pk", "filename")
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
    pages = Page.objects.filter(document__case=case, search_vector=search)
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
    return _NOT_RUN.sub(lambda run: "-" if run.group().count("-") % 2 else " ", query)


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
        .annotate(
            label=Concat(
                F("prefix"),
                LPad(Cast("number", CharField()), F("production__digits"), Value("0")),  # type: ignore[arg-type]  # F is an Expression at run time
            )
        )
        .values("label")[:1]
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
        derived_from__parent=document, derived_from__transform=Derivation.EMAIL_ATTACHMENT
    ).order_by("filename", "id")
