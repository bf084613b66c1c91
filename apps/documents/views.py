"""Browser pages for a case's documents: the list with its upload form, the viewer, search."""

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from apps.accounts.models import User
from apps.cases.shortcuts import case_or_404, request_user
from apps.documents import (
    production_selectors,
    provenance_selectors,
    review_services,
    selectors,
    services,
)
from apps.documents.evidence_hooks import evidence
from apps.documents.forms import LiveRowsForm, SearchForm, UploadForm
from apps.documents.list_forms import (
    SORTS,
    BulkForm,
    DocumentListForm,
    DocumentListQuery,
    cursor_encode,
)
from apps.documents.models import Document
from apps.documents.reasons import LawyerRequired
from apps.documents.viewer_views import viewer_url
from lexweb.errors import DomainError, NotFound

MENU_PACKETS = 100


def _labels() -> dict[str, dict[str, str]]:
    """Display names for the script that fills rows from JSON and live events."""
    return {
        "status": dict(Document.Status.choices),
        "kind": dict(Document.Kind.choices),
        "origin": dict(Document.Origin.choices),
        "provenance": {
            Document.Provenance.PENDING: "Checking for generated text…",
            Document.Provenance.CLEAR: "Clear",
            Document.Provenance.FLAGGED: "Flagged",
        },
    }


# The review list's columns a person may hide (its column chooser, document_list.js): the
# `data-col` of their headers, and their titles. The file's name and the tick box always show.
LIST_COLUMNS = [
    ("kind", "Kind"),
    ("origin", "Origin"),
    ("custodian", "Custodian"),
    ("provenance", "Provenance"),
    ("status", "Status"),
    ("pages", "Pages"),
    ("bates", "Bates"),
    ("size", "Size"),
    ("review", "For review"),
    ("added", "Added"),
]


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def document_list(request: HttpRequest, case_id: int) -> HttpResponse:
    """The case's documents. POST is the upload form without JavaScript: the page comes back
    with what happened to each file (400 when none went in)."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    form = UploadForm(request.POST, request.FILES) if request.method == "POST" else UploadForm()
    summary = None
    if form.is_bound and form.is_valid():
        try:
            summary = services.documents_upload(
                case=case,
                uploaded_by=user,
                files=[(upload.name or "upload", upload) for upload in form.cleaned_data["files"]],
                origin=form.cleaned_data["origin"],
                custodian=form.cleaned_data["custodian"],
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
    refused = bool(form.errors) or (summary is not None and summary.errors == len(summary.results))
    tags = selectors.tag_choices_for_user(user=user, case_id=case.pk)
    list_form = DocumentListForm(request.GET or None, tags=tags)
    query = list_form.query() if list_form.is_bound and list_form.is_valid() else None
    if list_form.errors:
        refused, page = True, None
        # No list is read, but the page still shows the tag menu: that is the request's read.
        tags = selectors.tag_list_for_user(user=user, case_id=case.pk)
    else:
        page = selectors.document_review_page_for_user(
            user=user, case_id=case.pk, query=query or DocumentListQuery()
        )
        provenance_selectors.documents_load_provenance(page.documents, user=user)
    query = query or DocumentListQuery()
    # The filter pane opens by itself while a filter is active (the sort and page size are not
    # filters) or the filters were refused.
    filters_active = query.filter_count
    context = {
        "case": case,
        "page": page,
        "rows": [(d, provenance_selectors.provenance_of(d)) for d in page.documents]
        if page
        else [],
        "form": form,
        "list_form": list_form,
        "query": query,
        "filters": urlencode(query.filter_params()),
        # What the live rows are read with: the filters, sort and this page's own cursor.
        "rows_params": urlencode(_rows_params(query)),
        "sort_links": _sort_links(query),
        "summary": summary,
        "labels": _labels(),
        "tags": tags,
        "bulk_form": BulkForm(
            tags=tags,
            packets=_editable_packets(user, case.pk) if page else [],
            initial={"filters": urlencode(query.filter_params())},
        ),
        "max_bulk": f"{review_services.MAX_BULK_DOCUMENTS:,}",
        "filters_active": filters_active,
        "filters_open": bool(filters_active or list_form.errors),
        "columns": LIST_COLUMNS,
    }
    return render(request, "documents/document_list.html", context, status=400 if refused else 200)


def _rows_params(query: DocumentListQuery) -> dict[str, str]:
    params = query.filter_params()
    for name in ("after", "before"):
        cursor = getattr(query, name)
        if cursor is not None:
            params[name] = cursor_encode(*cursor)
    return params


@login_required
@require_safe
def document_rows(request: HttpRequest, case_id: int) -> HttpResponse:
    """Rows of the review list, rendered as the page renders them, with its count line: what a
    live page puts in place when a document's state changed or documents were added. Takes the
    list's filters and `ids`/`newer_than` (LiveRowsForm); 400 with the reason for bad ones."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    tags = selectors.tag_choices_for_user(user=user, case_id=case.pk)
    list_form = DocumentListForm(request.GET, tags=tags)
    rows_form = LiveRowsForm(request.GET)
    if not list_form.is_valid() or not rows_form.is_valid():
        reasons = [
            f"{name}: {' '.join(str(error) for error in errors)}"
            for form in (list_form, rows_form)
            for name, errors in form.errors.items()
        ]
        return HttpResponse("; ".join(reasons), status=400, content_type="text/plain")
    query = list_form.query()
    found = selectors.document_review_rows_for_user(
        user=user,
        case_id=case.pk,
        query=query,
        ids=rows_form.cleaned_data["ids"],
        newer_than=rows_form.cleaned_data["newer_than"],
        shown=rows_form.cleaned_data["shown"] if rows_form.cleaned_data["order"] else None,
    )
    provenance_selectors.documents_load_provenance(found.documents + found.newer, user=user)
    context = {
        "case": case,
        "page": found,
        "query": query,
        "filters": urlencode(query.filter_params()),
        "filters_active": query.filter_count,
        "order": ",".join(str(pk) for pk in found.order) if found.order is not None else None,
        "rows": [(d, provenance_selectors.provenance_of(d)) for d in found.documents],
        "newer": [(d, provenance_selectors.provenance_of(d)) for d in found.newer],
    }
    return render(request, "documents/_document_rows.html", context)


