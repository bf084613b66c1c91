"""Browser pages for productions: the case's Productions tab, a new production (pick, order,
stamp, preview, commit), one production (its documents, progress, downloads, exports), and the
stamp preview image. Every read goes through a membership-checked selector; every write through
the production service, whose refusals are shown on the page."""

import datetime
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from apps.accounts.models import User
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.cases.shortcuts import case_or_404, request_user
from apps.documents import (
    privilege_log,
    production_door_services,
    production_preview,
    production_selectors,
    production_services,
    selectors,
)
from apps.documents.evidence_hooks import evidence
from apps.documents.list_forms import DocumentListForm
from apps.documents.models import Document, PrivilegeLogEntry, Production
from apps.documents.production_forms import (
    SORT_KEYS,
    ExportForm,
    PickForm,
    PreviewForm,
    ProductionForm,
    ids_from,
)
from lexweb.errors import DomainError, NotFound, Unavailable

PRODUCTIONS_PER_PAGE = 50
ITEMS_PER_PAGE = 200
SEARCH_PAGES = 1000  # a search adds the documents of at most this many best pages
MENU_PACKETS = 100


def _production(request: HttpRequest, case_id: int, production_id: int) -> Production:
    try:
        return production_selectors.production_get_for_user(
            user=request_user(request), case_id=case_id, production_id=production_id
        )
    except NotFound:
        raise Http404("No such production.") from None


@login_required
@require_safe
def production_list(request: HttpRequest, case_id: int) -> HttpResponse:
    """The case's Productions tab: each production's range, documents, maker, status, exports."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    productions = Paginator(
        production_selectors.production_table_for_user(user=user, case_id=case.pk),
        PRODUCTIONS_PER_PAGE,
    ).get_page(request.GET.get("page"))
    context = {
        "case": case,
        "page_obj": productions,
        "rows": [(p, p.bates(p.first_number), p.bates(p.last_number)) for p in productions],
    }
    return render(request, "documents/production_list.html", context)


def _packets(user: User, case_id: int) -> list[tuple[int, str]]:
    packets = evidence().packet_menu(user=user, case_id=case_id, limit=MENU_PACKETS, editable=False)
    return [(p.id, f"{p.title} ({p.item_count} item{'s' * (p.item_count != 1)})") for p in packets]


def _more_ids(user: User, case: Case, picks: PickForm) -> list[int]:
    """The ids a PickForm adds, in order: its ticked ids, a list filter's matches, a search's
    documents (best first), a packet's documents (in packet order)."""
    data = picks.cleaned_data
    ids: list[int] = list(data["ids"])
    if data.get("filters"):
        listing = DocumentListForm(QueryDict(data["filters"]))
        if not listing.is_valid():
            raise DomainError("The list's filters are not valid; go back to the list.")
        ids += selectors.document_review_ids_for_user(
            user=user, case_id=case.pk, query=listing.query()
        )
    if data.get("q"):
        hits = selectors.page_search_for_user(
            user=user, case_id=case.pk, query=data["q"], limit=SEARCH_PAGES
        )
        ids += [hit.document_id for hit in hits]
    if data.get("packet"):
        try:
            ids += evidence().packet_document_ids(
                user=user, case_id=case.pk, packet_id=data["packet"]
            )
        except NotFound as exc:
            raise DomainError(exc.message) from None
    return ids


def _add(user: User, case: Case, picks: PickForm, ids: list[int], problems: list[str]) -> list[int]:
    """`ids` and then the ones `picks` adds (each once); a refusal goes to `problems`."""
    if not picks.is_valid():
        problems += [str(e) for errors in picks.errors.values() for e in errors]
        return ids
    try:
        return list(dict.fromkeys(ids + _more_ids(user, case, picks)))
    except DomainError as exc:
        problems.append(exc.message)
        return ids


def _reorder(documents: list[Document], op: str) -> list[Document]:
    """Apply a press of the page's order buttons: sort:<key>, up:<id>, down:<id>, remove:<id>."""
    verb, _, arg = op.partition(":")
    if verb == "sort" and arg in SORT_KEYS:
        keys = {
            "name": lambda d: (d.filename.casefold(), d.pk),
            "date": lambda d: (d.created_at, d.pk),
            "custodian": lambda d: (d.custodian.casefold(), d.filename.casefold(), d.pk),
        }
        return sorted(documents, key=keys[arg])
    ids = [d.pk for d in documents]
    if verb not in ("up", "down", "remove") or not arg.isdigit() or int(arg) not in ids:
        return documents
    at = ids.index(int(arg))
    if verb == "remove":
        return documents[:at] + documents[at + 1 :]
    to = at - 1 if verb == "up" else at + 1
    if 0 <= to < len(documents):
        documents = list(documents)
        documents[at], documents[to] = documents[to], documents[at]
    return documents


