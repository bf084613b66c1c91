from asgiref.sync import sync_to_async
from django.db.models import QuerySet
from django.http import StreamingHttpResponse
from ninja import Query, Router, Status
from ninja.decorators import decorate_view
from ninja.pagination import paginate

from apps.accounts import stream_endpoints as streams
from apps.accounts import streams as feed_streams
from apps.accounts.types import AuthedRequest
from apps.cases import feed, selectors, services
from apps.cases.models import Case, Membership
from apps.cases.schemas import (
    CaseEventPageOut,
    CaseIn,
    CaseOut,
    CasePatch,
    JobQueuedOut,
    MemberIn,
    MemberOut,
    MemberPatch,
)
from lexweb.api_schemas import ErrorOut, ObjectId

router = Router(tags=["cases"])

_ERRORS = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut}


@router.get("/cases", response=list[CaseOut])
@paginate
def list_cases(request: AuthedRequest) -> QuerySet[Case]:
    return selectors.case_list_for_user(user=request.auth)


@router.post("/cases", response={201: CaseOut, **_ERRORS})
def create_case(request: AuthedRequest, payload: CaseIn) -> Status[Case]:
    return Status(201, services.case_create(actor=request.auth, **payload.dict()))


@router.get("/cases/{case_id}", response={200: CaseOut, 404: ErrorOut})
def get_case(request: AuthedRequest, case_id: ObjectId) -> Case:
    case = selectors.case_get_for_user(user=request.auth, case_id=case_id)
    selectors.case_view_for_user(user=request.auth, case=case)
    return case


@router.patch("/cases/{case_id}", response={200: CaseOut, **_ERRORS})
def update_case(request: AuthedRequest, case_id: ObjectId, payload: CasePatch) -> Case:
    case = selectors.case_get_for_user(user=request.auth, case_id=case_id)
    return services.case_update(actor=request.auth, case=case, changes=payload.changes())


@router.get("/cases/{case_id}/members", response=list[MemberOut])
@paginate
def list_members(request: AuthedRequest, case_id: ObjectId) -> QuerySet[Membership]:
    return selectors.membership_list_for_user(user=request.auth, case_id=case_id)


@router.post("/cases/{case_id}/members", response={201: MemberOut, **_ERRORS})
def add_member(request: AuthedRequest, case_id: ObjectId, payload: MemberIn) -> Status[Membership]:
    case = selectors.case_get_for_user(user=request.auth, case_id=case_id)
    membership = services.member_add(
        actor=request.auth, case=case, email=payload.email, role=payload.role
    )
    return Status(201, membership)


@router.patch("/cases/{case_id}/members/{user_id}", response={200: MemberOut, **_ERRORS})
def change_member(
    request: AuthedRequest, case_id: ObjectId, user_id: ObjectId, payload: MemberPatch
) -> Membership:
    case = selectors.case_get_for_user(user=request.auth, case_id=case_id)
    return services.member_change_role(
        actor=request.auth, case=case, user_id=user_id, role=payload.role
    )


@router.delete("/cases/{case_id}/members/{user_id}", response={204: None, **_ERRORS})
def remove_member(request: AuthedRequest, case_id: ObjectId, user_id: ObjectId) -> Status[None]:
    case = selectors.case_get_for_user(user=request.auth, case_id=case_id)
    services.member_remove(actor=request.auth, case=case, user_id=user_id)
    return Status(204, None)


@router.post("/cases/{case_id}/worker-check", response={202: JobQueuedOut, 404: ErrorOut})
def worker_check(request: AuthedRequest, case_id: ObjectId) -> Status[JobQueuedOut]:
    """Queue a job whose worker announces itself on the case's websocket stream."""
    case = selectors.case_get_for_user(user=request.auth, case_id=case_id)
    job_id = services.case_worker_check_request(actor=request.auth, case=case)
    return Status(202, JobQueuedOut(job_id=job_id))


@router.get(
    "/cases/{case_id}/events", response={200: CaseEventPageOut, 404: ErrorOut, 422: ErrorOut}
)
async def list_case_events(
    request: AuthedRequest,
    case_id: ObjectId,
    after: Query[int] = 0,
    limit: Query[int] = selectors.MAX_EVENTS_PAGE,
    wait: int = Query(
        0,
        ge=0,
        le=feed_streams.MAX_WAIT_SECONDS,
        description="Seconds (0 to 60) to wait for the first event after `after` when there "
        "is none yet; the answer comes as soon as one is stored (no items when none came).",
    ),
) -> dict[str, object]:
    """The case's events (ingest progress, productions and exports, renderings, verification,
    notices) numbered above `after` (the last number a client saw), in order, at most `limit`
    (1 to 1000) at a time: ask again with the last number until none come. With `wait`, a long
    poll: no need to ask again before something happened."""
    streams.page_bounds(after, limit, selectors.MAX_EVENTS_PAGE)
    return await feed.case_events_page(
        user=request.auth,
        access=await sync_to_async(streams.stream_access)(request, case_id),
        case_id=case_id,
        after=after,
        limit=limit,
        wait=wait,
        path=request.path,
    )


@router.get(
    "/cases/{case_id}/events/stream",
    response={404: ErrorOut, 422: ErrorOut, 429: ErrorOut},
    openapi_extra=feed.OPENAPI,
)
@decorate_view(streams.opening_in_turn)
def stream_case_events(
    request: AuthedRequest, case_id: ObjectId, after: Query[int] = 0
) -> StreamingHttpResponse:
    """The case's events as Server-Sent Events: the stored ones numbered above the
    `Last-Event-ID` header (or `after` without it), then live ones, each with `id:` its number;
    a `: keep-alive` comment every 15 s while quiet. It ends (`event: end`) only when access
    ends (token revoked or expired, account deactivated, membership ended). At most 10 open
    streams per person, runs' and cases' together (429). A `Last-Event-ID` or `after` that is
    not a number from 0 is a 422."""
    start = streams.last_event_id(request.headers.get("Last-Event-ID"), after)
    stream = feed.stream_open(
        user=request.auth,
        access=streams.stream_access(request, case_id),
        case_id=case_id,
        after=start,
    )
    return feed_streams.response(stream)