@login_required
@require_safe
def search(request: HttpRequest, case_id: int) -> HttpResponse:
    """Full-text search over the case's pages. Without `q` the page shows only the form.

    The search runs before the document menu is read, so that the request's audit row is the
    search (with its query) rather than the list of names.
    """
    user = request_user(request)
    case = case_or_404(request, case_id)
    form = SearchForm(request.GET if "q" in request.GET else None)
    hits, error, capped = None, "", False
    if form.is_bound and form.is_valid():
        try:
            found = selectors.page_search_for_user(
                user=user,
                case_id=case.pk,
                query=form.cleaned_data["q"],
                origin=form.cleaned_data["origin"] or None,
                document_id=form.cleaned_data["document"],
            )
        except DomainError as exc:
            error = exc.message
        else:
            origins = dict(Document.Origin.choices)
            verdicts = provenance_selectors.document_verdicts(
                case=case, document_ids={hit.document_id for hit in found}
            )
            hits = [
                (
                    hit,
                    viewer_url(
                        case_id=case.pk,
                        document_id=hit.document_id,
                        page=hit.page,
                        query=form.cleaned_data["q"],
                        hit=True,
                    ),
                    origins.get(hit.origin, hit.origin),
                    hit.origin in provenance_selectors.UNTRUSTED_ORIGINS,
                    verdicts.get(hit.document_id, Document.Provenance.PENDING),
                )
                for hit in found
            ]
            capped = found.capped
    if not form.set_documents(selectors.document_choices_for_user(user=user, case_id=case.pk)):
        hits, capped = None, False
    context = {
        "case": case,
        "form": form,
        "hits": hits,
        "error": error,
        "capped": capped,
        "rank_candidates": f"{selectors.RANK_CANDIDATES:,}",
    }
    status = 400 if error or form.errors else 200
    return render(request, "documents/search.html", context, status=status)


