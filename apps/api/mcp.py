"""The MCP server at /mcp: the agent API's workflow as Model Context Protocol tools
(apps/api/mcp_tools.py), served over streamable HTTP by the official SDK (`mcp`), beside
Django in the one ASGI application (lexweb/asgi.py routes /mcp here).

Authentication is the API's bearer token (`bearer_authenticate`: bad ones throttled per
address); an HTTP request to /mcp without a valid one gets 401 before the SDK sees it, and
its Host is checked against ALLOWED_HOSTS as Django checks it. The server is stateless (no
session kept between requests: any web process answers any request, and a restart loses
nothing); each request is authenticated on its own.

The SDK's session manager needs a task group for its life: it is started on the first request
of each event loop (the product serves with uvicorn `--lifespan off`) and lasts as long as the
loop.
"""

import asyncio
import json
import weakref
from collections.abc import Awaitable, Callable

from asgiref.sync import ThreadSensitiveContext
from channels.db import database_sync_to_async
from django.conf import settings
from django.db import DatabaseError
from django.http.request import split_domain_port, validate_host
from mcp.server.mcpserver import MCPServer
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp, Receive, Scope, Send

from apps.accounts import throttle
from apps.accounts.context import origin
from apps.api import mcp_tools_more  # noqa: F401  (registers its tools in TOOLS)
from apps.api.api import bearer_authenticate
from apps.api.mcp_core import (
    CALLER,
    DATABASE_GONE,
    TOOLS,
    Caller,
    arguments_checked,
    database_gone,
)
from apps.api.mcp_tools import INSTRUCTIONS
from lexweb import failures

PATH = "/mcp"

server: MCPServer = MCPServer(
    "lexweb", instructions=INSTRUCTIONS, tools=TOOLS, middleware=[arguments_checked]
)


# --- HTTP ------------------------------------------------------------------------------------


def _request_body_limit() -> int:
    """The largest upload, base64 (4 bytes for 3), with room for the JSON-RPC around it."""
    return -(-settings.LEXWEB_MAX_UPLOAD_BYTES // 3) * 4 + settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class _Running:
    """The session manager serving one event loop, and the task that holds it open."""

    def __init__(self) -> None:
        server.streamable_http_app(
            streamable_http_path=PATH,
            stateless_http=True,
            max_request_body_size=_request_body_limit(),
            # The SDK's own check allows only localhost names; `serve` checks the Host against
            # ALLOWED_HOSTS as Django does, and no ambient credential rides a request here (no
            # cookie; a bearer token only), so a page that rebinds a name gets 401 anyway.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        self.manager: StreamableHTTPSessionManager = server.session_manager
        self.started = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._hold())

    async def _hold(self) -> None:
        try:
            async with self.manager.run():
                self.started.set()
                await asyncio.Event().wait()  # until the loop ends
        finally:
            # Should the manager fail to start, requests waiting for it get its error (a 500)
            # instead of waiting for ever.
            self.started.set()


_running: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Running]" = (
    weakref.WeakKeyDictionary()
)


async def _manager() -> StreamableHTTPSessionManager:
    loop = asyncio.get_running_loop()
    running = _running.get(loop)
    if running is None:
        running = _running[loop] = _Running()
    await running.started.wait()
    return running.manager


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name.lower() == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer":
                return token.strip()
    return None


async def _refuse(
    send: Send, status: int, code: str, detail: str, headers: list[tuple[bytes, bytes]]
) -> None:
    body = json.dumps({"detail": detail, "code": code}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _host_allowed(scope: Scope) -> bool:
    """Whether the Host header names this site as Django would accept it (ALLOWED_HOSTS)."""
    host = next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"host"), "")
    domain, _ = split_domain_port(host)
    allowed = settings.ALLOWED_HOSTS
    if settings.DEBUG and not allowed:
        allowed = [".localhost", "127.0.0.1", "[::1]"]
    return bool(domain) and validate_host(domain, allowed)


async def serve(scope: Scope, receive: Receive, send: Send) -> None:
    """An HTTP request to /mcp: its Host checked as Django checks it, authenticated with its
    bearer token, then the SDK's."""
    if not _host_allowed(scope):
        await _refuse(send, 400, "bad_request", "This host name is not served here.", [])
        return
    client_ip = (scope.get("client") or (None,))[0]
    raw = _bearer(scope)
    try:
        token = None
        if raw is not None:
            with origin(client_ip=client_ip, via="mcp"):
                token = await database_sync_to_async(bearer_authenticate)(
                    raw=raw, client_ip=client_ip
                )
    except throttle.TooManyAttempts as exc:
        retry = [(b"retry-after", str(exc.retry_after).encode())]
        await _refuse(send, 429, exc.code, exc.message, retry)
        return
    except DatabaseError as exc:
        if not database_gone(exc):
            raise
        retry = [(b"retry-after", str(failures.DATABASE_RETRY_AFTER_SECONDS).encode())]
        await _refuse(send, 503, "database_unavailable", DATABASE_GONE, retry)
        return
    if token is None:
        await _refuse(
            send,
            401,
            "unauthenticated",
            "Authentication required: send a valid, unexpired 'Authorization: Bearer <token>'.",
            [(b"www-authenticate", b"Bearer")],
        )
        return
    manager = await _manager()
    scope = dict(scope, path=PATH, **{CALLER: Caller(token=token, client_ip=client_ip)})
    async with ThreadSensitiveContext():
        await manager.handle_request(scope, receive, send)


def with_mcp(django: Callable[..., Awaitable[None]]) -> ASGIApp:
    """HTTP to /mcp to the MCP server, everything else to `django`."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].rstrip("/") == PATH:
            await serve(scope, receive, send)
        else:
            await django(scope, receive, send)

    return app