def _rows(documents: list[Document]) -> list[tuple[Document, str, int, str]]:
    """Each picked document with the reason a production would refuse it ("" if none), the
    pages it would take (a rendered kind's rendition pages, see production_pages), and why the
    door out holds it back unless a lawyer includes it ("" if it does not)."""
    return [
        (a.document, a.refused, a.pages, a.held_back)
        for a in production_preview.producible(documents)
    ]


def _field_names(document_id: int) -> dict[str, str]:
    """The order form's fields of one picked document: its inclusion's reason and its
    withholding (privilege, then the privilege log's fields)."""
    return {
        "include": f"include_{document_id}",
        "withhold": f"withhold_{document_id}",
        "description": f"withhold_description_{document_id}",
        "date": f"withhold_date_{document_id}",
        "author": f"withhold_author_{document_id}",
        "recipients": f"withhold_recipients_{document_id}",
    }


def _typed(request: HttpRequest, document_id: int) -> dict[str, str]:
    """What was typed for the document's inclusion or withholding, kept when the form comes
    back (keys as `_field_names`)."""
    names = _field_names(document_id)
    return {key: str(request.POST.get(name, ""))[:4000] for key, name in names.items()}


def _withholdings(data: QueryDict, ids: list[int]) -> list[privilege_log.Withholding]:
    """The picked documents marked to withhold (`withhold_<id>`: a privilege), with their
    privilege log fields; the service checks them."""
    withheld = []
    for i in ids:
        names = _field_names(i)
        privilege = str(data.get(names["withhold"], ""))
        if not privilege:
            continue
        typed_date = str(data.get(names["date"], "")).strip()
        try:
            date = datetime.date.fromisoformat(typed_date) if typed_date else None
        except ValueError:
            raise DomainError(
                f"The privilege log date of document {i} is not a date (YYYY-MM-DD)."
            ) from None
        withheld.append(
            privilege_log.Withholding(
                document_id=i,
                privilege=privilege,
                description=str(data.get(names["description"], "")),
                date=date,
                author=str(data.get(names["author"], "")),
                recipients=str(data.get(names["recipients"], "")),
            )
        )
    return withheld


