"""The one NinjaAPI, mounted at /api/v1/: authentication, the error shape, every app's router.

No `from __future__ import annotations` in modules that declare endpoints (django-ninja #1424).
"""

import functools
import importlib
import logging
import pkgutil
from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.http import Http404, HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from ninja import NinjaAPI, Swagger
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.schema import OpenAPISchema
from ninja.security import HttpBearer, SessionAuth

import apps
from apps.accounts import services as account_services
from apps.accounts import throttle
from apps.accounts.api import router as accounts_router
from apps.accounts.models import ApiToken, User
from apps.api import idempotency
from apps.cases.api import router as cases_router
from apps.cluster.api import router as cluster_router
from apps.documents.api import router as documents_router
from apps.documents.review_api import router as review_router
from apps.drafting.api import approval_router
from apps.drafting.api import router as drafting_router
from apps.evidence.api import router as evidence_router
from apps.verification.api import router as verification_router
from lexweb.api_schemas import ErrorOut
from lexweb.errors import DomainError, Unavailable

logger = logging.getLogger(__name__)


class BearerToken(HttpBearer):
    """A bearer token. An address that keeps sending bad ones gets 429 with Retry-After once
    its budget is spent (accounts/throttle.py), until it refills; valid tokens cost nothing
    and always pass (tokens are 256-bit random: there is nothing to learn by guessing)."""

    def authenticate(self, request: HttpRequest, token: str) -> User | None:
        found = bearer_authenticate(raw=token, client_ip=request.META.get("REMOTE_ADDR") or None)
        if found is not None:
            request.api_token = found  # type: ignore[attr-defined]  # read by accounts/api.py
            return found.user
        return None


def bearer_authenticate(*, raw: str, client_ip: str | None) -> ApiToken | None:
    """The live token `raw` is (its user loaded and active), or None; a bad one takes from
    `client_ip`'s budget, and once that is spent raises TooManyAttempts (429). The REST API's
    and the MCP server's (apps/api/mcp.py) one way in with a bearer token."""
    found = account_services.token_authenticate_full(raw=raw)
    if found is not None:
        return found
    wait = throttle.api_token_failed(client_ip=client_ip)
    if wait:
        raise throttle.TooManyAttempts(
            f"Too many requests with bad tokens from this address: try again in "
            f"{throttle.minutes_text(wait)}, with a valid token.",
            retry_after=wait,
        )
    return None


class BrowserSession(SessionAuth):
    """The signed-in browser session, with ninja's CSRF check on unsafe methods.

    Without a signed-in user there is no session to protect: answer 401 (as for a bad bearer
    token) instead of letting the CSRF check turn an agent's expired token into a 403.
    """

    def __call__(self, request: HttpRequest) -> User | None:
        if not request.user.is_authenticated:
            return None
        user: User | None = super().__call__(request)
        return user


class LexwebAPI(NinjaAPI):
    def get_openapi_schema(
        self, *, path_prefix: str | None = None, path_params: dict[str, Any] | None = None
    ) -> OpenAPISchema:
        schema = super().get_openapi_schema(path_prefix=path_prefix, path_params=path_params)
        idempotency.document_header(schema)
        _document_common_errors(schema)
        _document_error_codes(schema)
        return schema


# What any operation may answer whatever it does, from the handlers below and the middleware:
# the body is ErrorOut's ({detail, code} and, for 422, the fields' errors).
_COMMON_ERRORS = {
    "400": "The request cannot be taken as it is (`detail` says why).",
    "401": "No valid bearer token and no signed-in session.",
    "403": "Signed in, but this is not for your role or token.",
    "404": "No such object, or one of a case you are not a member of.",
    "409": "The object is not in a state that allows this, or an Idempotency-Key was reused.",
    "413": "The request body is larger than this server accepts.",
    "422": "A parameter or the body does not match this schema (`errors` names each field).",
    "429": "Too many requests with bad tokens from this address (`Retry-After`).",
    "500": "An error of lexweb's own (`internal_error`); nothing was half done.",
    "503": "The database is not answering (`database_unavailable`, `Retry-After`).",
    "507": "The document store is full (`storage_full`).",
}


def _document_common_errors(schema: dict[str, Any]) -> None:
    """Every operation's responses name the statuses any operation may answer, each with the
    error body, so that a client (and schemathesis, tests/api/test_schema_fuzz.py) knows every
    answer it can get."""
    components = schema.setdefault("components", {}).setdefault("schemas", {})
    body = ErrorOut.model_json_schema(ref_template="#/components/schemas/{model}")
    for name, definition in body.pop("$defs", {}).items():
        components.setdefault(name, definition)
    components.setdefault("ErrorOut", body)
    error = {"$ref": "#/components/schemas/ErrorOut"}
    for operations in schema.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.setdefault("responses", {})
            for status, description in _COMMON_ERRORS.items():
                # Ninja's own keys are ints.
                declared = responses.get(int(status), responses.get(status))
                if declared is None:
                    content = {"application/json": {"schema": error}}
                    responses[int(status)] = {"description": description, "content": content}
                    continue
                # An operation's own body at this status (an upload's 400: every file refused),
                # or the handlers' ErrorOut (a malformed request).
                for media in declared.get("content", {}).values():
                    if media.get("schema") not in (error, None):
                        media["schema"] = {"anyOf": [media["schema"], error]}


# Codes the API's own handlers, the idempotency guard and the failure middleware answer with,
# rather than a DomainError's (lexweb/failures.py, apps/api/idempotency.py, the handlers below).
HANDLER_CODES = frozenset(
    {
        "unauthenticated",
        "throttled",
        "too_large",
        "bad_request",
        "database_unavailable",
        "internal_error",
        "invalid_idempotency_key",
        "idempotency_key_in_progress",
        "idempotency_key_reused",
        "idempotency_response_not_kept",
    }
)


