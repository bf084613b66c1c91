"""The Drafts tab (each draft with its latest version, packet and verification state),
creating a draft (pasted or uploaded, against a frozen packet) and the draft page (its
versions, adding one)."""

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from apps.cases.models import Case
from apps.cases.shortcuts import case_or_404, request_user
from apps.drafting import selectors
from apps.drafting.forms import (
    DraftForm,
    VersionForm,
)
from apps.drafting.models import Draft, DraftVersion
from apps.drafting.services import drafts as services
from apps.evidence.models import Packet
from apps.evidence.selectors import packets as packet_selectors
from lexweb.errors import DomainError, NotFound

DRAFTS_PER_VIEW = 50


def version_url(case_id: int, draft_id: int, number: int) -> str:
    return reverse(
        "drafting:version", kwargs={"case_id": case_id, "draft_id": draft_id, "number": number}
    )


# --- Drafts tab and creating a draft ---------------------------------------------------------


@login_required
@require_safe
def draft_list(request: HttpRequest, case_id: int) -> HttpResponse:
    """The case's drafts, newest first, each with its latest version, packet and the state of
    that version's verification."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    drafts = Paginator(
        selectors.draft_list_for_user(user=user, case_id=case.pk), DRAFTS_PER_VIEW
    ).get_page(request.GET.get("page"))
    latest = selectors.draft_latest_versions(list(drafts))
    states = selectors.version_states(list(latest.values()))
    rows = [
        (
            draft,
            latest.get(draft.pk),
            states.get(latest[draft.pk].pk) if draft.pk in latest else None,
        )
        for draft in drafts
    ]
    context = {"case": case, "drafts": drafts, "rows": rows}
    return render(request, "drafting/draft_list.html", context)


def frozen_packets(request: HttpRequest, case: Case) -> list[tuple[int, str]]:
    packets = packet_selectors.packet_list_for_user(user=request_user(request), case_id=case.pk)
    return [
        (
            p.pk,
            f"{p.title} (version {p.version}, {p.page_count} "
            f"page{'s' if p.page_count != 1 else ''})",
        )
        for p in packets.filter(status=Packet.Status.FROZEN)
    ]


def _content(form: VersionForm) -> services.VersionContent:
    """The version's text from a valid form: the uploaded file, or the pasted text."""
    upload = form.upload()
    if upload is not None:
        limit = settings.LEXWEB_MAX_DRAFT_BYTES
        return services.uploaded_content(data=upload.read(limit + 1), filename=upload.name or "")
    return services.pasted_content(
        text=form.cleaned_data["text"],
        media_type=form.cleaned_data["media_type"] or DraftVersion.MediaType.MARKDOWN,
    )


def _form_status(form: VersionForm) -> int:
    return 413 if form.too_large else 400


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def draft_new(request: HttpRequest, case_id: int) -> HttpResponse:
    """GET: the form (title, kind, a frozen packet of the case, the text pasted or uploaded).
    POST: create the draft with its version 1, then show it."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    packets = frozen_packets(request, case)
    bound = request.method == "POST"
    form = DraftForm(
        request.POST if bound else None, request.FILES if bound else None, packets=packets
    )
    status = 200
    if form.is_bound:
        if form.is_valid():
            try:
                draft = services.draft_create(
                    user=user,
                    case_id=case.pk,
                    title=form.cleaned_data["title"],
                    kind=form.cleaned_data["kind"],
                    packet_id=form.cleaned_data["packet"],
                    content=_content(form),
                )
            except NotFound as exc:  # the packet is not one of this case's
                form.add_error("packet", exc.message)
            except services.PacketNotFrozen as exc:
                form.add_error("packet", exc.message)
            except DomainError as exc:  # the text: empty, too large, not readable
                form.add_error("file" if form.upload() else "text", exc.message)
            else:
                messages.success(request, f"Draft “{draft.title}” created as version 1.")
                return redirect(version_url(case.pk, draft.pk, 1))
        status = _form_status(form)
    context = {"case": case, "form": form, "has_packets": bool(packets)}
    return render(request, "drafting/draft_new.html", context, status=status)


# --- The draft page --------------------------------------------------------------------------


def _draft(request: HttpRequest, case: Case, draft_id: int) -> Draft:
    try:
        return selectors.draft_get_for_user(
            user=request_user(request), case_id=case.pk, draft_id=draft_id
        )
    except NotFound:
        raise Http404("No such draft.") from None


def _render_draft(
    request: HttpRequest,
    case: Case,
    draft: Draft,
    *,
    form: VersionForm | None = None,
    status: int = 200,
) -> HttpResponse:
    versions = list(draft.versions.all())
    states = selectors.version_states(versions)
    written_by = selectors.versions_written_by(versions)
    context = {
        "case": case,
        "draft": draft,
        "rows": [
            (version, states[version.pk], written_by.get(version.pk))
            for version in reversed(versions)
        ],
        "form": form or VersionForm(),
    }
    return render(request, "drafting/draft_detail.html", context, status=status)


@login_required
@require_safe
def draft_detail(request: HttpRequest, case_id: int, draft_id: int) -> HttpResponse:
    case = case_or_404(request, case_id)
    return _render_draft(request, case, _draft(request, case, draft_id))


@login_required
@require_POST
def version_add(request: HttpRequest, case_id: int, draft_id: int) -> HttpResponse:
    """The draft's next version, pasted or uploaded; errors come back in the form."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    draft = _draft(request, case, draft_id)
    form = VersionForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            version = services.version_add(
                user=user, case_id=case.pk, draft_id=draft.pk, content=_content(form)
            )
        except NotFound:
            raise Http404("No such draft.") from None
        except DomainError as exc:
            form.add_error("file" if form.upload() else "text", exc.message)
        else:
            messages.success(request, f"Version {version.number} added: verify it next.")
            return redirect(version_url(case.pk, draft.pk, version.number))
    return _render_draft(request, case, draft, form=form, status=_form_status(form))
