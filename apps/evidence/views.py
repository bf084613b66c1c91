"""Browser pages for a case's evidence packets: the list with its create form, the packet page
(items with provenance, flags and warnings; add and remove forms), freezing (a confirmation
page, then POST), versions, the comparison of two versions and the frozen snapshot's pages.

Every page reads through apps.evidence.selectors.packets (membership checked, read audited) and
every change goes through apps.evidence.services.packets; a packet the user cannot see is the
same 404 as a missing one. Forms work without JavaScript; refusals come back in the form.
"""

from collections.abc import Mapping

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from apps.cases.models import Case
from apps.cases.shortcuts import case_or_404, request_user
from apps.documents import selectors as document_selectors
from apps.evidence.forms import ItemAddForm, ItemRemoveForm, PacketForm
from apps.evidence.models import Packet
from apps.evidence.selectors import packets as selectors
from apps.evidence.services import packets as services
from lexweb.errors import Conflict, DomainError, NotFound

PACKETS_PER_VIEW = 50
PAGES_PER_VIEW = 20


def _packet(request: HttpRequest, case: Case, packet_id: int) -> Packet:
    try:
        return selectors.packet_get_for_user(
            user=request_user(request), case_id=case.pk, packet_id=packet_id
        )
    except NotFound:
        raise Http404("No such packet.") from None


def _status_for(exc: DomainError) -> int:
    if isinstance(exc, NotFound):
        return 404
    if isinstance(exc, Conflict):
        return 409
    if isinstance(exc, services.ProvenanceRefused):
        return 422
    return 400


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def packet_list(request: HttpRequest, case_id: int) -> HttpResponse:
    """The case's packets, latest version of each first. POST opens a new packet."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    form = PacketForm(request.POST if request.method == "POST" else None)
    if form.is_bound and form.is_valid():
        try:
            packet = services.packet_create(
                user=user,
                case_id=case.pk,
                title=form.cleaned_data["title"],
                purpose=form.cleaned_data["purpose"],
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Packet “{packet.title}” is open: add its items below.")
            return redirect("evidence:detail", case_id=case.pk, packet_id=packet.pk)
    packets = Paginator(
        selectors.packet_list_for_user(user=user, case_id=case.pk).select_related("created_by"),
        PACKETS_PER_VIEW,
    ).get_page(request.GET.get("page"))
    context = {"case": case, "packets": packets, "form": form}
    return render(request, "evidence/packet_list.html", context, status=400 if form.errors else 200)


def _render_detail(
    request: HttpRequest,
    case: Case,
    packet: Packet,
    *,
    add_form: ItemAddForm | None = None,
    remove_errors: Mapping[int, str] | None = None,
    error: str = "",
    status: int = 200,
) -> HttpResponse:
    editable = packet.status == Packet.Status.EDITABLE
    if editable and add_form is None:
        add_form = ItemAddForm(
            documents=document_selectors.document_choices_for_user(
                user=request_user(request), case_id=case.pk
            )
        )
    context = {
        "case": case,
        "packet": packet,
        "editable": editable,
        "views": selectors.packet_item_views(packet, user=request_user(request)),
        "add_form": add_form if editable else None,
        "remove_form": ItemRemoveForm(),
        "remove_errors": dict(remove_errors or {}),
        "error": error,
    }
    return render(request, "evidence/packet_detail.html", context, status=status)


@login_required
@require_safe
def packet_detail(request: HttpRequest, case_id: int, packet_id: int) -> HttpResponse:
    case = case_or_404(request, case_id)
    return _render_detail(request, case, _packet(request, case, packet_id))


@login_required
@require_POST
def packet_items_add(request: HttpRequest, case_id: int, packet_id: int) -> HttpResponse:
    """Add one document (or page range) with its reason. A refusal re-renders the packet page
    with the reason in the form: 422 for provenance, 409 for a frozen packet, 400 otherwise."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    packet = _packet(request, case, packet_id)
    documents = document_selectors.document_choices_for_user(user=user, case_id=case.pk)
    form = ItemAddForm(request.POST, documents=documents)
    if not form.is_valid():
        return _render_detail(request, case, packet, add_form=form, status=400)
    data = form.cleaned_data
    selection = services.Selection(
        document_id=data["document"],
        first_page=data["first_page"],
        last_page=data["last_page"],
        reason=data["reason"],
    )
    try:
        services.packet_items_add(
            user=user, case_id=case.pk, packet_id=packet.pk, selections=[selection]
        )
    except DomainError as exc:
        packet = _packet(request, case, packet_id)
        if packet.status != Packet.Status.EDITABLE:  # frozen meanwhile: no form to show it in
            return _render_detail(request, case, packet, error=exc.message, status=409)
        if isinstance(exc, NotFound):  # a document that is not (or no longer) the case's
            form.add_error("document", exc.message)
        else:
            form.add_error(None, exc.message)
        return _render_detail(request, case, packet, add_form=form, status=_status_for(exc))
    messages.success(request, "Item added.")
    return redirect("evidence:detail", case_id=case.pk, packet_id=packet.pk)


