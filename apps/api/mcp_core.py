"""What every MCP tool (apps/api/mcp_tools.py, mcp_tools_more.py) is built on: the registry,
the caller, errors as the REST API answers them, and `idempotency_key` for the tools that
change something.

Each tool is a few lines calling the same service or selector its REST endpoint calls
(apps/*/api.py), so case access, audit and limits are the API's own, and answers with the
same ninja schema (`structuredContent`, with its JSON schema as the tool's `outputSchema`).
Request bodies are the same `StrictIn` schemas (no coercion, unknown fields refused), taken as
a `body` argument. Errors are the API's: a tool error whose text ends with the JSON
`{"detail", "code", "status"}` the REST endpoint would answer (status: its HTTP status).

Sync Django code runs through channels' `database_sync_to_async` (connections closed after each
call), in the request's thread (mcp.py enters asgiref's ThreadSensitiveContext per request, as
Django's own ASGI handler does), audited as made over "mcp".

`idempotency_key` (a `keyed_tool`'s argument) is the REST API's `Idempotency-Key`, through the
same machinery (apps/api/idempotency.py): keys per token, shared with the token's REST requests;
the request is the tool's name and its other arguments; the first answer (or API error) is kept
24 hours and answered again for the same request, a different request with the key is 409
`idempotency_key_reused`, one still running 409 `idempotency_key_in_progress`. The key's lock,
the tool's work and the stored answer are one `database_sync_to_async` call (one connection: the
lock is a session lock, released when the call ends).
"""

import functools
import hashlib
import json
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, cast

import pydantic_core
from channels.db import database_sync_to_async
from django.db import DatabaseError, InterfaceError, OperationalError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent
from ninja.errors import HttpError
from ninja.errors import ValidationError as NinjaValidationError
from pydantic import AfterValidator, Field
from pydantic import ValidationError as PydanticError

from apps.accounts import throttle
from apps.accounts.context import origin
from apps.accounts.models import ApiToken, User
from apps.accounts.selectors import SocketAccess
from apps.api import idempotency
from apps.api.models import IdempotentRequest
from apps.drafting import run_stream
from lexweb import failures
from lexweb.errors import DomainError

T = TypeVar("T")
logger = logging.getLogger(__name__)
DATABASE_GONE = (
    "The database is not answering (it may be restarting). Try again in "
    f"{failures.DATABASE_RETRY_AFTER_SECONDS} s."
)

# Ids as the API takes them: positive 64-bit whole numbers sent as JSON numbers ("5" refused).
Id = Annotated[int, Field(strict=True, ge=1, le=2**63 - 1)]
Wait = Annotated[
    int,
    Field(
        strict=True,
        ge=0,
        le=run_stream.MAX_WAIT_SECONDS,
        description="Seconds (0 to 60) to wait for the first event after `after` when there is "
        "none yet; the answer comes as soon as one is stored.",
    ),
]
After = Annotated[int, Field(strict=True, ge=0, le=2**63 - 1)]


def _no_nul(value: str) -> str:
    """Text arguments outside a `body` (whose StrictIn does the same): PostgreSQL refuses NUL."""
    if "\x00" in value:
        raise ValueError("must not contain NUL (\\x00) characters")
    return value


NoNul = AfterValidator(_no_nul)

TOOLS: list[Tool] = []


