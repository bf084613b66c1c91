"""Approving a draft's version: a lawyer of the case approves a version whose newest
verification is done with no open unsupported or contradicted finding (the verifier's
`selectors.blocking_count`), and a run of the draft waiting for that approval succeeds.

Drafting sits above the verifier (docs/architecture/modules.md, "The order of the apps"): the
verifier offers its verifications, findings and overrides for a version it is given; what is
about a version as a version (approving it, refusing to approve or export one that is not
ready, the approve endpoint in apps/drafting/api.py) is here. A version that is a model's reply
cut at its limit (DraftVersion.truncated_tokens) is never approved or exported
(VersionTruncated, 409 `version_truncated`), with no override: its end is missing.
"""

from django.db import transaction
from django.utils import timezone

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import selectors as case_selectors
from apps.documents.reasons import LawyerRequired
from apps.drafting import selectors
from apps.drafting.models import DraftVersion
from apps.drafting.services import runs
from apps.verification import selectors as verification_selectors
from apps.verification.models import Verification
from lexweb.errors import Conflict


class UnsupportedFindings(Conflict):
    """The version has open unsupported or contradicted findings (409)."""

    code = "unsupported_findings"

    def __init__(self, message: str, *, count: int) -> None:
        super().__init__(message)
        self.count = count


class NotVerified(Conflict):
    """The version has no finished verification to approve on (409)."""

    code = "not_verified"


class AlreadyApproved(Conflict):
    code = "already_approved"


class VersionTruncated(Conflict):
    """The version is a model's reply cut at its limit (DraftVersion.truncated_tokens): its
    end is missing, so it is never approved or exported as it is, whatever its findings and
    with no override (409; apps/drafting/pipeline/endings.py says why)."""

    code = "version_truncated"


def version_complete_require(version: DraftVersion, *, doing: str) -> None:
    """Raise VersionTruncated for a version kept cut at its limit; `doing`: "approved",
    "exported"."""
    if version.truncated_tokens is None:
        return
    raise VersionTruncated(
        f"Version {version.number} cannot be {doing}: the model's reply was cut at its limit "
        f"after {version.truncated_tokens:,} tokens, so its end is missing. Write the end as a "
        "new version, verify it and approve that one; or reject the run."
    )


class VersionRejected(Conflict):
    code = "version_rejected"


@transaction.atomic
def version_approve(*, user: User, case_id: int, draft_id: int, number: int) -> DraftVersion:
    """A lawyer of the case approves the version. Refused (409) while its newest verification
    is not done (`not_verified`), while any finding of it is unsupported or contradicted and
    not overridden (`unsupported_findings`), once approved (`already_approved`), once
    rejected with the run that wrote it (`version_rejected`), and always for a model's reply
    kept cut at its limit (`version_truncated`). Audited ("draft.approve")."""
    case = selectors.case_for_user(user=user, case_id=case_id)
    version = selectors.version_in_case(case=case, draft_id=draft_id, number=number)
    version = DraftVersion.objects.select_for_update().select_related("draft").get(pk=version.pk)
    if not case_selectors.case_is_lawyer(user=user, case=case):
        raise LawyerRequired("Only a lawyer on this case may approve a draft; ask one to do it.")
    if version.approved_at is not None:
        raise AlreadyApproved(f"Version {number} was approved already.")
    if version.rejected_at is not None:
        raise VersionRejected(
            f"Version {number} was rejected with its run ({version.rejection_reason}): write or "
            "run a new version, and approve that one."
        )
    version_complete_require(version, doing="approved")
    latest = verification_selectors.verification_latest(version)
    if latest is None or latest.status != Verification.Status.DONE:
        state = "has not been verified" if latest is None else f"verification is {latest.status}"
        raise NotVerified(
            f"Version {number} {state}: verify it, and approve once the verification is done."
        )
    blocking = verification_selectors.blocking_count(latest)
    if blocking:
        raise UnsupportedFindings(
            f"Version {number} has {blocking} unsupported or contradicted finding"
            f"{'' if blocking == 1 else 's'} open: correct the draft, or have a lawyer override "
            "each with a reason.",
            count=blocking,
        )
    version.approved_by = user
    version.approved_at = timezone.now()
    version.save(update_fields=["approved_by", "approved_at"])
    account_services.audit_record(
        actor=user,
        action="draft.approve",
        case=case,
        target=version,
        detail={"draft": draft_id, "version": number, "verification": latest.pk},
    )
    # A drafting run waiting for this approval succeeds.
    runs.runs_close_on_approval(version=version, user=user)
    return version
