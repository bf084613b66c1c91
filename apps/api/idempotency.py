"""`Idempotency-Key` for every request of the API that changes something (issue 22 req 5).

Applied once to the whole API (`api.add_decorator` in apps/api/api.py), so no endpoint can
forget it: every POST, PUT, PATCH and DELETE honours the header. GETs ignore it.

1. The key: 1-200 printable ASCII characters (no control characters); otherwise 400
   `invalid_idempotency_key`, before anything else is looked at (`guard_run`).
2. Keys are per caller: the bearer token the request carries (`token:<id>`), else the signed-in
   user (`user:<id>`). Another token's same key is another key.
3. After authentication and parameter checks (`guard_endpoint`, around the endpoint itself) the
   request takes a PostgreSQL advisory lock named by (caller, key) on its connection; a request
   that finds it held answers 409 `idempotency_key_in_progress` and runs nothing. The lock is a
   session lock: a web process killed mid-request releases it with its connection, so a key is
   never stuck (whatever that request had committed stays; the next try runs again).
4. Holding the lock it looks for the key's row (`IdempotentRequest`, younger than 24 hours):
   - the same method, path (with query) and body (SHA-256 of the raw body; of the fields and
     the files' names and bytes for a multipart upload): the stored answer again, same status,
     body and the headers the endpoint set (Content-Type, Location, Content-Disposition,
     X-Lexweb-Artifact, ...), with `Idempotent-Replayed: true`; the endpoint does not run
     (nothing created twice, no second audit row);
   - anything else: 409 `idempotency_key_reused`;
   - none (or one older than 24 hours, removed): the endpoint runs, and its answer is stored
     before the lock is released.
5. What is stored: 2xx, 3xx and 4xx answers (a 4xx is that request's answer: fix the request
   and use a new key), except 408 and 429. 5xx answers are not stored, so a retry after a
   server error runs again. Neither are refusals before the endpoint runs (401, 422 for a
   malformed request, the 400/409 of this module). An answer over MAX_STORED_BYTES, a streamed
   one, or one an endpoint marks with `lexweb.api_schemas.keep_no_body` (a new token's secret
   is not kept at rest) is remembered without its body: the key stays taken, and a replay
   answers 409 `idempotency_response_not_kept` naming the first answer's status instead of
   running again.
6. Rows older than 24 hours are ignored here and removed by the periodic sweep
   (`idempotency_expired_delete`, a hook of operations.sweep registered in apps/api/apps.py).
7. The MCP server's tools that change something take the same keys as their `idempotency_key`
   argument (apps/api/mcp_core.py): `key_take` with method "MCP", path `tools/<name>` and the
   hash of the tool's other arguments, under the token's keys (`token_caller`).
"""

import hashlib
import logging
from collections.abc import Callable
from datetime import timedelta
from functools import wraps
from typing import Any

from asgiref.sync import iscoroutinefunction
from django.db import DatabaseError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.request import RawPostDataException
from django.http.response import HttpResponseBase, StreamingHttpResponse
from django.utils import timezone

from apps.api.models import IdempotentRequest
from lexweb.api_schemas import NO_BODY_MARK
from lexweb.errors import Conflict, DomainError

logger = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
MAX_KEY = 200
KEPT_FOR = timedelta(hours=24)
MAX_STORED_BYTES = 1024 * 1024
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
# Headers set by Django's middleware or per response, never stored (the replay gets its own).
_UNKEPT_HEADERS = frozenset({"content-length", "set-cookie", "date", "vary"})
_NOT_STORED_STATUSES = frozenset({408, 429})
_CLAIM = "_lexweb_idempotency"


class IdempotencyKeyInvalid(DomainError):
    code = "invalid_idempotency_key"


class IdempotencyKeyReused(Conflict):
    """The key was used by the same caller for a different request (409)."""

    code = "idempotency_key_reused"


class IdempotencyKeyInProgress(Conflict):
    """A request with the same key is running now (409); retry when it is done."""

    code = "idempotency_key_in_progress"


class IdempotencyResponseNotKept(Conflict):
    """The key's first request ran, but its answer was not kept (409)."""

    code = "idempotency_response_not_kept"


def key_problem(key: str) -> str:
    """What is wrong with `key` ("" when it is a valid key)."""
    if not key.strip():
        return f"The {HEADER} header is empty."
    if len(key) > MAX_KEY:
        return f"The {HEADER} is over {MAX_KEY} characters."
    if any(not (" " <= ch <= "~") for ch in key):
        return f"The {HEADER} may hold only printable ASCII characters."
    return ""


