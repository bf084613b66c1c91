"""Who belongs to which case, as the accounts app needs to know it without importing the cases
app above it (docs/architecture/modules.md, "The order of the apps").

Accounts watches open websockets (`selectors.socket_access_ended`) and shows the audit log only
for the cases a person belongs to; memberships and break-glass grants are the cases app's
models. The cases app registers its answers here when Django starts
(`apps.cases.apps.CasesConfig.ready`). Nothing is assumed when none is registered: every call
raises, so a process that did not load the cases app can neither let a socket stay open nor show
a case's audit events.
"""

from collections.abc import Collection
from typing import Any, Protocol

from django.db.models import QuerySet

Pair = tuple[int, int]  # (user id, case id)


class CaseAccess(Protocol):
    def member_pairs(self, *, user_ids: Collection[int], case_ids: Collection[int]) -> set[Pair]:
        """(user id, case id) of these that may follow the case now: memberships, and admins'
        live break-glass grants."""
        ...

    def grant_pairs(self, *, user_ids: Collection[int], case_ids: Collection[int]) -> set[Pair]:
        """(user id, case id) of these that hold or held a break-glass grant to the case."""
        ...

    def member_case_ids(self, *, user_id: int) -> QuerySet[Any, Any]:
        """The ids of the cases the user is a member of, as a subquery (`.values("case_id")`)."""
        ...


class CaseAccessMissing(RuntimeError):
    pass


_registered: CaseAccess | None = None


def register(access: CaseAccess) -> None:
    """Called once by the cases app when Django starts; a second call replaces the first."""
    global _registered
    _registered = access


def case_access() -> CaseAccess:
    if _registered is None:
        raise CaseAccessMissing(
            "no app has said who belongs to which case: apps.cases must be installed and ready"
        )
    return _registered