def tool(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Register `fn` as a tool: its arguments and its answer's JSON schema from its signature,
    its answer given as the REST API writes it (a ninja schema serialized by field name, not
    alias). The SDK would validate the answer again against its schema, which a ninja schema
    with resolvers (computed fields) cannot take back in; the answer is that schema's already,
    and the SDK's client checks it against the published `outputSchema`."""

    @functools.wraps(fn)
    async def answer(*args: Any, **kwargs: Any) -> CallToolResult:
        value = pydantic_core.to_jsonable_python(await fn(*args, **kwargs))
        structured = {"result": value} if registered.fn_metadata.wrap_output else value
        text = json.dumps(structured, ensure_ascii=False)
        return CallToolResult(
            content=[TextContent(type="text", text=text)], structured_content=structured
        )

    registered = Tool.from_function(answer)
    # Published (outputSchema), not validated again by the SDK (see above).
    registered.fn_metadata.output_model = None
    TOOLS.append(registered)
    return fn


async def arguments_checked(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """Middleware: a tool call whose arguments fail the tool's schema answers as the REST API
    answers a request that fails its schema, 422 `invalid` with the fields and what is wrong
    with each (`errors`), before the SDK's own check (which would answer its own text)."""
    params = ctx.params or {}
    name, arguments = params.get("name"), params.get("arguments") or {}
    found = next((t for t in TOOLS if t.name == name), None)
    if ctx.method != "tools/call" or found is None or not isinstance(arguments, dict):
        return await call_next(ctx)
    try:
        found.fn_metadata.validate_arguments(arguments)
    except PydanticError as exc:
        errors = [{"loc": [str(p) for p in e["loc"]], "msg": e["msg"]} for e in exc.errors()]
        summary = "; ".join(f"{'.'.join(e['loc'])}: {e['msg']}" for e in errors[:5])
        body = {"detail": f"Invalid request: {summary}", "code": "invalid", "status": 422}
        text = f"Error executing tool {name}: {json.dumps({**body, 'errors': errors})}"
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
    return await call_next(ctx)


# --- Who is calling ------------------------------------------------------------------------


@dataclass(frozen=True)
class Caller:
    token: ApiToken
    client_ip: str | None

    @property
    def user(self) -> User:
        return self.token.user

    def access(self, case_id: int) -> SocketAccess:
        """How this request got in, for the feeds' access watch (as the REST feeds' token)."""
        return SocketAccess(
            user_id=self.token.user_id,
            token_id=self.token.pk,
            token_expires_at=self.token.expires_at,
            case_id=case_id,
        )


CALLER = "lexweb.mcp.caller"  # the scope key mcp.py puts the Caller under


def _caller(ctx: Context) -> Caller:
    request = ctx.request_context.request
    caller = getattr(request, "scope", {}).get(CALLER)
    if not isinstance(caller, Caller):  # never: mcp.serve lets no request without one through
        raise tool_error(401, "unauthenticated", "Authentication required.")
    return caller


# --- Errors --------------------------------------------------------------------------------


def tool_error(status: int, code: str, detail: str) -> ToolError:
    return ToolError(json.dumps({"detail": detail, "code": code, "status": status}))


def database_gone(exc: BaseException | None) -> bool:
    """Whether `exc` (or what caused it) is a database that does not answer (lexweb/failures)."""
    while exc is not None:
        if isinstance(exc, OperationalError | InterfaceError):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def translated(exc: Exception) -> ToolError:
    """The API's answer to `exc` as a tool error (lexweb/failures.py's for the unexpected)."""
    if isinstance(exc, throttle.TooManyAttempts):
        return tool_error(429, exc.code, exc.message)
    if isinstance(exc, DomainError):
        return tool_error(exc.status, exc.code, exc.message)
    if isinstance(exc, HttpError):
        codes = {400: "bad_request", 403: "forbidden", 404: "not_found", 413: "too_large"}
        return tool_error(exc.status_code, codes.get(exc.status_code, "invalid"), str(exc))
    if isinstance(exc, NinjaValidationError):
        errors = "; ".join(
            f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg', '')}" for e in exc.errors[:5]
        )
        return tool_error(422, "invalid", f"Invalid request: {errors}")
    if database_gone(exc):
        return tool_error(503, "database_unavailable", DATABASE_GONE)
    logger.error("MCP tool failed", exc_info=exc)
    return tool_error(
        500,
        "internal_error",
        "Something went wrong on the server; it is in the server's log. Try again.",
    )


async def run_sync(ctx: Context, work: Callable[[User], T]) -> T:
    """`work(user)` in a thread with a database connection, as the caller, audited as "mcp";
    in a `keyed_tool` called with an `idempotency_key`, once per key (see the module)."""
    caller = _caller(ctx)
    keyed = _KEYED.get()
    _KEYED.set(None)  # the key is the tool's one call of run_sync

    def run() -> T:
        with origin(client_ip=caller.client_ip, via="mcp"):
            if keyed is None:
                return work(caller.user)
            return cast(T, _once(keyed, caller, lambda: work(caller.user)))

    try:
        result: T = await database_sync_to_async(run)()
    except ToolError:
        raise
    except Exception as exc:
        raise translated(exc) from exc
    return result


async def run_async(ctx: Context, work: Callable[[Caller], Awaitable[T]]) -> T:
    caller = _caller(ctx)
    try:
        with origin(client_ip=caller.client_ip, via="mcp"):
            return await work(caller)
    except Exception as exc:
        raise translated(exc) from exc


# --- Idempotency keys ------------------------------------------------------------------------

IdempotencyKey = Annotated[
    str,
    Field(
        max_length=idempotency.MAX_KEY,
        pattern=r"^[ -~]*$",
        description="Your id for this request (printable ASCII, at most 200), the REST API's "
        "Idempotency-Key: the same key with the same tool and arguments within 24 hours "
        "answers the first answer again without doing it twice; with other arguments 409 "
        "`idempotency_key_reused`; while the first is running 409 "
        "`idempotency_key_in_progress`. Per token.",
    ),
]


@dataclass(frozen=True)
class _Keyed:
    key: str
    tool: str
    arguments_sha256: str


_KEYED: ContextVar[_Keyed | None] = ContextVar("lexweb_mcp_keyed", default=None)
_METHOD = "MCP"  # an MCP tool's key is never a REST request's (whose method is POST, ...)


def keyed_tool(fn: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    """Register `fn`, a tool that changes something and declares
    `idempotency_key: IdempotencyKey = ""`, as `tool` does; called with a key, its one
    `run_sync` runs once per key (see the module)."""

    @functools.wraps(fn)
    async def keyed(*args: Any, **kwargs: Any) -> Any:
        key = kwargs.get("idempotency_key", "")
        if not key:
            return await fn(*args, **kwargs)
        problem = idempotency.key_problem(key)
        if problem:
            raise tool_error(400, idempotency.IdempotencyKeyInvalid.code, problem)
        arguments = {
            name: value
            for name, value in kwargs.items()
            if name != "idempotency_key" and not isinstance(value, Context)
        }
        canonical = json.dumps(
            pydantic_core.to_jsonable_python(arguments), sort_keys=True, separators=(",", ":")
        )
        token = _KEYED.set(
            _Keyed(
                key=key,
                tool=fn.__name__,
                arguments_sha256=hashlib.sha256(canonical.encode()).hexdigest(),
            )
        )
        try:
            return await fn(*args, **kwargs)
        finally:
            _KEYED.reset(token)

    tool(keyed)
    return fn


def _once(keyed: _Keyed, caller: Caller, work: Callable[[], Any]) -> Any:
    """`work()` under the key: the answer kept (as JSON), or the first request's answered."""
    taken = idempotency.key_take(
        caller=idempotency.token_caller(caller.token.pk),
        key=keyed.key,
        method=_METHOD,
        path=f"tools/{keyed.tool}",
        body_sha256=keyed.arguments_sha256,
    )
    if isinstance(taken, IdempotentRequest):
        stored = idempotency.stored_answer(taken).decode()
        if taken.status >= 400:
            raise ToolError(stored)
        return json.loads(stored)
    try:
        try:
            value = pydantic_core.to_jsonable_python(work())
        except Exception as exc:
            error = translated(exc)
            _keep(taken, status=json.loads(str(error))["status"], body=str(error))
            raise error from exc
        _keep(taken, status=200, body=json.dumps(value, ensure_ascii=False))
        return value
    finally:
        try:
            taken.release()
        except DatabaseError:
            logger.exception("Could not release an idempotency key's lock.")


def _keep(claim: Any, *, status: int, body: str) -> None:
    try:
        claim.keep(status=status, headers={}, body=body.encode())
    except DatabaseError:
        logger.exception("Could not store the answer of an idempotent tool call.")
