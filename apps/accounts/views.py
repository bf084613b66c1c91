from datetime import timedelta

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login, update_session_auth_hash
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_http_methods, require_POST

from apps.accounts import link_services, selectors, services, throttle
from apps.accounts.forms import (
    PersonChangeForm,
    PersonCreateForm,
    PersonPasswordForm,
    ReauthForm,
    SignInForm,
    TokenForm,
)
from apps.accounts.models import User
from apps.accounts.reauth import (
    CONFIRMED,
    FAILURE_RECORDED,
    SIGNED_IN_BY_LINK,
    mark_reauthenticated,
)
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
            services.user_reauthenticate(user=user, password=form.cleaned_data["password"])
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


# --- People: the admin's users page -----------------------------------------------------------


def _people_admin(request: HttpRequest) -> User:
    """The signed-in admin; anyone else gets 403 (login_required ran first)."""
    user = _user(request)
    if not services.user_can_manage_people(user):
        raise PermissionDenied("Only admins manage people.")
    return user


def _person_or_404(user_id: int) -> User:
    person = selectors.user_get_for_admin(user_id=user_id)
    if person is None:
        raise Http404("No such person.")
    return person


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def people(request: HttpRequest) -> HttpResponse:
    """Everyone with an account, and a form to create one (with a role, with or without a
    first password)."""
    admin = _people_admin(request)
    form = PersonCreateForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            created = services.user_create(
                email=data["email"],
                full_name=data["full_name"],
                role=data["role"],
                password=data["password"] or None,
                actor=admin,
            )
        except DomainError as exc:
            form.add_error("email" if exc.code == "conflict" else None, exc.message)
        else:
            how = (
                "they can sign in with the password you gave"
                if created.has_usable_password()
                else "they cannot sign in until you set a password for them"
            )
            messages.success(request, f"Account for {created.email} created; {how}.")
            return redirect("accounts:person", user_id=created.pk)
    query = request.GET.get("q", "")[:254]
    everyone = selectors.user_list_for_admin(query=query)
    context = {
        "form": form,
        "people": everyone[: selectors.PEOPLE_PAGE_MAX],
        "count": everyone.count(),
        "query": query,
        "page_max": selectors.PEOPLE_PAGE_MAX,
        "mail_configured": link_services.mail_configured(),
        "link_minutes": link_services.link_minutes(),
    }
    return render(request, "accounts/people.html", context, status=400 if form.errors else 200)


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def person(request: HttpRequest, user_id: int) -> HttpResponse:
    """One person: change name, e-mail and role; deactivate; set a password."""
    admin = _people_admin(request)
    subject = _person_or_404(user_id)
    initial = {"full_name": subject.full_name, "email": subject.email, "role": subject.role}
    form = PersonChangeForm(request.POST if request.method == "POST" else None, initial=initial)
    if request.method == "POST" and form.is_valid():
        changes = {name: form.cleaned_data[name] for name in form.changed_data}
        try:
            if changes:
                services.user_update(actor=admin, user_id=subject.pk, changes=changes)
        except DomainError as exc:
            form.add_error("email" if "e-mail" in exc.message else None, exc.message)
        else:
            messages.success(request, "Saved." if changes else "Nothing changed.")
            return redirect("accounts:person", user_id=subject.pk)
    return _person_page(request, subject, form, PersonPasswordForm())


def _person_page(
    request: HttpRequest, subject: User, form: PersonChangeForm, password_form: PersonPasswordForm
) -> HttpResponse:
    status = 400 if form.errors or password_form.errors else 200
    context = {
        "person": subject,
        "form": form,
        "password_form": password_form,
        "is_self": subject.pk == _user(request).pk,
        "mail_configured": link_services.mail_configured(),
        "link_minutes": link_services.link_minutes(),
    }
    return render(request, "accounts/person.html", context, status=status)


@login_required
@require_POST
def person_password(request: HttpRequest, user_id: int) -> HttpResponse:
    admin = _people_admin(request)
    subject = _person_or_404(user_id)
    password_form = PersonPasswordForm(request.POST)
    if password_form.is_valid():
        try:
            services.user_password_set(
                actor=admin, user_id=subject.pk, password=password_form.cleaned_data["password"]
            )
        except DomainError as exc:
            password_form.add_error("password", exc.message)
        else:
            messages.success(
                request,
                f"Password set for {subject.email}; their open browser sessions ended. Tell "
                f"them the password in person or by phone, not by e-mail.",
            )
            return redirect("accounts:person", user_id=subject.pk)
    initial = {"full_name": subject.full_name, "email": subject.email, "role": subject.role}
    return _person_page(request, subject, PersonChangeForm(initial=initial), password_form)


