from collections.abc import Callable
from typing import Any

from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.security.websocket import AllowedHostsOriginValidator
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponse

from apps.accounts.context import origin
from apps.accounts.services import token_authenticate


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


class WebsocketAuthMiddleware:
    """Authenticates websocket handshakes.

    `Authorization: Bearer <token>` (agents): the token's user; no Origin check, since a bearer
    token is not sent by browsers on their own. Otherwise (browsers): the session cookie, and
    the Origin must be one of ALLOWED_HOSTS so another site cannot ride the cookie.
    Unauthenticated connections reach the consumer as AnonymousUser and are refused there.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.browser = AllowedHostsOriginValidator(AuthMiddlewareStack(inner))

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        client = scope.get("client") or (None, None)
        with origin(client_ip=client[0], via="websocket"):
            raw = _bearer(scope)
            if raw is None:
                return await self.browser(scope, receive, send)
            user = await database_sync_to_async(token_authenticate)(raw=raw)
            scope = dict(scope, user=user or AnonymousUser())
            return await self.inner(scope, receive, send)


def _bearer(scope: dict[str, Any]) -> str | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return None