def lock_id(*, caller: str, key: str) -> int:
    """The advisory lock's 64-bit id for (caller, key)."""
    digest = hashlib.sha256(f"lexweb-idempotency\0{caller}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def token_caller(token_id: int) -> str:
    """Whose keys a bearer token's requests use: the token's own, over REST and MCP alike."""
    return f"token:{token_id}"


def _caller(request: HttpRequest) -> str:
    token = getattr(request, "api_token", None)
    if token is not None:
        return token_caller(token.pk)
    user = getattr(request, "auth", None)
    if user is not None and getattr(user, "pk", None) is not None:
        return f"user:{user.pk}"
    return ""


def _body_sha256(request: HttpRequest) -> str:
    digest = hashlib.sha256()
    try:
        digest.update(b"raw\0" + request.body)
    except RawPostDataException:
        # A multipart body already parsed into fields and files: hash those.
        digest.update(b"multipart\0")
        for name in sorted(request.POST):
            for value in request.POST.getlist(name):
                digest.update(f"field\0{name}\0{value}\0".encode())
        for name in sorted(request.FILES):
            for upload in request.FILES.getlist(name):
                file_digest = hashlib.sha256()
                upload.seek(0)
                for chunk in upload.chunks():
                    file_digest.update(chunk)
                upload.seek(0)
                digest.update(f"file\0{name}\0{upload.name}\0{file_digest.hexdigest()}\0".encode())
    return digest.hexdigest()


class _Claim:
    """A key held by the running request (its advisory lock), to store the answer under."""

    def __init__(self, *, caller: str, key: str, method: str, path: str, body_sha256: str) -> None:
        self.caller, self.key = caller, key
        self.method, self.path, self.body_sha256 = method, path, body_sha256

    def store(self, request: HttpRequest, response: HttpResponseBase) -> None:
        status = response.status_code
        if status >= 500 or status in _NOT_STORED_STATUSES:
            return
        body: bytes | None = None
        not_kept = getattr(request, NO_BODY_MARK, "")
        if not not_kept:
            if isinstance(response, StreamingHttpResponse) or not isinstance(
                response, HttpResponse
            ):
                not_kept = "it was streamed"
            else:
                body = bytes(response.content)
        self.keep(
            status=status,
            headers={
                name: value
                for name, value in response.items()
                if name.lower() not in _UNKEPT_HEADERS
            },
            body=body,
            not_kept=not_kept,
        )

    def keep(
        self, *, status: int, headers: dict[str, str], body: bytes | None, not_kept: str = ""
    ) -> None:
        """Store the answer under the key (not a 5xx, 408 or 429: those are not answers to
        keep; a body over MAX_STORED_BYTES is remembered without it)."""
        if status >= 500 or status in _NOT_STORED_STATUSES:
            return
        if body is not None and len(body) > MAX_STORED_BYTES:
            body, not_kept = None, f"it was over {MAX_STORED_BYTES} bytes"
        IdempotentRequest.objects.update_or_create(
            caller=self.caller,
            key=self.key,
            defaults={
                "method": self.method,
                "path": self.path,
                "body_sha256": self.body_sha256,
                "status": status,
                "headers": headers,
                "body": body,
                "not_kept": not_kept,
                "created_at": timezone.now(),
            },
        )

    def release(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_unlock(%s)", [lock_id(caller=self.caller, key=self.key)]
            )


def stored_answer(row: IdempotentRequest) -> bytes:
    """The first request's answer kept under the key (IdempotencyResponseNotKept if it was
    remembered without it)."""
    if row.body is None:
        raise IdempotencyResponseNotKept(
            f"A request with this {HEADER} already ran (it answered {row.status}), but its "
            f"answer was not kept ({row.not_kept}); read the result with a GET, or use a new "
            "key to do it again."
        )
    return bytes(row.body)


def _replay(row: IdempotentRequest) -> HttpResponse:
    response = HttpResponse(stored_answer(row), status=row.status)
    for name, value in row.headers.items():
        response[name] = value
    response[REPLAYED_HEADER] = "true"
    return response


def key_take(
    *, caller: str, key: str, method: str, path: str, body_sha256: str
) -> "_Claim | IdempotentRequest":
    """Take `key` of `caller` for a request (a `_Claim`, holding the key's advisory lock on
    this connection: run the request, `keep` its answer, then `release`), or the row of the
    key's first request, the same one (answer what it stored). IdempotencyKeyInProgress while
    another request holds the key; IdempotencyKeyReused for a different request."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s)", [lock_id(caller=caller, key=key)])
        (locked,) = cursor.fetchone()
    if not locked:
        raise IdempotencyKeyInProgress(
            f"A request with this {HEADER} is still running; retry it in a moment to get its "
            "answer."
        )
    claim = _Claim(caller=caller, key=key, method=method, path=path, body_sha256=body_sha256)
    claimed = False
    try:
        row = IdempotentRequest.objects.filter(caller=caller, key=key).first()
        if row is not None and row.created_at < timezone.now() - KEPT_FOR:
            row.delete()
            row = None
        if row is not None:
            if (row.method, row.path, row.body_sha256) != (method, path, body_sha256):
                raise IdempotencyKeyReused(
                    f"This {HEADER} was already used for a different request "
                    f"({row.method} {row.path} or another body); use a new key for a new "
                    "request."
                )
            return row
        # The key is this request's until its answer is kept and the lock released.
        claimed = True
        return claim
    finally:
        if not claimed:
            claim.release()


def _begin(request: HttpRequest, key: str) -> HttpResponse | None:
    """Take the key for this request (None: run the endpoint) or answer from the first one."""
    caller = _caller(request)
    if not caller:
        return None
    taken = key_take(
        caller=caller,
        key=key,
        method=request.method or "",
        path=request.get_full_path(),
        body_sha256=_body_sha256(request),
    )
    if isinstance(taken, IdempotentRequest):
        return _replay(taken)
    setattr(request, _CLAIM, taken)  # guard_run stores the answer and releases the key
    return None


def guard_endpoint(view: Callable[..., Any]) -> Callable[..., Any]:
    """Around each endpoint (after authentication and parameter checks): replay, refuse, or
    take the key and run the endpoint."""
    if iscoroutinefunction(view):
        return view  # only GETs are async; guard_run refuses a keyed unsafe async call

    @wraps(view)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        key = request.headers.get(HEADER)
        if key is not None and request.method in UNSAFE_METHODS:
            answer = _begin(request, key)
            if answer is not None:
                return answer
        return view(request, *args, **kwargs)

    guarded.idempotent_guard = True  # type: ignore[attr-defined]
    return guarded


def _error(status: int, detail: str, code: str) -> JsonResponse:
    return JsonResponse({"detail": detail, "code": code}, status=status)


def _finish(request: HttpRequest, response: HttpResponseBase | None) -> None:
    claim: _Claim | None = request.__dict__.pop(_CLAIM, None)
    if claim is None:
        return
    try:
        if response is not None:
            claim.store(request, response)
    except DatabaseError:
        logger.exception("Could not store the answer of an idempotent request.")
    finally:
        try:
            claim.release()
        except DatabaseError:
            logger.exception("Could not release an idempotency key's lock.")


def guard_run(run: Callable[..., Any]) -> Callable[..., Any]:
    """Around each operation: a malformed key is refused first; the answer of a request that
    took its key is stored, then the key released."""
    if iscoroutinefunction(run):

        @wraps(run)
        async def guarded_async(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
            if HEADER in request.headers and request.method in UNSAFE_METHODS:
                return _error(
                    400, f"{HEADER} is not supported on this operation.", IdempotencyKeyInvalid.code
                )
            return await run(request, *args, **kwargs)

        guarded_async.idempotent_guard = True  # type: ignore[attr-defined]
        return guarded_async

    @wraps(run)
    def guarded(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        key = request.headers.get(HEADER)
        if key is not None and request.method in UNSAFE_METHODS:
            problem = key_problem(key)
            if problem:
                return _error(400, problem, IdempotencyKeyInvalid.code)
        try:
            response = run(request, *args, **kwargs)
        except BaseException:
            _finish(request, None)
            raise
        _finish(request, response)
        return response

    guarded.idempotent_guard = True  # type: ignore[attr-defined]
    return guarded


def document_header(schema: dict[str, Any]) -> None:
    """Name the header in the OpenAPI schema on every operation that honours it."""
    for operations in schema.get("paths", {}).values():
        for method, operation in operations.items():
            parameters = operation.setdefault("parameters", [])
            if method.upper() not in UNSAFE_METHODS or any(p["name"] == HEADER for p in parameters):
                continue
            parameters.append(
                {
                    "in": "header",
                    "name": HEADER,
                    "required": False,
                    "schema": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_KEY,
                        "pattern": "^[ -~]*[!-~][ -~]*$",
                    },
                    "description": (
                        "Your id for this request (printable ASCII, at most 200). The same key "
                        "with the same method, path and body within 24 hours answers the first "
                        "response again, with `Idempotent-Replayed: true`, without doing it "
                        "twice; with another request 409 `idempotency_key_reused`; while the "
                        "first is running 409 `idempotency_key_in_progress`. Per token."
                    ),
                }
            )


def idempotency_expired_delete() -> int:
    """Remove stored answers older than 24 hours; returns how many."""
    deleted, _ = IdempotentRequest.objects.filter(created_at__lt=timezone.now() - KEPT_FOR).delete()
    return deleted