@login_required
@require_POST
def person_active(request: HttpRequest, user_id: int) -> HttpResponse:
    """Deactivate (active=0) or reactivate (active=1) a person."""
    admin = _people_admin(request)
    subject = _person_or_404(user_id)
    wanted = request.POST.get("active")
    if wanted not in ("0", "1"):
        messages.error(request, "Say whether the account should be active.")
        return redirect("accounts:person", user_id=subject.pk)
    try:
        services.user_set_active(actor=admin, user_id=subject.pk, active=wanted == "1")
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"{subject.email} can sign in again."
            if wanted == "1"
            else f"{subject.email} is deactivated: they are signed out and cannot sign in, their "
            f"API tokens stop working and their open pages lose live updates. Nothing of theirs "
            f"is deleted.",
        )
    return redirect("accounts:person", user_id=subject.pk)


# --- Sign-in links ------------------------------------------------------------------------------


@login_required
@require_POST
def person_sign_in_link(request: HttpRequest, user_id: int) -> HttpResponse:
    """Send the person a sign-in link by mail (only where a mail server is configured)."""
    admin = _people_admin(request)
    subject = _person_or_404(user_id)
    try:
        link = link_services.signin_link_send(
            actor=admin, user_id=subject.pk, site_url=request.build_absolute_uri("/")
        )
    except DomainError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request,
            f"Sent a sign-in link to {subject.email}. It works once, until "
            f"{link_services.when_text(link.expires_at)}; any earlier link no longer works.",
        )
    if request.POST.get("back") == "people":
        return redirect("accounts:people")
    return redirect("accounts:person", user_id=subject.pk)


@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def sign_in_link(request: HttpRequest, secret: str) -> HttpResponse:
    """A sign-in link from a mail. GET shows who it signs in and a button (mail scanners open
    links, so opening changes nothing); POST signs the person in, once, and asks a person
    without a password to choose one."""
    client_ip = request.META.get("REMOTE_ADDR") or None
    try:
        if request.method == "POST":
            person = link_services.signin_link_use(secret=secret, client_ip=client_ip)
        else:
            link = link_services.signin_link_check(secret=secret, client_ip=client_ip)
    except throttle.TooManyAttempts as exc:
        return too_many_attempts(request, exc.retry_after)
    except link_services.LinkRefused as exc:
        refused = {"message": exc.message}
        return render(request, "accounts/sign_in_link_refused.html", refused, status=exc.status)
    if request.method != "POST":
        context = {"person": link.user, "expires_at": link.expires_at}
        return render(request, "accounts/sign_in_link.html", context)
    setattr(request, SIGNED_IN_BY_LINK, True)
    login(request, person, backend="django.contrib.auth.backends.ModelBackend")
    link_services.session_mark_signed_in_by_link(request.session)
    if not person.has_usable_password():
        messages.info(request, "You are signed in. Choose a password to sign in with from now on.")
    else:
        messages.success(
            request,
            f"You are signed in. If you forgot your password, choose a new one now (for the "
            f"next {link_services.link_minutes()} minutes).",
        )
    return redirect("accounts:password_choose")


@login_required
@never_cache
@require_http_methods(["GET", "HEAD", "POST"])
def password_choose(request: HttpRequest) -> HttpResponse:
    """A person signed in with a link chooses their own password: a first one, or a new one
    for the one they forgot, without typing the old one."""
    user = _user(request)
    link_at = link_services.signed_in_by_link_at(request.session)
    if not link_services.password_choose_allowed(user=user, link_signed_in_at=link_at):
        return render(
            request, "accounts/password_choose.html", {"is_admin": user.is_staff}, status=403
        )
    form = PersonPasswordForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        try:
            link_services.password_choose(
                user=user, password=form.cleaned_data["password"], link_signed_in_at=link_at
            )
        except DomainError as exc:
            form.add_error("password", exc.message)
        else:
            update_session_auth_hash(request, user)
            request.session.pop(link_services.LINK_SESSION_KEY, None)
            messages.success(request, "Your password is set: sign in with it from now on.")
            return redirect(settings.LOGIN_REDIRECT_URL)
    context = {"form": form, "allowed": True, "has_password": user.has_usable_password()}
    return render(
        request, "accounts/password_choose.html", context, status=400 if form.errors else 200
    )
