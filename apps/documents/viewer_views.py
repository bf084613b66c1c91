"""The document viewer: one page at a time, with thumbnails, zoom, the text beside the page,
the stamped pages of productions, and the search the user came from (viewer.js draws its hits
and adds the keyboard)."""

from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_safe

from apps.accounts.models import User
from apps.cases.shortcuts import request_user
from apps.documents import lineage_selectors as lineage
from apps.documents import provenance_selectors, selectors, viewer_selectors
from apps.documents.list_forms import DocumentListForm, DocumentListQuery
from apps.documents.models import Document
from lexweb.errors import NotFound

# Ancestors listed on the viewer (a production volume has one per original); the rest counted.
CHAIN_SHOWN = 50
MAX_QUERY = selectors.MAX_QUERY_LENGTH
MAX_LIST_CONTEXT = 2000  # characters of `?list=`; the list's filters need far fewer
MAX_PAGE = 10**6  # no document has more pages; a longer number is not a page
HIT_PAGE = "hit"  # `?page=hit&q=...`: the page holding the search's first match
PART_VIEWER = "viewer"  # `?part=viewer`: the viewer alone, for viewer.js's page turns


def viewer_url(
    *,
    case_id: int,
    document_id: int,
    page: int = 1,
    query: str = "",
    stamped: int | None = None,
    listed: str = "",
    hit: bool = False,
) -> str:
    """The viewer at page `page` (scrolled to it), carrying the search `query` or the review
    list's filters `listed` (its query string) the user came from, and the production whose
    stamped page to show. `hit`: the page is a search hit's; for a rendered document (whose
    text is stored as one page) the viewer then opens the rendered page holding the first
    match."""
    base = reverse("documents:detail", kwargs={"case_id": case_id, "document_id": document_id})
    params: dict[str, str | int] = {"page": HIT_PAGE if hit and query and page == 1 else page}
    if query:
        params["q"] = query
    elif listed:
        params["list"] = listed
    if stamped is not None:
        params["stamped"] = stamped
    return f"{base}?{urlencode(params)}#viewer"


def _page_number(raw: str) -> int:
    """`?page=` as a page number: missing or not a number is page 1; a number past any
    document is a page no document has (the selector's NotFound)."""
    raw = raw.strip()
    if not raw.isascii() or not raw.isdigit() or len(raw) > len(str(MAX_PAGE)):
        return 1 if not raw else MAX_PAGE + 1
    return max(int(raw), 1)


@login_required
@require_safe
def document_detail(request: HttpRequest, case_id: int, document_id: int) -> HttpResponse:
    """One document: its facts and provenance, then one page (image beside text) with the
    thumbnail strip, page and document navigation and, where the page is produced, its
    stamped versions. `?page=` the page, `?q=` the search the user came from (its words are
    marked on the image; previous/next document follow its hits), `?stamped=` a production
    whose stamped page to show, `?part=viewer` the viewer alone (templates/documents/
    _viewer.html: viewer.js puts it in place on a page turn, without reloading the page; the
    side pane's facts are not read). Audited once, as a view of the document."""
    user = request_user(request)
    query = request.GET.get("q", "")[:MAX_QUERY].replace("\x00", "")
    raw_page = request.GET.get("page", "")
    number = 1 if raw_page == HIT_PAGE else _page_number(raw_page)
    listed, list_query = _list_context(request, case_id) if not query else ("", None)
    try:
        view = viewer_selectors.viewer_page_for_user(
            user=user,
            case_id=case_id,
            document_id=document_id,
            number=number,
            query=query,
            list_query=list_query,
            at_first_hit=raw_page == HIT_PAGE,
        )
    except NotFound as exc:
        raise Http404(exc.message) from None
    document = view.document
    wanted = request.GET.get("stamped", "")
    stamped = next((s for s in view.stamped if str(s.production_id) == wanted), None)

    def here(page: int, stamped: int | None = None) -> str:
        return viewer_url(
            case_id=case_id,
            document_id=document.pk,
            page=page,
            query=query,
            stamped=stamped,
            listed=listed,
        )

    current = view.number
    keep = stamped.production_id if stamped else None
    context = {
        "case": document.case,
        "document": document,
        "view": view,
        "page": view.page,
        "query": query,
        "stamped": stamped,
        # Moving through the pages keeps the stamped version on while there is one.
        "previous_url": here(current - 1, keep) if current > 1 else "",
        "next_url": here(current + 1, keep) if current < view.page_count else "",
        "thumbs": [(n, here(n, keep)) for n in view.thumbs],
        "original_url": here(current),
        "stamped_urls": [(s, here(current, s.production_id)) for s in view.stamped],
        "previous_document_url": _neighbour_url(case_id, view.previous, query, listed, view),
        "next_document_url": _neighbour_url(case_id, view.next, query, listed, view),
        "list_context": bool(listed),
        "listed": listed,
        "has_images": viewer_selectors.document_has_page_images(document, current),
        "rendition": selectors.rendition_for(document),
    }
    if request.GET.get("part") == PART_VIEWER:
        return render(request, "documents/_viewer.html", context)
    context.update(_side_pane(user, document))
    return render(request, "documents/document_detail.html", context)