@login_required
@require_safe
def bates_lookup(request: HttpRequest, case_id: int) -> HttpResponse:
    """The pages behind a Bates number or range: image and text side by side."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    reference = request.GET.get("ref", "").strip()
    hits, error, status = None, "", 200
    if reference:
        try:
            hits = production_selectors.bates_lookup_for_user(
                user=user, case_id=case.pk, reference=reference
            )
        except NotFound as exc:  # a well-formed number that no page carries
            error, status = exc.message, 404
        except DomainError as exc:
            error, status = exc.message, 400
    context = {"case": case, "reference": reference[:100], "hits": hits, "error": error}
    return render(request, "documents/bates.html", context, status=status)


def _sort_links(query: DocumentListQuery) -> dict[str, tuple[str, str]]:
    """For each sortable column: (the list's address sorted by it, aria-sort now). A column
    sorted now links to the other direction; another one to its natural first direction."""
    params = query.filter_params()
    params.pop("sort", None)
    links = {}
    for name in SORTS:
        natural = f"-{name}" if name in ("added", "pages", "size") else name
        flipped = name if query.sort == f"-{name}" else f"-{name}"
        target = flipped if query.sort.lstrip("-") == name else natural
        state = "none"
        if query.sort.lstrip("-") == name:
            state = "descending" if query.sort.startswith("-") else "ascending"
        links[name] = ("?" + urlencode({**params, "sort": target}), state)
    return links


def _editable_packets(user: User, case_id: int) -> list[tuple[int, str]]:
    """(id, title) of the case's editable packets, for the bulk "add to a packet" menu."""
    packets = evidence().packet_menu(user=user, case_id=case_id, limit=MENU_PACKETS, editable=True)
    return [(p.id, p.title) for p in packets]


# Ticked documents sent on to the new production's page in its address (the list shows at
# most 200 a page; "All matching" sends the list's filters instead).
MAX_PRODUCE_TICKED = 500


def _production_new_url(case_id: int, data: dict[str, Any]) -> str:
    """The new production's page with the bulk form's documents (ticked, or all matching the
    list's filters), volume and prefix filled in."""
    params = [("volume", data["volume"]), ("bates_prefix", data["bates_prefix"])]
    if data["scope"] == "all":
        params.append(("filters", data["filters"] or "all=1"))
    else:
        params += [("ids", str(i)) for i in data["ids"]]
    base = reverse("documents:production_new", kwargs={"case_id": case_id})
    return base + "?" + urlencode([(k, v) for k, v in params if v])


@login_required
@require_POST
def documents_bulk(request: HttpRequest, case_id: int) -> HttpResponse:
    """A bulk action of the review list (tag, untag, withdraw) on the ticked documents, or on
    every document the list's filters match ("all matching", at most MAX_BULK_DOCUMENTS);
    "produce" goes on to the new production's page with them.
    Back to the list with what happened as a message, or the refusal as one."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    form = BulkForm(
        request.POST,
        tags=selectors.tag_choices_for_user(user=user, case_id=case.pk),
        packets=evidence().packet_choices(user=user, case_id=case.pk, limit=MENU_PACKETS),
    )
    back = reverse("documents:list", kwargs={"case_id": case.pk})
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errors in form.errors.values() for e in errors))
        return redirect(back)
    data = form.cleaned_data
    back += f"?{data['filters']}" if data["filters"] else ""
    # Ticked documents in the list's order (its sort), as "all matching" ones are: a
    # production and a packet take them in that order.
    data["ids"] = selectors.document_ids_in_list_order(
        user=user, case_id=case.pk, query=data["query"], ids=data["ids"]
    )
    if data["action"] == "produce":
        # Ordered, stamped and previewed on the new production's page before anything is made.
        if data["scope"] != "all" and len(data["ids"]) > MAX_PRODUCE_TICKED:
            messages.error(
                request,
                f"Tick at most {MAX_PRODUCE_TICKED} documents, or choose “All matching”.",
            )
            return redirect(back)
        return redirect(_production_new_url(case.pk, data))
    try:
        ids = data["ids"]
        if data["scope"] == "all":
            ids = selectors.document_review_ids_for_user(
                user=user, case_id=case.pk, query=data["query"]
            )
        action = data["action"]
        if action == "tag":
            tag, added = review_services.documents_tag(
                actor=user, case=case, document_ids=ids, name=data["tag_name"]
            )
            messages.success(request, f"Tagged {added} document{'s' * (added != 1)} “{tag}”.")
        elif action == "untag":
            removed = review_services.documents_untag(
                actor=user, case=case, document_ids=ids, tag_id=data["tag"]
            )
            messages.success(request, f"Tag taken off {removed} document{'s' * (removed != 1)}.")
        elif action == "packet":
            # The packet's own service and rules (provenance, page limits, all or none).
            added = evidence().packet_add(
                user=user,
                case_id=case.pk,
                packet_id=data["packet"],
                document_ids=ids,
                reason=data["packet_reason"],
            )
            messages.success(request, f"Added {added} to the packet.")
        else:
            withdrawn = review_services.documents_withdraw(
                actor=user, case=case, document_ids=ids, reason=data["reason"]
            )
            n = len(withdrawn)
            messages.success(
                request,
                f"Withdrew {n} document{'s' * (n != 1)}: out of lists, search and new packets; "
                "the originals are kept. Show “Withdrawn” to restore.",
            )
    except DomainError as exc:
        messages.error(request, exc.message)
    return redirect(back)


@login_required
@require_POST
def document_restore(request: HttpRequest, case_id: int, document_id: int) -> HttpResponse:
    """Bring a withdrawn document back (POST). Back to the withdrawn list with a message."""
    case = case_or_404(request, case_id)
    try:
        document = review_services.document_restore(
            actor=request_user(request), case=case, document_id=document_id
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"{document.filename} is back in the case.")
    return redirect(reverse("documents:list", kwargs={"case_id": case.pk}) + "?withdrawn=yes")


@login_required
@require_POST
def document_flag_clear(request: HttpRequest, case_id: int, document_id: int) -> HttpResponse:
    """A lawyer clears the registry's flag on the document with a written reason (POST, issue 20
    req 8; the rules are the evidence app's, reached through evidence_hooks). Back to the
    document with a message; 404 for non-members, 403 for members who are not lawyers of the
    case."""
    case = case_or_404(request, case_id)
    try:
        document = evidence().flag_clear(
            user=request_user(request),
            case_id=case.pk,
            document_id=document_id,
            reason=request.POST.get("reason", ""),
        )
    except NotFound:
        raise Http404("No such document.") from None
    except LawyerRequired as exc:
        raise PermissionDenied(exc.message) from None
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, f"The flag is cleared: {document.filename} is clear.")
    return redirect("documents:detail", case_id=case.pk, document_id=document_id)