@login_required
@require_POST
def packet_item_remove(
    request: HttpRequest, case_id: int, packet_id: int, item_id: int
) -> HttpResponse:
    """Take one item out, with the reason for the audit; errors come back beside the item."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    packet = _packet(request, case, packet_id)
    form = ItemRemoveForm(request.POST)
    if not form.is_valid():
        error = "; ".join(str(e) for e in form.errors.get("reason", ["Say why it comes out."]))
        return _render_detail(request, case, packet, remove_errors={item_id: error}, status=400)
    try:
        services.packet_item_remove(
            user=user,
            case_id=case.pk,
            packet_id=packet.pk,
            item_id=item_id,
            reason=form.cleaned_data["reason"],
        )
    except NotFound:
        raise Http404("No such item.") from None
    except DomainError as exc:
        if packet.status != Packet.Status.EDITABLE:
            return _render_detail(request, case, packet, error=exc.message, status=409)
        return _render_detail(
            request, case, packet, remove_errors={item_id: exc.message}, status=_status_for(exc)
        )
    messages.success(request, "Item removed.")
    return redirect("evidence:detail", case_id=case.pk, packet_id=packet.pk)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def packet_freeze(request: HttpRequest, case_id: int, packet_id: int) -> HttpResponse:
    """GET asks for confirmation (what freezing means); POST freezes."""
    case = case_or_404(request, case_id)
    packet = _packet(request, case, packet_id)
    error, status = "", 200
    if request.method == "POST":
        try:
            packet = services.packet_freeze(
                user=request_user(request), case_id=case.pk, packet_id=packet.pk
            )
        except DomainError as exc:
            error, status = exc.message, _status_for(exc)
        else:
            messages.success(
                request,
                f"Frozen: {packet.page_count} page{'s' if packet.page_count != 1 else ''}, "
                f"content hash {packet.content_hash[:12]}…",
            )
            return redirect("evidence:detail", case_id=case.pk, packet_id=packet.pk)
    context = {"case": case, "packet": packet, "item_count": packet.items.count(), "error": error}
    return render(request, "evidence/packet_freeze.html", context, status=status)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def packet_versions(request: HttpRequest, case_id: int, packet_id: int) -> HttpResponse:
    """Every version of the packet, with links to compare them. POST makes the next editable
    version of a frozen packet."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    error, status = "", 200
    if request.method == "POST":
        try:
            packet = services.packet_new_version(user=user, case_id=case.pk, packet_id=packet_id)
        except NotFound:
            raise Http404("No such packet.") from None
        except DomainError as exc:
            error, status = exc.message, _status_for(exc)
        else:
            messages.success(request, f"Version {packet.version} is open for editing.")
            return redirect("evidence:detail", case_id=case.pk, packet_id=packet.pk)
    try:
        versions = selectors.packet_versions_for_user(
            user=user, case_id=case.pk, packet_id=packet_id
        )
    except NotFound:
        raise Http404("No such packet.") from None
    current = next(v for v in versions if v.pk == packet_id)
    context = {"case": case, "packet": current, "versions": versions, "error": error}
    return render(request, "evidence/packet_versions.html", context, status=status)


@login_required
@require_safe
def packet_compare(
    request: HttpRequest, case_id: int, packet_id: int, other_id: int
) -> HttpResponse:
    """What changed between two versions of one packet."""
    case = case_or_404(request, case_id)
    try:
        comparison = selectors.packet_compare_for_user(
            user=request_user(request), case_id=case.pk, packet_id=packet_id, other_id=other_id
        )
    except NotFound:
        raise Http404("No such packet.") from None
    except DomainError as exc:
        context = {"case": case, "error": exc.message, "packet_id": packet_id}
        return render(request, "evidence/packet_compare.html", context, status=400)
    context = {"case": case, "comparison": comparison, "packet_id": packet_id}
    return render(request, "evidence/packet_compare.html", context)


@login_required
@require_safe
def packet_pages(request: HttpRequest, case_id: int, packet_id: int) -> HttpResponse:
    """The frozen snapshot, PAGES_PER_VIEW pages at a time, as the models will read it."""
    case = case_or_404(request, case_id)
    # The snapshot is read first, so that the request's audit row is the read of its pages.
    try:
        snapshot = selectors.packet_pages_for_user(
            user=request_user(request), case_id=case.pk, packet_id=packet_id
        )
    except NotFound:
        raise Http404("No such packet.") from None
    except DomainError as exc:
        packet = _packet(request, case, packet_id)
        context = {"case": case, "packet": packet, "error": exc.message, "pages": None}
        return render(request, "evidence/packet_pages.html", context, status=409)
    packet = _packet(request, case, packet_id)
    pages = Paginator(snapshot, PAGES_PER_VIEW).get_page(request.GET.get("page"))
    context = {"case": case, "packet": packet, "pages": pages, "error": ""}
    return render(request, "evidence/packet_pages.html", context)