def _inclusions(data: QueryDict, ids: list[int]) -> list[production_door_services.Inclusion]:
    """The reasons typed for held-back documents (`include_<id>`): each one typed is an
    inclusion; the service checks who may include and what the reason must be."""
    typed = ((i, str(data.get(f"include_{i}", ""))) for i in ids)
    return [
        production_door_services.Inclusion(document_id=i, reason=reason)
        for i, reason in typed
        if reason.strip()
    ]


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def production_new(request: HttpRequest, case_id: int) -> HttpResponse:
    """A new production. GET: the documents the address picks (see PickForm), with an empty
    stamp form. POST: the form again after an Add or order button, a preview (the stamp on
    page 1), or the commit, which goes to the production's page; any refusal comes back on the
    form (400) with everything kept as typed and nothing written."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    problems: list[str] = []
    preview, first_label = "", ""
    if request.method == "POST":
        op = str(request.POST.get("op") or "preview")[:40]
        try:
            ids = ids_from(request.POST, "documents")
        except forms.ValidationError as exc:
            ids, problems = [], list(exc.messages)
        if op == "add":
            ids = _add(user, case, PickForm(request.POST), ids, problems)
        documents = production_preview.picked_documents_for_user(
            user=user, case_id=case.pk, ids=ids
        )
        if op in ("preview", "commit"):
            form = ProductionForm(request.POST, commit=op == "commit")
            if form.is_valid() and not problems:
                try:
                    if op == "commit":
                        return _commit(request, case, form)
                    preview, first_label = _preview(case, form, documents)
                except DomainError as exc:
                    form.add_error(None, exc.message)
        else:
            documents = _reorder(documents, op)
            form = ProductionForm(initial=request.POST.dict())
    else:
        picks = PickForm(request.GET or None)
        ids = _add(user, case, picks, [], problems) if picks.is_bound else []
        documents = production_preview.picked_documents_for_user(
            user=user, case_id=case.pk, ids=ids
        )
        initial = {k: request.GET.get(k, "")[:40] for k in ("volume", "bates_prefix")}
        form = ProductionForm(initial={k: v for k, v in initial.items() if v})
    refused = bool(problems or (form.is_bound and form.errors))
    rows = _rows(documents)
    context = {
        "case": case,
        "form": form,
        # Read last: the request's audit row is its first read, the documents picked (or the
        # search, packet or list filter that picked them).
        "packets": _packets(user, case.pk),
        "problems": problems,
        # Each row with the reason typed for it, kept when the form comes back.
        "rows": [(*row, _typed(request, row[0].pk)) for row in rows],
        "pages": sum(row[2] for row in rows),
        # Held-back documents get a reason field for a lawyer of the case (the service decides).
        "may_include": case_selectors.case_is_lawyer(user=user, case=case),
        "privileges": PrivilegeLogEntry.Privilege.choices,
        "sort_keys": SORT_KEYS,
        "preview": preview,
        "first_label": first_label,
        # The preview's address for document 0; the script puts the first document's id in.
        "preview_base": reverse(
            "documents:production_preview", kwargs={"case_id": case.pk, "document_id": 0}
        ),
        "order": ",".join(str(d.pk) for d in documents),
    }
    return render(request, "documents/production_new.html", context, status=400 if refused else 200)


def _commit(request: HttpRequest, case: Case, form: ProductionForm) -> HttpResponse:
    data, stamp = form.cleaned_data, form.stamp()
    # A document marked to withhold leaves the production for its privilege log.
    withheld = _withholdings(request.POST, data["documents"])
    out = {w.document_id for w in withheld}
    production = production_services.production_create(
        case=case,
        actor=request_user(request),
        volume=data["volume"],
        prefix=stamp.prefix,
        # The ids as posted: one the selector dropped (another case's) is refused by name.
        document_ids=[i for i in data["documents"] if i not in out],
        start_number=stamp.start_number,
        digits=stamp.digits,
        position=stamp.position,
        legend=stamp.legend,
        legend_position=stamp.legend_position,
        font_size=stamp.font_size,
        margin=stamp.margin,
        page_suffix_digits=stamp.page_suffix_digits,
        inclusions=_inclusions(request.POST, data["documents"]),
        withheld=withheld,
    )
    messages.success(request, f"Production {production} is queued for stamping.")
    return redirect("documents:production_detail", case_id=case.pk, production_id=production.pk)


def _preview(case: Case, form: ProductionForm, documents: list[Document]) -> tuple[str, str]:
    """(the preview image's address, page 1's Bates number), or DomainError saying why not."""
    if not documents:
        raise DomainError("Pick at least one document.")
    stamp = form.stamp()
    first = production_preview.stamp_check(case=case, stamp=stamp)
    production_services.production_document_check(documents[0])
    query = {k: v for k, v in form.data.items() if k in PreviewForm.base_fields and v != ""}
    base = reverse(
        "documents:production_preview",
        kwargs={"case_id": case.pk, "document_id": documents[0].pk},
    )
    return f"{base}?{urlencode(query)}", stamp.settings().page_label(first, 0)


@login_required
@require_safe
def production_preview_png(request: HttpRequest, case_id: int, document_id: int) -> HttpResponse:
    """Page 1 of the document stamped with the query string's settings, as PNG (bounded size).
    A refusal is plain text (400) with the production's own message; nothing is written."""
    case = case_or_404(request, case_id)
    form = PreviewForm(request.GET)
    if not form.is_valid():
        text = "; ".join(f"{k}: {' '.join(str(e) for e in v)}" for k, v in form.errors.items())
        return HttpResponse(text, status=400, content_type="text/plain; charset=utf-8")
    try:
        png = production_preview.production_preview_png_for_user(
            user=request_user(request),
            case_id=case.pk,
            document_id=document_id,
            stamp=form.stamp(),
        )
    except NotFound:
        raise Http404("No such document.") from None
    except Unavailable as exc:
        busy = HttpResponse(exc.message, status=503, content_type="text/plain; charset=utf-8")
        busy["Retry-After"] = str(exc.retry_after)
        return busy
    except DomainError as exc:
        return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
    return HttpResponse(png, content_type="image/png")


@login_required
@require_safe
def production_detail(request: HttpRequest, case_id: int, production_id: int) -> HttpResponse:
    """One production: range, maker, status and live progress, its documents with their Bates
    ranges, the stamped PDF, and its exports (with a form to start one)."""
    production = _production(request, case_id, production_id)
    items = Paginator(list(production.items.all()), ITEMS_PER_PAGE).get_page(
        request.GET.get("page")
    )
    context = {
        "case": production.case,
        "production": production,
        "first_bates": production.bates(production.first_number),
        "last_bates": production.bates(production.last_number),
        "page_obj": items,
        "rows": [
            (
                item,
                *production.item_bates(item),
                item.page_count,  # a rendered kind's rendered pages
            )
            for item in items
        ],
        "exports": list(production.exports.select_related("created_by")),
        "privilege_log": list(
            production.privilege_log.select_related("document").order_by("order")
        ),
        "export_form": ExportForm(),
    }
    return render(request, "documents/production_detail.html", context)


@login_required
@require_POST
def production_export(request: HttpRequest, case_id: int, production_id: int) -> HttpResponse:
    """Start building the volume (zip with load files); back to the production's page."""
    production = _production(request, case_id, production_id)
    form = ExportForm(request.POST)
    if not form.is_valid():
        messages.error(request, " ".join(str(e) for errors in form.errors.values() for e in errors))
    else:
        try:
            production_services.production_export_request(
                production=production,
                actor=request_user(request),
                encoding=form.cleaned_data["encoding"],
                image_dpi=form.cleaned_data["image_dpi"],
            )
        except DomainError as exc:
            messages.error(request, exc.message)
        else:
            messages.success(request, "The volume is being built; it appears below when ready.")
    return redirect("documents:production_detail", case_id=case_id, production_id=production.pk)
