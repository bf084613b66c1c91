from django.db.models import QuerySet
from ninja import Router, Status
from ninja.pagination import paginate

from apps.api.schemas import ErrorOut, ObjectId
from apps.api.types import AuthedRequest
from apps.cases import selectors, services
from apps.cases.models import Case, Membership
from apps.cases.schemas import (
    CaseIn,
    CaseOut,
    CasePatch,
    JobQueuedOut,
    MemberIn,
    MemberOut,
    MemberPatch,
)

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
    changes = payload.dict(exclude_unset=True, exclude_none=True)
    return services.case_update(actor=request.auth, case=case, changes=changes)


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
