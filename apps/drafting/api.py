"""The drafts API, under /api/v1/cases/{case_id}/drafts: create (pasted JSON text, or a
multipart upload with a `file`), list, detail, add a version, read a version's text.

A create or a new version is one of two bodies: JSON (`DraftIn` / `VersionIn`, text pasted)
or multipart/form-data (the same fields as form fields, and the draft as a `file` part:
Markdown, plain text or DOCX). Every endpoint parses, calls one service or selector of
apps.drafting (which checks case membership, audits, and raises the DomainError the API maps),
and shapes the answer. The verification endpoints are in apps/verification/api.py; approving a
version (`approval_router`, after them in the schema and in its "verification" tag, as before
it moved here from there) is drafting's.
"""

import json
from typing import Any
from urllib.parse import quote

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from ninja import Query, Router, Status
from ninja.decorators import decorate_view
from ninja.errors import HttpError, ValidationError
from ninja.pagination import paginate
from pydantic import BaseModel
from pydantic import ValidationError as PydanticError

from apps.accounts import stream_endpoints as streams
from apps.accounts.types import AuthedRequest
from apps.drafting import diff_selectors, run_stream, selectors
from apps.drafting.models import Draft, DraftVersion, Run
from apps.drafting.schemas import (
    DraftDetailOut,
    DraftFormIn,
    DraftIn,
    DraftOut,
    ExportIn,
    GateOverrideIn,
    RunDetailOut,
    RunEventPageOut,
    RunIn,
    RunOut,
    RunRejectIn,
    VersionDetailOut,
    VersionDiffOut,
    VersionIn,
    VersionOut,
)
from apps.drafting.services import approval as approval_services
from apps.drafting.services import drafts as services
from apps.drafting.services import exports, runs, transactions
from lexweb.api_schemas import ErrorOut, ObjectId

router = Router(tags=["drafts"])

_ERRORS = {400: ErrorOut, 404: ErrorOut, 409: ErrorOut, 413: ErrorOut, 422: ErrorOut}
_BASE = "/cases/{case_id}/drafts"


def _body(schema: type[BaseModel], file_schema: type[BaseModel] | None) -> dict[str, Any]:
    """The OpenAPI request body: JSON with the text, or multipart with a `file`."""
    content: dict[str, Any] = {"application/json": {"schema": schema.model_json_schema()}}
    form: dict[str, Any] = (
        file_schema.model_json_schema() if file_schema else {"type": "object", "properties": {}}
    )
    properties: dict[str, Any] = dict(form.get("properties", {}))
    properties["file"] = {"type": "string", "format": "binary"}
    form = {**form, "properties": properties, "required": [*form.get("required", []), "file"]}
    content["multipart/form-data"] = {"schema": form}
    return {"requestBody": {"content": content, "required": True}}


def _validated(schema: type[BaseModel], data: object, where: str) -> Any:
    try:
        return schema.model_validate(data)
    except PydanticError as exc:
        raise ValidationError(
            [{"loc": [where, *e["loc"]], "msg": e["msg"]} for e in exc.errors()]
        ) from None


def _is_multipart(request: AuthedRequest) -> bool:
    return request.content_type == "multipart/form-data"


def _json(request: AuthedRequest) -> object:
    try:
        return json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise ValidationError([{"loc": ["body"], "msg": "the body is not valid JSON"}]) from None


def _uploaded(request: AuthedRequest) -> services.VersionContent:
    upload = request.FILES.get("file")
    if upload is None or len(request.FILES.getlist("file")) != 1:
        raise ValidationError([{"loc": ["form", "file"], "msg": "send the draft as one file"}])
    limit = settings.LEXWEB_MAX_DRAFT_BYTES
    if upload.size is not None and upload.size > limit:
        raise HttpError(413, f"The draft is {upload.size:,} bytes; the limit is {limit:,} bytes.")
    return services.uploaded_content(data=upload.read(limit + 1), filename=upload.name or "")


def _form(request: AuthedRequest) -> dict[str, str]:
    return {key: request.POST[key] for key in request.POST}


@router.post(
    _BASE, response={201: DraftDetailOut, **_ERRORS}, openapi_extra=_body(DraftIn, DraftFormIn)
)
def create_draft(request: AuthedRequest, case_id: ObjectId) -> Status[Draft]:
    """A new draft checked against a frozen packet of the case (`packet_id`), with its text as
    version 1: JSON with `text` (Markdown or plain), or multipart with a `file` (.md, .txt,
    .docx). An editable packet is a 400 `packet_not_frozen`; another case's packet a 404."""
    if _is_multipart(request):
        fields = _validated(DraftFormIn, _form(request), "form")
        content = _uploaded(request)
    else:
        fields = _validated(DraftIn, _json(request), "body")
        content = services.pasted_content(text=fields.text, media_type=fields.media_type)
    draft = services.draft_create(
        user=request.auth,
        case_id=case_id,
        title=fields.title,
        kind=fields.kind,
        packet_id=fields.packet_id,
        content=content,
    )
    return Status(201, _detail(request, case_id, draft.pk))


