from collections.abc import Callable
from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.security.websocket import AllowedHostsOriginValidator
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse
from django.urls import reverse

from apps.accounts import services, throttle
from apps.accounts.context import origin
from apps.accounts.reauth import CONFIRMED, FAILURE_RECORDED, SIGNED_IN
from apps.accounts.selectors import SocketAccess
from apps.accounts.services import token_authenticate_full


class RequestOriginMiddleware:
    """Records the client address (as the ASGI server saw it) and the edge for the audit log.

    Behind a reverse proxy, run uvicorn with --proxy-headers so REMOTE_ADDR is the client's.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        via = "api" if request.path.startswith("/api/") else "web"
        with origin(client_ip=request.META.get("REMOTE_ADDR") or None, via=via):
            return self.get_response(request)


class SignInGuardMiddleware:
    """Every password POSTed to the app's sign-in, the admin's sign-in or the confirm-password
    page is one attempt: throttled per account and per client address before the password is
    looked at (throttle.py; a clear 429 page when spent), and a failed attempt is audited
    exactly once, whether or not the form got as far as checking the password.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        guarded = request.method == "POST" and request.path in _guarded_paths(request)
        if not guarded:
            return self.get_response(request)
        from apps.accounts.views import too_many_attempts

        email = _attempted_email(request)
        client_ip = request.META.get("REMOTE_ADDR") or None
        wait = throttle.signin_attempt_begin(email=email, client_ip=client_ip)
        if wait:
            services.signin_failure_record(tried=email, action="auth.login_throttled")
            return too_many_attempts(request, wait)
        response = self.get_response(request)
        if getattr(request, SIGNED_IN, False) or getattr(request, CONFIRMED, False):
            throttle.signin_attempt_succeeded(email=email, client_ip=client_ip)
        elif not getattr(request, FAILURE_RECORDED, False):
            services.signin_failure_record(tried=email)
        return response


def _guarded_paths(request: HttpRequest) -> set[str]:
    paths = {reverse("admin:login")}
    if request.user.is_authenticated:
        # Signed in: the app's sign-in page checks no password (it redirects), the confirm
        # page does.
        paths.add(reverse("accounts:reauth"))
    else:
        paths.add(reverse("accounts:login"))
    return paths


def _attempted_email(request: HttpRequest) -> str:
    if request.path == reverse("accounts:reauth"):
        return str(getattr(request.user, "email", ""))
    return str(request.POST.get("username", ""))


class WebsocketAuthMiddleware:
    """Authenticates websocket handshakes.

    `Authorization: Bearer <token>` (agents): the token's user; no Origin check, since a bearer
    token is not sent by browsers on their own. Otherwise (browsers): the session cookie, and
    the Origin must be one of ALLOWED_HOSTS so another site cannot ride the cookie.
    Unauthenticated connections reach the consumer as AnonymousUser and are refused there.
    Authenticated ones carry `scope["access"]`, a SocketAccess naming the token (with its
    expiry) or the session, so the consumer can close the socket when that ends
    (apps/accounts/access.py).
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.browser = AllowedHostsOriginValidator(AuthMiddlewareStack(_SessionAccess(inner)))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        client = scope.get("client") or (None, None)
        with origin(client_ip=client[0], via="websocket"):
            raw = _bearer(scope)
            if raw is None:
                return await self.browser(scope, receive, send)
            token = await database_sync_to_async(token_authenticate_full)(raw=raw)
            if token is None:
                scope = dict(scope, user=AnonymousUser(), access=None)
            else:
                access = SocketAccess(
                    user_id=token.user_id, token_id=token.pk, token_expires_at=token.expires_at
                )
                scope = dict(scope, user=token.user, access=access)
            return await self.inner(scope, receive, send)


class _SessionAccess:
    """Inside channels' auth stack: records which session a browser socket signed in with."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        user, session = scope.get("user"), scope.get("session")
        access = None
        if user is not None and user.is_authenticated and session is not None:
            access = SocketAccess(user_id=user.pk, session_key=session.session_key or "")
        return await self.inner(dict(scope, access=access), receive, send)


def _bearer(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return None
