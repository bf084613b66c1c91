"""The websocket Origin check for browser (session cookie) sockets, on the real ASGI application:
an Origin is accepted exactly when Django's CSRF check would accept it for a page request with
the same headers — the socket's own scheme, host and port, or a CSRF_TRUSTED_ORIGINS entry.
Another port or scheme of the same host is another origin; no Origin at all is refused.
Refused handshakes are closed before acceptance (1000, an HTTP 403 to a real client).
tests/e2e/test_socket_origin_browser.py shows the same in Chromium."""

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from asgiref.testing import ApplicationCommunicator
from channels.testing import WebsocketCommunicator
from django.conf import settings

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.models import Case
from tests.conftest import session_client

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True, databases="__all__")]

REFUSED = (False, 1000)
ACCEPTED = (True, None)


class _Socket(WebsocketCommunicator):
    """A websocket handshake with the scope a server gives it (scheme, server address)."""

    def __init__(self, path: str, headers: list[tuple[bytes, bytes]], **scope: Any) -> None:
        from lexweb.asgi import application

        self.scope = {
            "type": "websocket",
            "path": path,
            "query_string": b"",
            "headers": headers,
            "subprotocols": [],
            **scope,
        }
        ApplicationCommunicator.__init__(self, application, self.scope)
        self.response_headers = None


async def _handshake(
    case: Case,
    user: User,
    *,
    origin: str | None,
    host: str | None = "127.0.0.1:8000",
    extra: list[tuple[bytes, bytes]] | None = None,
    **scope: Any,
) -> tuple[bool, int | None]:
    client = await sync_to_async(session_client)(user)
    sessionid = client.cookies[settings.SESSION_COOKIE_NAME].value
    headers = [(b"cookie", f"{settings.SESSION_COOKIE_NAME}={sessionid}".encode())]
    if host is not None:
        headers.append((b"host", host.encode()))
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    headers += extra or []
    scope.setdefault("scheme", "ws")
    scope.setdefault("server", ("127.0.0.1", 8000))
    socket = _Socket(f"/ws/cases/{case.pk}/events/", headers, **scope)
    state: tuple[bool, int | None] = await socket.connect(timeout=10)
    await socket.disconnect()
    return state


async def test_the_sockets_own_origin_is_accepted(lawyer: User, case: Case) -> None:
    assert await _handshake(case, lawyer, origin="http://127.0.0.1:8000") == ACCEPTED


async def test_another_port_of_the_same_host_is_refused(lawyer: User, case: Case) -> None:
    # The finding: a page on http://127.0.0.1:<another port> rode the session cookie.
    assert await _handshake(case, lawyer, origin="http://127.0.0.1:8001") == REFUSED
    # The host's default port is another port too.
    assert await _handshake(case, lawyer, origin="http://127.0.0.1") == REFUSED


async def test_the_scheme_must_match(lawyer: User, case: Case) -> None:
    # A ws:// socket: an https page of the same host and port is another origin, and so is an
    # http page for a wss:// socket.
    assert await _handshake(case, lawyer, origin="https://127.0.0.1:8000") == REFUSED
    assert await _handshake(case, lawyer, origin="http://127.0.0.1:8000", scheme="wss") == REFUSED
    assert await _handshake(case, lawyer, origin="https://127.0.0.1:8000", scheme="wss") == (
        ACCEPTED
    )


async def test_a_host_not_in_allowed_hosts_is_no_origin_of_ours(lawyer: User, case: Case) -> None:
    # DNS rebinding: the page and the socket both say evil.test, which this site is not.
    assert await _handshake(case, lawyer, origin="http://evil.test", host="evil.test") == REFUSED


async def test_without_a_host_header_the_server_address_is_the_origin(
    lawyer: User, case: Case
) -> None:
    assert await _handshake(case, lawyer, origin="http://127.0.0.1:8000", host=None) == ACCEPTED
    assert await _handshake(case, lawyer, origin="http://127.0.0.1:8001", host=None) == REFUSED


async def test_a_missing_or_opaque_origin_is_refused_for_a_session_socket(
    lawyer: User, case: Case
) -> None:
    assert await _handshake(case, lawyer, origin=None) == REFUSED
    assert await _handshake(case, lawyer, origin="null") == REFUSED


async def test_two_origin_headers_are_refused(lawyer: User, case: Case) -> None:
    extra = [(b"origin", b"http://127.0.0.1:8000")]
    assert await _handshake(case, lawyer, origin="http://127.0.0.1:8000", extra=extra) == REFUSED


async def test_trusted_origins_match_exactly_or_by_their_subdomain_pattern(
    lawyer: User, case: Case, settings: Any
) -> None:
    # Behind a reverse proxy that keeps its own Host: the firm's address is trusted.
    settings.CSRF_TRUSTED_ORIGINS = ["https://lexweb.firm.lan", "https://*.desk.firm.lan"]
    assert await _handshake(case, lawyer, origin="https://lexweb.firm.lan") == ACCEPTED
    assert await _handshake(case, lawyer, origin="http://lexweb.firm.lan") == REFUSED
    assert await _handshake(case, lawyer, origin="https://lexweb.firm.lan:8443") == REFUSED
    assert await _handshake(case, lawyer, origin="https://other.firm.lan") == REFUSED
    assert await _handshake(case, lawyer, origin="https://a.desk.firm.lan") == ACCEPTED
    assert await _handshake(case, lawyer, origin="http://a.desk.firm.lan") == REFUSED


async def test_the_proxys_https_header_counts_only_where_it_is_trusted(
    lawyer: User, case: Case, settings: Any
) -> None:
    proto = [(b"x-forwarded-proto", b"https")]
    origin = "https://127.0.0.1:8000"
    assert await _handshake(case, lawyer, origin=origin, extra=proto) == REFUSED
    settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
    assert await _handshake(case, lawyer, origin=origin, extra=proto) == ACCEPTED


async def test_a_bearer_token_socket_needs_no_origin(lawyer: User, case: Case) -> None:
    # A bearer token is no ambient credential: a browser page cannot make the browser send it.
    issued = await sync_to_async(account_services.token_create)(user=lawyer, name="agent")
    headers = [(b"authorization", f"Bearer {issued.secret}".encode())]
    socket = _Socket(f"/ws/cases/{case.pk}/events/", headers, scheme="ws")
    assert await socket.connect(timeout=10) == ACCEPTED
    await socket.disconnect()
