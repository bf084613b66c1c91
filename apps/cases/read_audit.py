"""The audit of reads: who saw which case's material, when, through which edge, from where.

Every `_for_user` selector that returns client material (documents, pages, page images, search
hits, Bates pages, productions, exports) calls `read_record` once it has checked membership and
found what was asked for, so the row is written at the one layer every edge (API, browser,
anything added later) goes through. The edge and client address come from the request context
(`apps.accounts.context`, set by the middleware), as for every audit row.

One row per request and case: a page that calls several selectors (the viewer reads the
document, its pages and its attachments) is one read, recorded by the first of them. Outside a
request (worker, CLI) every call writes its row.
"""

import contextvars
from dataclasses import dataclass, field

from django.db import models

from apps.accounts import services as account_services
from apps.accounts.context import Origin, current_origin
from apps.accounts.models import User
from apps.cases.models import Case

Detail = dict[str, str | int | bool | None]


@dataclass
class _Ledger:
    """The cases whose reads this request has recorded. `origin` is the request's own context
    object (a new one per request), so a ledger never outlives its request."""

    origin: Origin
    cases: set[int] = field(default_factory=set)


_ledger: contextvars.ContextVar[_Ledger | None] = contextvars.ContextVar(
    "lexweb_read_ledger", default=None
)


def _first_read_of_case_in_request(case_id: int) -> bool:
    where = current_origin()
    if where == Origin():
        # No request or connection around this call (a job, a command): nothing to fold into.
        return True
    ledger = _ledger.get()
    if ledger is None or ledger.origin is not where:
        ledger = _Ledger(origin=where)
        _ledger.set(ledger)
    if case_id in ledger.cases:
        return False
    ledger.cases.add(case_id)
    return True


def read_record(
    *,
    user: User,
    action: str,
    case: Case,
    target: models.Model | None = None,
    detail: Detail | None = None,
) -> None:
    """Audit that `user` was shown `case`'s material (`target`, or a list when None).

    Call after the membership check and after the object was found: a refused or missing read
    shows nothing and leaves no row. A second read of the same case in the same request adds
    no row (the first one covers the request).
    """
    if not _first_read_of_case_in_request(case.pk):
        return
    account_services.audit_record(
        actor=user, action=action, case=case, target=target or case, detail=detail
    )
