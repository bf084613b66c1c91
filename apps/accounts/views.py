from datetime import timedelta

from django.contrib import messages
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST

from apps.accounts import selectors, services
from apps.accounts.forms import SignInForm, TokenForm
from lexweb.errors import DomainError, NotFound


class SignInView(auth_views.LoginView):
    template_name = "accounts/login.html"
    authentication_form = SignInForm
    redirect_authenticated_user = True


class SignOutView(auth_views.LogoutView):
    pass


@login_required
def tokens(request: HttpRequest) -> HttpResponse:
    """List the user's API tokens and create new ones. A new secret is shown exactly once."""
    form = TokenForm(request.POST) if request.method == "POST" else TokenForm()
    issued = None
    if request.method == "POST" and form.is_valid():
        days = form.cleaned_data["expires_in_days"]
        try:
            issued = services.token_create(
                user=request.user,  # type: ignore[arg-type]  # login_required
                name=form.cleaned_data["name"],
                expires_at=timezone.now() + timedelta(days=days) if days else None,
            )
        except DomainError as exc:
            form.add_error(None, exc.message)
        else:
            form = TokenForm()
    context = {
        "form": form,
        "issued": issued,
        "tokens": selectors.token_list_for_user(user=request.user),  # type: ignore[arg-type]
    }
    return render(request, "accounts/tokens.html", context, status=400 if form.errors else 200)


@login_required
@require_POST
def token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = services.token_revoke(user=request.user, token_id=token_id)  # type: ignore[arg-type]
    except NotFound:
        raise Http404("No such token.") from None
    messages.success(request, f"Token “{token.name}” is revoked; it no longer works.")
    return redirect("accounts:tokens")