def _side_pane(user: User, document: Document) -> dict[str, object]:
    """What the viewer's side pane shows of the document: its provenance, lineage and
    attachments, and the form to clear its flag."""
    provenance_selectors.documents_load_provenance([document], user=user)
    chain = lineage.provenance_chain(document)
    origins, untrusted = dict(Document.Origin.choices), provenance_selectors.UNTRUSTED_ORIGINS
    generated_ancestor = lineage.generated_ancestor(document)
    attachments = (
        [
            (child, provenance_selectors.provenance_of(child))
            for child in provenance_selectors.documents_with_provenance(
                selectors.attachment_list_for_user(
                    user=user, case_id=document.case_id, document_id=document.pk
                ),
                user=user,
            )
        ]
        if document.kind == Document.Kind.EMAIL
        else []
    )
    return {
        "attachments": attachments,
        "provenance": provenance_selectors.provenance_of(document),
        "chain": [
            (link, origins.get(link.origin, link.origin), link.origin in untrusted)
            for link in chain[:CHAIN_SHOWN]
        ],
        "chain_more": max(len(chain) - CHAIN_SHOWN, 0),
        "generated_ancestor": generated_ancestor,
        # The form to clear a flag, for lawyers of the case (issue 20 req 8).
        "can_clear_flag": viewer_selectors.flag_can_clear(
            user=user, document=document, generated_ancestor=generated_ancestor
        ),
    }


def _neighbour_url(
    case_id: int,
    neighbour: viewer_selectors.Neighbour | None,
    query: str,
    listed: str,
    view: viewer_selectors.ViewerPage,
) -> str:
    if neighbour is None:
        return ""
    return viewer_url(
        case_id=case_id,
        document_id=neighbour.document_id,
        page=neighbour.page,
        query=query if view.search_context else "",
        listed="" if view.search_context else listed,
        hit=view.search_context,
    )


def _list_context(request: HttpRequest, case_id: int) -> tuple[str, DocumentListQuery | None]:
    """`?list=`: the review list's filters and sort (its own query string) the user came from,
    as (the cleaned query string to carry on, the query); ("", None) when absent or not a
    valid list query (the case's order then). Its page cursors are dropped: the order is
    what counts."""
    raw = request.GET.get("list", "")
    if not raw or len(raw) > MAX_LIST_CONTEXT:
        return "", None
    tags = selectors.tag_choices_for_user(user=request_user(request), case_id=case_id)
    params = QueryDict(raw.replace("\x00", ""), mutable=True)
    for cursor in ("after", "before"):
        params.pop(cursor, None)
    form = DocumentListForm(params, tags=tags)
    if not form.is_valid():
        return "", None
    query = form.query()
    return urlencode(query.filter_params()), query