def _detail(request: AuthedRequest, case_id: int, draft_id: int) -> Draft:
    return selectors.draft_get_for_user(user=request.auth, case_id=case_id, draft_id=draft_id)


@router.get(_BASE, response=list[DraftOut])
@paginate
def list_drafts(request: AuthedRequest, case_id: ObjectId) -> QuerySet[Draft]:
    """The case's drafts, newest first."""
    return selectors.draft_list_for_user(user=request.auth, case_id=case_id)


@router.get(_BASE + "/{draft_id}", response={200: DraftDetailOut, 404: ErrorOut})
def get_draft(request: AuthedRequest, case_id: ObjectId, draft_id: ObjectId) -> Draft:
    """The draft with its packet and its versions (without their text)."""
    return _detail(request, case_id, draft_id)


@router.post(
    _BASE + "/{draft_id}/versions",
    response={201: VersionDetailOut, **_ERRORS},
    openapi_extra=_body(VersionIn, None),
)
def add_version(
    request: AuthedRequest, case_id: ObjectId, draft_id: ObjectId
) -> Status[DraftVersion]:
    """The draft's next version: JSON with `text`, or multipart with a `file`. Earlier
    versions never change."""
    if _is_multipart(request):
        content = _uploaded(request)
    else:
        fields = _validated(VersionIn, _json(request), "body")
        content = services.pasted_content(text=fields.text, media_type=fields.media_type)
    version = services.version_add(
        user=request.auth, case_id=case_id, draft_id=draft_id, content=content
    )
    return Status(201, version)


@router.get(
    _BASE + "/{draft_id}/versions/{number}", response={200: VersionDetailOut, 404: ErrorOut}
)
def get_version(
    request: AuthedRequest, case_id: ObjectId, draft_id: ObjectId, number: ObjectId
) -> DraftVersion:
    """One version with its text (the findings' offsets point into it)."""
    return selectors.version_get_for_user(
        user=request.auth, case_id=case_id, draft_id=draft_id, number=number
    )


@router.get(
    _BASE + "/{draft_id}/versions/{number}/diff",
    response={200: VersionDiffOut, 400: ErrorOut, 404: ErrorOut, 422: ErrorOut},
)
def diff_version(
    request: AuthedRequest,
    case_id: ObjectId,
    draft_id: ObjectId,
    number: ObjectId,
    against: Query[int | None] = None,
) -> diff_selectors.VersionDiff:
    """What changed from version `against` (by default the one before) to version `number`,
    word by word: `equal`, `insert` and `delete` stretches, long unchanged ones shortened, with
    word counts over both whole versions. Sizes are bounded (see `exact` and `truncated`)."""
    if against is not None and not 1 <= against < 2**31:
        raise HttpError(422, "against must be a version number (1 or more).")
    return diff_selectors.version_diff_for_user(
        user=request.auth, case_id=case_id, draft_id=draft_id, number=number, against=against
    )


_EXPORT_DOC = {
    "responses": {
        "200": {
            "description": "The exported file, as an attachment",
            "content": {
                media: {"schema": {"type": "string", "format": "binary"}}
                for media in exports.FORMATS.values()
            },
        }
    }
}


@router.post(
    _BASE + "/{draft_id}/versions/{number}/export",
    response={**_ERRORS, 403: ErrorOut},
    openapi_extra=_EXPORT_DOC,
)
def export_version(
    request: AuthedRequest, case_id: ObjectId, draft_id: ObjectId, number: ObjectId, body: ExportIn
) -> HttpResponse:
    """The version as a Word document (`docx`) or a PDF (`pdf`), as an attachment. Refused
    with 409 `not_verified` before a finished verification and 409 `unsupported_findings`
    while a finding blocks, and always 409 `version_truncated` for a model's reply cut at its
    limit (the approval rule). The file is registered as a generated artifact
    (`X-Lexweb-Artifact`), so it can never come back in as evidence unflagged; a PDF is also
    stored as a generated document of the case (`X-Lexweb-Document`)."""
    export = exports.version_export(
        user=request.auth, case_id=case_id, draft_id=draft_id, number=number, format=body.format
    )
    response = HttpResponse(export.data, content_type=export.media_type)
    response["Content-Disposition"] = _attachment(export.filename)
    response["X-Lexweb-Artifact"] = str(export.artifact.pk)
    if export.document is not None:
        response["X-Lexweb-Document"] = str(export.document.pk)
    return response