@functools.cache
def error_codes() -> tuple[str, ...]:
    """Every code an API error may carry, sorted: each DomainError's of lexweb and its apps
    (every module of apps/ imported first, so that none is missed for not being loaded yet)
    and the handlers'. The table of docs/reference/errors.md lists these (tested)."""
    for module in pkgutil.walk_packages(apps.__path__, "apps."):
        if ".migrations" not in module.name:
            importlib.import_module(module.name)
    codes, todo = set(HANDLER_CODES), [DomainError]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith(("apps.", "lexweb.")):
            codes.add(cls.code)
    return tuple(sorted(codes))


def _document_error_codes(schema: dict[str, Any]) -> None:
    """The error body's `code` is one of `error_codes()`: an enum in the schema, so a client
    (and schemathesis) knows every code it can get."""
    code = schema["components"]["schemas"]["ErrorOut"]["properties"]["code"]
    code["enum"] = list(error_codes())
    code["description"] = "A stable code for programs: see the table of error codes."


api = LexwebAPI(
    title="lexweb API",
    version="1",
    description=(
        "The agent API of lexweb. Authenticate with `Authorization: Bearer <token>` "
        "(create tokens on your account page) or a signed-in browser session. "
        "Every error is `{detail, code}`; a case you are not a member of is 404. "
        "Send `Idempotency-Key: <your id for this request>` on any POST, PATCH or DELETE to "
        "retry it safely: the same key and body within 24 hours answer the first response "
        "again (`Idempotent-Replayed: true`) without doing it twice."
    ),
    auth=[BearerToken(), BrowserSession()],
    urls_namespace="api",
    docs_url="/docs",
    # Without deep links: Swagger UI puts each path's link inside the button that opens the
    # operation, an interactive element inside another (axe-core: nested-interactive).
    docs=Swagger(settings={"deepLinking": False}),
)

# Idempotency-Key on every POST, PUT, PATCH and DELETE of every router (apps/api/idempotency.py).
# Ninja's modes are named after what the decorator is given: "view" wraps Operation.run (before
# authentication: a malformed key is refused, the answer stored), "operation" wraps the endpoint
# function (after authentication and parameter checks: replay, refuse or take the key).
api.add_decorator(idempotency.guard_run, mode="view")
api.add_decorator(idempotency.guard_endpoint, mode="operation")


def _error(
    request: HttpRequest,
    status: int,
    detail: str,
    code: str,
    errors: Sequence[Mapping[str, object]] | None = None,
) -> HttpResponse:
    body: dict[str, object] = {"detail": detail, "code": code}
    if errors is not None:
        body["errors"] = errors
    return api.create_response(request, body, status=status)


@api.exception_handler(DomainError)
def _domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
    # A refusal of several things at once lists each (`errors`: loc and msg), as
    # production_door_services.ProductionRefused does.
    errors = getattr(exc, "errors", None)
    response = _error(request, exc.status, exc.message, exc.code, errors)
    if isinstance(exc, Unavailable):
        response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(throttle.TooManyAttempts)
def _throttled(request: HttpRequest, exc: throttle.TooManyAttempts) -> HttpResponse:
    response = _error(request, 429, exc.message, exc.code)
    response["Retry-After"] = str(exc.retry_after)
    return response


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = [
        {
            "loc": [str(part) if not isinstance(part, int) else part for part in e.get("loc", ())],
            "msg": str(e.get("msg", "")),
        }
        for e in exc.errors
    ]
    summary = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors[:5])
    return _error(request, 422, f"Invalid request: {summary}", "invalid", errors)


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    response = _error(
        request,
        401,
        "Authentication required: send a valid, unexpired 'Authorization: Bearer <token>' "
        "or sign in.",
        "unauthenticated",
    )
    response["WWW-Authenticate"] = "Bearer"
    return response


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    # Each status its code of the table (docs/reference/errors.md); a 422 (a parameter out of
    # its range, a bad Last-Event-ID) is `invalid`, as a body that fails its schema is.
    code = {400: "bad_request", 403: "forbidden", 404: "not_found", 413: "too_large"}
    return _error(request, exc.status_code, str(exc), code.get(exc.status_code, "invalid"))


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    return _error(request, 404, "Not found.", "not_found")


@api.exception_handler(RequestDataTooBig)
def _too_big(request: HttpRequest, exc: RequestDataTooBig) -> HttpResponse:
    return _error(request, 413, "The request body is larger than this server accepts.", "too_large")


@api.exception_handler(TooManyFieldsSent)
def _too_many_fields(request: HttpRequest, exc: TooManyFieldsSent) -> HttpResponse:
    return _error(request, 413, "The request has too many fields.", "too_large")


@api.exception_handler(TooManyFilesSent)
def _too_many_files(request: HttpRequest, exc: TooManyFilesSent) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
    return _error(request, 400, f"At most {limit} files at once; upload the rest next.", "invalid")


@api.exception_handler(MultiPartParserError)
def _unreadable_multipart(request: HttpRequest, exc: MultiPartParserError) -> HttpResponse:
    # Django refuses e.g. a part whose headers (file name included) exceed 1 KB.
    return _error(request, 400, f"The upload could not be read: {exc}", "bad_request")


api.add_router("/", accounts_router)
api.add_router("/", cases_router)
# Before documents_router: its /documents/{document_id} would take /documents/withdraw.
api.add_router("/", review_router)
api.add_router("/", documents_router)
api.add_router("/", evidence_router)
api.add_router("/", drafting_router)
api.add_router("/", verification_router)
api.add_router("/", approval_router)
api.add_router("/", cluster_router)
