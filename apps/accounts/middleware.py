from collections import defaultdict
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import DisallowedHost
from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.http import is_same_domain

from apps.accounts import services, throttle
from apps.accounts.context import origin
from apps.accounts.reauth import CONFIRMED, FAILURE_RECORDED, SIGNED_IN
from apps.accounts.selectors import SocketAccess
from apps.accounts.services import token_authenticate_full


class RequestOriginMiddleware:
    """Records the client address (as the ASGI server saw it) and the edge for the audit log.

    REMOTE_ADDR is the peer's address; the web server replaces it with the X-Forwarded-For
    address only for a peer named in LEXWEB_TRUSTED_PROXIES (lexweb/launcher.py), so a client
    cannot choose the address that is throttled and audited.
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
    the Origin must be one Django's CSRF check would accept for the same request (see
    socket_origin_allowed), so no other site, nor another port or scheme of this host, can ride
    the cookie; refused handshakes are closed before they are accepted (channels'
    WebsocketDenier, seen by the client as an HTTP 403). Unauthenticated connections reach the
    consumer as AnonymousUser and are refused there.
    Authenticated ones carry `scope["access"]`, a SocketAccess naming the token (with its
    expiry) or the session, so the consumer can close the socket when that ends
    (apps/accounts/access.py).
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.browser = _SameOriginOnly(AuthMiddlewareStack(_SessionAccess(inner)))

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


class _SameOriginOnly:
    """Lets a browser socket through only from an origin socket_origin_allowed() accepts."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if socket_origin_allowed(scope):
            return await self.inner(scope, receive, send)
        return await WebsocketDenier()(scope, receive, send)


def socket_origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether a websocket handshake's Origin is one Django's CSRF middleware would accept for
    an unsafe request with the same headers (CsrfViewMiddleware._origin_verified): exactly the
    socket's own origin (`https` for wss, else `http`, `://`, the Host header as
    request.get_host() reads and validates it against ALLOWED_HOSTS), or one of
    CSRF_TRUSTED_ORIGINS (exact, or its `*.` subdomain form). Scheme, host and port must all
    match: a page on another port of the same host is another origin. A handshake without an
    Origin, or with the opaque `null`, is refused.
    """
    handshake = _Handshake(scope)
    request_origin = handshake.META.get("HTTP_ORIGIN")
    if not request_origin or request_origin == "null":
        return False
    try:
        good_host = handshake.get_host()
    except (DisallowedHost, KeyError):  # KeyError: neither a Host header nor a server address
        pass
    else:
        scheme = "https" if handshake.is_secure() else "http"
        if request_origin == f"{scheme}://{good_host}":
            return True
    trusted: list[str] = list(settings.CSRF_TRUSTED_ORIGINS)
    if request_origin in trusted:
        return True
    try:
        parsed = urlsplit(request_origin)
    except ValueError:
        return False
    subdomains: dict[str, list[str]] = defaultdict(list)
    for pattern in (urlsplit(entry) for entry in trusted if "*" in entry):
        subdomains[pattern.scheme].append(pattern.netloc.lstrip("*"))
    return any(is_same_domain(parsed.netloc, host) for host in subdomains.get(parsed.scheme, ()))


class _Handshake(HttpRequest):
    """A websocket handshake as a Django request: META from its headers as ASGIRequest fills
    it, the server address, and `https` for a wss socket, so get_host() and is_secure() (with
    SECURE_PROXY_SSL_HEADER where set) answer as they would for a page request."""

    def __init__(self, scope: dict[str, Any]) -> None:
        super().__init__()
        self._scheme = "https" if scope.get("scheme") in {"wss", "https"} else "http"
        server = scope.get("server") or (None, None)
        if server[0] is not None:
            self.META["SERVER_NAME"] = str(server[0])
            self.META["SERVER_PORT"] = str(server[1] or "")
        headers: dict[str, list[str]] = defaultdict(list)
        for raw_name, raw_value in scope.get("headers", []):
            name = raw_name.decode("latin-1").lower()
            if "_" in name:  # as Django: no ambiguity between underscores and hyphens
                continue
            headers["HTTP_" + name.upper().replace("-", "_")].append(raw_value.decode("latin-1"))
        self.META.update({key: ",".join(values) for key, values in headers.items()})

    def _get_scheme(self) -> str:
        return self._scheme


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
