"""The verification endpoints, under /api/v1/cases/{case_id}/drafts/{draft_id}/versions/{n}:
verify (queue a run), findings, override a finding. (Approving the version is the drafting
app's: apps/drafting/api.py, `approval_router`, in this tag of the schema.)

Every endpoint parses, calls one service or selector of apps.verification (which checks case
membership, audits, and raises the DomainError the API maps: 404 for what the caller cannot
see, 403 `lawyer_required` for staff), and shapes the answer.
"""

from ninja import Query, Router, Status

from apps.accounts.types import AuthedRequest
from apps.verification import schemas, selectors, services
from apps.verification.models import Verification
from apps.verification.schemas import (
    FindingFilter,
    FindingOut,
    FindingsOut,
    OverrideIn,
    VerificationOut,
)
from lexweb.api_schemas import ErrorOut, ObjectId

router = Router(tags=["verification"])

_ERRORS = {400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut}
_BASE = "/cases/{case_id}/drafts/{draft_id}/versions/{number}"


@router.post(_BASE + "/verify", response={202: VerificationOut, **_ERRORS})
def verify_version(
    request: AuthedRequest, case_id: ObjectId, draft_id: ObjectId, number: ObjectId
) -> Status[Verification]:
    """Queue a verification of the version against its draft's frozen packet (a job on the
    `cpu` queue; progress on the case's event stream). While one is queued or running, the
    answer is that one."""
    verification = services.verification_request(
        user=request.auth, case_id=case_id, draft_id=draft_id, number=number
    )
    return Status(202, verification)


@router.get(_BASE + "/findings", response={200: FindingsOut, 404: ErrorOut})
def list_findings(
    request: AuthedRequest,
    case_id: ObjectId,
    draft_id: ObjectId,
    number: ObjectId,
    filters: Query[FindingFilter],
) -> FindingsOut:
    """The findings of the version's newest verification, with offsets, kind, status, check,
    the supporting frozen page (excerpt, matched span, word boxes) and any override;
    `?status=` and `?kind=` (repeatable) narrow them. Findings a model added have
    `second_opinion: true`; the run's `second_opinion_detail` says whether the model's
    opinion was obtained, why not, which deployment answered and its call records."""
    found = selectors.findings_for_user(
        user=request.auth, case_id=case_id, draft_id=draft_id, number=number
    )
    return schemas.findings_out(found, only=filters)


@router.post(_BASE + "/findings/{finding_id}/override", response={200: FindingOut, **_ERRORS})
def override_finding(
    request: AuthedRequest,
    case_id: ObjectId,
    draft_id: ObjectId,
    number: ObjectId,
    finding_id: ObjectId,
    payload: OverrideIn,
) -> FindingOut:
    """A lawyer of the case lets one unsupported or contradicted finding stand, with a written
    reason (kept and shown with the finding for good). Staff get 403 `lawyer_required`."""
    override = services.finding_override(
        user=request.auth,
        case_id=case_id,
        draft_id=draft_id,
        number=number,
        finding_id=finding_id,
        reason=payload.reason,
    )
    return schemas.finding_out(override.finding)