def _attachment(filename: str) -> str:
    ascii_name = filename.encode("ascii", "replace").decode().replace('"', "'").replace("?", "_")
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename)}"


# --- Runs ------------------------------------------------------------------------------------

_RUNS = "/cases/{case_id}/runs"


@router.post(_RUNS, response={200: RunDetailOut, 201: RunDetailOut, **_ERRORS, 403: ErrorOut})
def start_run(request: AuthedRequest, case_id: ObjectId, body: RunIn) -> Status[Run]:
    """Queue a drafting run (all its stages at once) over a frozen packet of the case. An
    `Idempotency-Key` already used with this token for the same request answers the first
    response again (as every POST does); one used by the same person through another token or
    more than 24 hours ago answers that run with 200 instead of starting another (409
    `idempotency_key_reused` if the request differs)."""
    run, created = runs.run_start(
        user=request.auth,
        case_id=case_id,
        request=body.run_request(),
        idempotency_key=request.headers.get("Idempotency-Key", ""),
    )
    detail = selectors.run_get_for_user(user=request.auth, case_id=case_id, run_id=run.pk)
    return Status(201 if created else 200, detail)


@router.get(_RUNS, response=list[RunOut])
@paginate
def list_runs(
    request: AuthedRequest,
    case_id: ObjectId,
    status: Query[Run.Status | None] = None,
    kind: Query[Run.Kind | None] = None,
) -> QuerySet[Run]:
    """The case's runs, newest first; `status` and `kind` keep only runs in that state or of
    that kind (an unknown value is a 422 naming the allowed ones)."""
    return selectors.run_list_for_user(
        user=request.auth,
        case_id=case_id,
        status=status.value if status is not None else None,
        kind=kind.value if kind is not None else None,
    )


@router.get(_RUNS + "/{run_id}", response={200: RunDetailOut, 404: ErrorOut})
def get_run(request: AuthedRequest, case_id: ObjectId, run_id: ObjectId) -> Run:
    """The run with its stages and their chain of custody."""
    return selectors.run_get_for_user(user=request.auth, case_id=case_id, run_id=run_id)


@router.get(
    _RUNS + "/{run_id}/events",
    response={200: RunEventPageOut, 404: ErrorOut, 422: ErrorOut},
)
async def list_run_events(
    request: AuthedRequest,
    case_id: ObjectId,
    run_id: ObjectId,
    after: Query[int] = 0,
    limit: Query[int] = selectors.MAX_EVENTS_PAGE,
    wait: int = Query(
        0,
        ge=0,
        le=run_stream.MAX_WAIT_SECONDS,
        description="Seconds (0 to 60) to wait for the first event after `after` when there "
        "is none yet; the answer comes as soon as one is stored (no items when none came, "
        "at once when the run is finished).",
    ),
) -> dict[str, object]:
    """The run's events numbered above `after` (the last number a client saw), in order, at
    most `limit` (1 to 1000) at a time: ask again with the last number until none come. With
    `wait`, a long poll: no need to ask again before something happened."""
    streams.page_bounds(after, limit, selectors.MAX_EVENTS_PAGE)
    return await run_stream.run_events_page(
        user=request.auth,
        access=await sync_to_async(streams.stream_access)(request, case_id),
        case_id=case_id,
        run_id=run_id,
        after=after,
        limit=limit,
        wait=wait,
        path=request.path,
    )


@router.get(
    _RUNS + "/{run_id}/events/stream",
    response={404: ErrorOut, 422: ErrorOut, 429: ErrorOut},
    openapi_extra=run_stream.OPENAPI,
)
@decorate_view(streams.opening_in_turn)
def stream_run_events(
    request: AuthedRequest,
    case_id: ObjectId,
    run_id: ObjectId,
    after: Query[int] = 0,
) -> StreamingHttpResponse:
    """The run's events as Server-Sent Events: the stored ones numbered above the
    `Last-Event-ID` header (or `after` without it), then live ones, each with `id:` its number;
    a `: keep-alive` comment every 15 s while quiet. It ends (`event: end`) once the run is
    finished (succeeded, failed, cancelled, rejected) and its last event was sent, and when
    access ends (token revoked or expired, account deactivated, membership ended). At most 10
    open streams per person (429). A `Last-Event-ID` or `after` that is not a number from 0 is
    a 422."""
    start = streams.last_event_id(request.headers.get("Last-Event-ID"), after)
    stream = run_stream.stream_open(
        user=request.auth,
        access=streams.stream_access(request, case_id),
        case_id=case_id,
        run_id=run_id,
        after=start,
    )
    return run_stream.response(stream)


