from datetime import timedelta

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from apps.accounts import selectors, services, throttle
from apps.accounts.forms import ReauthForm, SignInForm, TokenForm
from apps.accounts.models import User
from apps.accounts.reauth import CONFIRMED, FAILURE_RECORDED, mark_reauthenticated
from apps.accounts.reauth import reauthenticated_at as session_reauthenticated_at
from lexweb.errors import DomainError, NotFound


class SignInView(auth_views.LoginView):
    template_name = "accounts/login.html"
    authentication_form = SignInForm
    redirect_authenticated_user = True


class SignOutView(auth_views.LogoutView):
    pass


def _user(request: HttpRequest) -> User:
    user = request.user
    assert isinstance(user, User)  # noqa: S101  (login_required ran first)
    return user


def too_many_attempts(request: HttpRequest, wait_seconds: int) -> HttpResponse:
    """The page a throttled sign-in gets (SignInGuardMiddleware): 429 with Retry-After."""
    context = {"minutes": throttle.minutes(wait_seconds)}
    response = render(request, "accounts/throttled.html", context, status=429)
    response["Retry-After"] = str(wait_seconds)
    return response


@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    """List the user's API tokens and create new ones. A new secret is shown exactly once.
    Creating one needs the password entered within LEXWEB_REAUTH_SECONDS."""
    user = _user(request)
    confirmed_at = session_reauthenticated_at(request.session)
    form = TokenForm(request.POST) if request.method == "POST" else TokenForm()
    issued, status = None, 200
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data["expires_in_days"]
        try:
            issued = services.token_issue(
                user=user,
                name=form.cleaned_data["name"],
                expires_at=timezone.now() + timedelta(days=days) if days else None,
                via_token=None,
                reauthenticated_at=confirmed_at,
            )
        except services.ReauthenticationRequired:
            # The form keeps what was typed; the message says what to do.
            form.add_error(
                None,
                f"Your password confirmation has expired (it lasts "
                f"{services.reauth_minutes()} minutes): confirm your password, then create "
                f"the token again.",
            )
            status = 403
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            form = TokenForm()
    if form.errors and status == 200:
        status = 400
    context = {
        "form": form,
        "issued": issued,
        "tokens": selectors.token_list_for_user(user=user),
        "confirmed": services.reauthentication_fresh(reauthenticated_at=confirmed_at),
        "reauth_minutes": services.reauth_minutes(),
        "reauth_url": reverse("accounts:reauth") + "?next=" + reverse("accounts:tokens"),
    }
    return render(request, "accounts/tokens.html", context, status=status)


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = services.token_revoke(user=_user(request), token_id=token_id)
    except NotFound:
        raise Http404("No such token.") from None
    messages.success(request, f"Token “{token.name}” is revoked; it no longer works.")
    return redirect("accounts:tokens")


@login_required
@require_POST
def token_revoke_all(request: HttpRequest) -> HttpResponse:
    user = _user(request)
    count = services.token_revoke_all(user=user, actor=user)
    if count:
        messages.success(
            request,
            f"Revoked {count} token{'s' if count != 1 else ''}; programs using them stop "
            f"working at once.",
        )
    else:
        messages.info(request, "You have no live tokens to revoke.")
    return redirect("accounts:tokens")


@login_required
def reauthenticate(request: HttpRequest) -> HttpResponse:
    """Confirm the password before a sensitive step (creating an API token); the confirmation
    lasts LEXWEB_REAUTH_SECONDS. Throttled and audited like a sign-in."""
    user = _user(request)
    next_url = request.POST.get("next") or request.GET.get("next") or ""
    if not url_has_allowed_host_and_scheme(
        next_url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        next_url = reverse("accounts:tokens")
    form = ReauthForm(request.POST) if request.method == "POST" else ReauthForm()
    if request.method == "POST" and form.is_valid():
        try:
            services.reauthenticate(user=user, password=form.cleaned_data["password"])
        except DomainError as exc:
            setattr(request, FAILURE_RECORDED, True)
            form.add_error("password", exc.message)
        else:
            setattr(request, CONFIRMED, True)
            mark_reauthenticated(request.session)
            messages.success(
                request,
                f"Password confirmed: for the next {services.reauth_minutes()} minutes you "
                f"can create API tokens.",
            )
            return redirect(next_url)
    context = {"form": form, "next": next_url, "reauth_minutes": services.reauth_minutes()}
    return render(request, "accounts/reauth.html", context, status=400 if form.errors else 200)
