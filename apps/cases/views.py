from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from apps.accounts.models import User
from apps.cases import activity, selectors, services
from apps.cases.forms import BreakGlassForm, CaseForm, MemberAddForm, MemberRoleForm
from apps.cases.models import Case
from apps.cases.shortcuts import case_or_404, request_user
from lexweb.errors import DomainError


@login_required
@require_safe
def case_list(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    context = {
        "cases": selectors.case_list_for_user(user=user),
        "can_create": selectors.user_can_create_case(user=user),
    }
    return render(request, "cases/case_list.html", context)


@login_required
def case_create(request: HttpRequest) -> HttpResponse:
    user = request_user(request)
    if not selectors.user_can_create_case(user=user):
        messages.error(request, "Only lawyers and admins open cases.")
        return redirect("cases:list")
    # Bound on every POST, even an empty one, so that missing fields are reported.
    form = CaseForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            case = services.case_create(actor=user, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            messages.success(request, f"Case {case.number} is open.")
            return redirect("cases:detail", case_id=case.pk)
    status = 400 if form.errors else 200
    return render(request, "cases/case_form.html", {"form": form}, status=status)


@login_required
@require_safe
def case_detail(request: HttpRequest, case_id: int) -> HttpResponse:
    user = request_user(request)
    case = case_or_404(request, case_id)
    selectors.case_view_for_user(user=user, case=case)
    return _render_case(request, case, MemberAddForm())


def _render_case(
    request: HttpRequest,
    case: Case,
    add_form: MemberAddForm,
    status: int = 200,
    candidates: list[User] | None = None,
) -> HttpResponse:
    """The case page; `add_form` is bound (with what was typed and its errors) after a refusal."""
    user = request_user(request)
    context = {
        "case": case,
        "memberships": selectors.membership_list_for_user(user=user, case_id=case.pk),
        "can_manage": selectors.case_can_manage_members(user=user, case=case),
        # An admin may add a lawyer (only) to a case with no active lawyer.
        "can_rescue": selectors.case_can_rescue(user=user, case=case),
        "add_form": add_form,
        "candidates": candidates or [],
        "activity": activity.activity_feed_for_user(user=user, case_id=case.pk),
        "break_glass": selectors.break_glass_list_for_case(case=case)[:10],
        "now": timezone.now(),
    }
    return render(request, "cases/case_detail.html", context, status=status)


@login_required
@require_safe
def case_health(request: HttpRequest, case_id: int) -> HttpResponse:
    """Workers and live updates for this case: the round-trip check that used to sit on the
    case page. Nothing of the case's material is shown, so nothing is audited."""
    case = case_or_404(request, case_id)
    return render(request, "cases/case_health.html", {"case": case})


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def break_glass(request: HttpRequest) -> HttpResponse:
    """Admins only (404 for anyone else): reach a case you are not on, for a written reason."""
    user = request_user(request)
    if not user.is_active or user.role != User.Role.ADMIN:
        raise Http404("No such page.")
    form = BreakGlassForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            grant = services.case_break_glass(actor=user, **form.cleaned_data)
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            messages.warning(
                request,
                f"Break-glass access until {timezone.localtime(grant.expires_at):%H:%M %Z}: "
                "recorded, and shown to the case's members.",
            )
            return redirect("cases:detail", case_id=grant.case_id)
    context = {
        "form": form,
        "orphaned": selectors.case_list_orphaned_for_admin(user=user)[:100],
        "grants": selectors.break_glass_list_live_for_user(user=user),
        "minutes": settings.LEXWEB_BREAK_GLASS_SECONDS // 60,
    }
    status = 400 if form.errors else 200
    return render(request, "cases/break_glass.html", context, status=status)


@login_required
@require_POST
def member_add(request: HttpRequest, case_id: int) -> HttpResponse:
    user = request_user(request)
    case = case_or_404(request, case_id)
    form = MemberAddForm(request.POST)
    if not selectors.case_can_manage_members(
        user=user, case=case
    ) and not selectors.case_can_rescue(user=user, case=case):
        # No form is shown to them: the service's refusal, as a message on the case page.
        if not form.is_valid():
            messages.error(request, "Give a colleague's e-mail address and a role.")
            return redirect("cases:detail", case_id=case.pk)
        return _apply(
            request,
            case,
            lambda: services.member_add(
                actor=user,
                case=case,
                role=form.cleaned_data["role"],
                email=form.cleaned_data["email"],
            ),
            "",
        )
    candidates: list[User] = []
    if form.is_valid():
        data = form.cleaned_data
        user_id, email = data["user_id"], ""
        if user_id is None:
            email_typed, candidates = selectors.member_pick_for_user(
                user=user, case=case, text=data["email"]
            )
            email = email_typed or ""
            if email_typed is None and len(candidates) == 1:
                user_id = candidates[0].pk
            elif email_typed is None and not candidates:
                form.add_error(
                    "email",
                    f"Nobody found for “{data['email']}”: type part of the name or e-mail "
                    f"address of a colleague with an active account who is not on this case yet.",
                )
            elif email_typed is None:
                form.add_error(
                    "email", f"{len(candidates)} people match “{data['email']}”: choose one."
                )
        if not form.errors:
            try:
                membership = services.member_add(
                    actor=user, case=case, role=data["role"], email=email, user_id=user_id
                )
            except DomainError as exc:
                form.add_error("email" if exc.code == "not_found" else None, exc.message)
            else:
                messages.success(request, f"{membership.user} now has access to this case.")
                return redirect("cases:detail", case_id=case.pk)
    # The page again, with what was typed and what is wrong with it, as a form error.
    return _render_case(request, case, form, status=400, candidates=candidates)


@login_required
@require_safe
def member_candidates(request: HttpRequest, case_id: int) -> HttpResponse:
    """The member picker's search: people who may be added to the case whose name or e-mail
    contains `q` (JSON). Only for those who manage the case's members (403 for its other
    members; 404 for non-members, as for every case page)."""
    user = request_user(request)
    case = case_or_404(request, case_id)
    query = request.GET.get("q", "")[:254]
    try:
        people = selectors.member_candidates_for_user(user=user, case=case, query=query)
    except DomainError as exc:
        return JsonResponse({"detail": exc.message}, status=403)
    return JsonResponse(
        {
            "query": query,
            "people": [
                {
                    "id": p.pk,
                    "name": p.full_name or p.email,
                    "email": p.email,
                    "role": p.role,
                    "role_label": p.get_role_display(),
                }
                for p in people
            ],
        }
    )


@login_required
@require_POST
def member_role(request: HttpRequest, case_id: int, user_id: int) -> HttpResponse:
    case = case_or_404(request, case_id)
    form = MemberRoleForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose lawyer or staff.")
        return redirect("cases:detail", case_id=case.pk)
    return _apply(
        request,
        case,
        lambda: services.member_change_role(
            actor=request_user(request), case=case, user_id=user_id, role=form.cleaned_data["role"]
        ),
        "Role changed.",
    )


@login_required
@require_POST
def member_remove(request: HttpRequest, case_id: int, user_id: int) -> HttpResponse:
    case = case_or_404(request, case_id)
    return _apply(
        request,
        case,
        lambda: services.member_remove(actor=request_user(request), case=case, user_id=user_id),
        "Member removed; their access ended now.",
    )


@login_required
@require_POST
def worker_check(request: HttpRequest, case_id: int) -> HttpResponse:
    case = case_or_404(request, case_id)
    job_id = services.case_worker_check_request(actor=request_user(request), case=case)
    if request.headers.get("Accept") == "application/json":
        # The page's script posts in place so that its websocket stays open for the answer.
        return JsonResponse({"job_id": job_id}, status=202)
    messages.info(request, "Check queued: a notice appears here when a worker has run it.")
    return redirect("cases:health", case_id=case.pk)


def _apply(
    request: HttpRequest, case: Case, action: Callable[[], object], success: str
) -> HttpResponse:
    """Run a member service; show its DomainError as a message instead of a form error page."""
    try:
        action()
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, success)
    return redirect("cases:detail", case_id=case.pk)
