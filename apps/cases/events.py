"""Payloads sent to a case's channel group, and the one way to send them."""

from collections.abc import Mapping
from typing import Literal, TypedDict

from lexweb.live import publish_on_commit


class CaseNotice(TypedDict):
    """Something members of the case should see now (a toast), e.g. a finished job."""

    type: Literal["cases.notice"]
    case_id: int
    level: Literal["info", "success", "warning"]
    message: str
    at: str


class MembershipRevoked(TypedDict):
    """`user_id` lost access to the case: their open sockets for it close."""

    type: Literal["cases.membership_revoked"]
    case_id: int
    user_id: int


CaseEvent = CaseNotice | MembershipRevoked


def case_group(case_id: int) -> str:
    return f"case.{case_id}"


def publish_to_case(*, case_id: int, event: Mapping[str, object]) -> None:
    """Send `event` (a TypedDict with a "type", from any app's events.py) to the case's group
    once the current transaction commits.

    Browsers never hear about rows that may roll back. A channel layer that is down is logged,
    not raised: the database row is the truth and pages reload it on reconnect.
    """
    publish_on_commit(case_group(case_id), event)