@router.post(_RUNS + "/{run_id}/cancel", response={200: RunDetailOut, **_ERRORS, 403: ErrorOut})
def cancel_run(request: AuthedRequest, case_id: ObjectId, run_id: ObjectId) -> Run:
    """Cancel a queued, running or gate-stopped run (a running stage's backend stream is
    closed). A run that already ended is a 409 `run_finished`."""
    runs.run_cancel(user=request.auth, case_id=case_id, run_id=run_id)
    return selectors.run_get_for_user(user=request.auth, case_id=case_id, run_id=run_id)


@router.post(
    _RUNS + "/{run_id}/gate-override", response={200: RunDetailOut, **_ERRORS, 403: ErrorOut}
)
def override_gate(
    request: AuthedRequest, case_id: ObjectId, run_id: ObjectId, body: GateOverrideIn
) -> Run:
    """A lawyer of the case goes on past a gate that said "no" or "insufficient", with a
    written reason (10 to 5000 characters, kept on the run and audited)."""
    runs.run_gate_override(user=request.auth, case_id=case_id, run_id=run_id, reason=body.reason)
    return selectors.run_get_for_user(user=request.auth, case_id=case_id, run_id=run_id)


@router.post(_RUNS + "/{run_id}/reject", response={200: RunDetailOut, **_ERRORS, 403: ErrorOut})
def reject_run(
    request: AuthedRequest, case_id: ObjectId, run_id: ObjectId, body: RunRejectIn
) -> Run:
    """A lawyer of the case rejects a run waiting for approval, with a written reason (10 to
    5000 characters): the run ends `rejected`; the versions it wrote stay, marked rejected,
    and can no longer be approved (409 `version_rejected`). Any other state is a 409."""
    runs.run_reject(user=request.auth, case_id=case_id, run_id=run_id, reason=body.reason)
    return selectors.run_get_for_user(user=request.auth, case_id=case_id, run_id=run_id)


_CSV_DOC = {
    "responses": {
        "200": {
            "description": "The table as a CSV attachment (UTF-8 with a byte order mark)",
            "content": {transactions.MEDIA_TYPE: {"schema": {"type": "string"}}},
        }
    }
}


@router.get(
    _RUNS + "/{run_id}/transactions.csv",
    response={404: ErrorOut, 403: ErrorOut, 409: ErrorOut},
    openapi_extra=_CSV_DOC,
)
def run_transactions_csv(
    request: AuthedRequest, case_id: ObjectId, run_id: ObjectId
) -> HttpResponse:
    """A financial extraction's table as CSV: date, amount, counterparty, description, Bates
    citation, the verifier's status for the row (with its findings) and the validation's
    problems. Cells a spreadsheet would read as a formula are prefixed with an apostrophe. The
    file is registered as a generated artifact (`X-Lexweb-Artifact`). Another kind of run, or
    one whose table is not written yet, is a 409 `no_table`."""
    export = transactions.transactions_csv_for_user(
        user=request.auth, case_id=case_id, run_id=run_id
    )
    response = HttpResponse(export.data, content_type=f"{transactions.MEDIA_TYPE}; charset=utf-8")
    response["Content-Disposition"] = _attachment(export.filename)
    response["X-Lexweb-Artifact"] = str(export.artifact.pk)
    return response


# --- Approval --------------------------------------------------------------------------------

# Added to the API after the verification router, with its tag and the operation id it had
# there, so the schema is as it was when this endpoint lived in apps/verification/api.py.
approval_router = Router(tags=["verification"])


@approval_router.post(
    _BASE + "/{draft_id}/versions/{number}/approve",
    response={200: VersionOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut},
    operation_id="apps_verification_api_approve_version",
)
def approve_version(
    request: AuthedRequest, case_id: ObjectId, draft_id: ObjectId, number: ObjectId
) -> DraftVersion:
    """A lawyer approves the version: 409 `unsupported_findings` while any finding blocks,
    `not_verified` before a finished verification, `already_approved` the second time,
    `version_truncated` always for a model's reply cut at its limit (`truncated`)."""
    return approval_services.version_approve(
        user=request.auth, case_id=case_id, draft_id=draft_id, number=number
    )
