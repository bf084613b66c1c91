"""Who may clear a registry flag, and on which documents (issue 20 req 8); the writes are
apps.evidence.services.clearance's. Call on a document the caller holds through a `_for_user`
selector."""

from apps.accounts.models import User
from apps.cases import selectors as case_selectors
from apps.cases.models import Case, Membership
from apps.documents.models import Document
from apps.evidence.selectors.provenance import Link


def is_case_lawyer(*, user: User, case: Case) -> bool:
    """A lawyer by role, on the case as a lawyer: never staff (nor a staff member's token,
    which acts as its user), never an admin let in by break-glass."""
    if not user.is_active or user.role != User.Role.LAWYER:
        return False
    membership = case_selectors.membership_get(user=user, case=case)
    return membership is not None and membership.role == Membership.Role.LAWYER


def flag_can_clear(*, user: User, document: Document, generated_ancestor: Link | None) -> bool:
    """Whether to offer `user` the clearing of `document`'s flag: flagged, its lineage not
    generated (`generated_ancestor`, as `provenance.generated_ancestor` read it), and `user` a
    lawyer of its case. The service decides again (and refuses a byte match)."""
    return (
        document.provenance == Document.Provenance.FLAGGED
        and document.origin != Document.Origin.SYSTEM_GENERATED
        and generated_ancestor is None
        and is_case_lawyer(user=user, case=document.case)
    )
