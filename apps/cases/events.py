"""Payloads sent to a case's channel group, and the one way to send them: the case's feed.

Every event sent with `publish_to_case` (but the group's control messages, LIVE_ONLY) is also an
event of the case's feed (`CaseEvent`), which the API lists and streams
(`GET /cases/{id}/events`, `.../events/stream`, apps/cases/feed.py):
1. It is stored, unnumbered, in the transaction that made it happen: it commits or rolls back
   with the rows it tells of.
2. Just after the commit, `feed_number` numbers the case's unnumbered events in the order they
   were stored (1, 2, 3, ... per case, one numbering at a time per case: a PostgreSQL advisory
   lock), and each numbered event goes to the case's group with its `seq` and `created_at`.
   Numbers are given in commit order, so a reader that saw N has seen every number below it.
3. If that step fails (the database went away just after the commit), the events wait
   unnumbered, and the case's next event numbers them too.
"""

import hashlib
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from django.db import connection, transaction

from apps.cases.models import CaseEvent
from lexweb.live import publish_on_commit, send_now
from lexweb.text import storable, storable_data


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


CaseEventPayload = CaseNotice | MembershipRevoked

# Messages of the case's group that are not events of its feed: they close sockets.
LIVE_ONLY = frozenset({"cases.membership_revoked"})

# The registry of event types a case's members hear (the case websocket forwards them as they
# are): each app registers its own from its events.py (`case_event_types`), so this app needs
# to know none of them.
_MEMBER_EVENT_TYPES: set[str] = {"cases.notice"}


def case_event_types(*names: str) -> None:
    """Register event types that an app sends to the case's members with `publish_to_case`."""
    _MEMBER_EVENT_TYPES.update(names)


def is_member_event(name: object) -> bool:
    """Whether a message of the case's group is an event for its members' sockets."""
    return isinstance(name, str) and name in _MEMBER_EVENT_TYPES


def case_group(case_id: int) -> str:
    return f"case.{case_id}"


def publish_to_case(*, case_id: int, event: Mapping[str, object]) -> None:
    """Send `event` (a TypedDict with a "type", from any app's events.py) to the case's group
    once the current transaction commits.

    The event is stored in the case's feed in this transaction (see the module docstring),
    except LIVE_ONLY messages. Browsers never hear about rows that may roll back. A channel
    layer that is down is logged, not raised: the database row is the truth and pages reload it
    on reconnect.
    """
    kind = str(event["type"])
    if kind in LIVE_ONLY:
        publish_on_commit(case_group(case_id), event)
        return
    # What a file or a parser put in a name or an error (NUL, a lone surrogate) must not fail
    # the transaction that stores the event with the work it tells of.
    payload = storable_data(dict(event))
    CaseEvent.objects.create(case_id=case_id, kind=storable(kind)[:64], payload=payload)
    transaction.on_commit(lambda: feed_publish(case_id), robust=True)


def feed_message(event: CaseEvent) -> dict[str, Any]:
    """A numbered event as it goes to the case's group: its payload (whose `type` the
    websocket consumer dispatches on) with its `seq` and `created_at`."""
    return {**event.payload, "seq": event.seq, "created_at": event.created_at.isoformat()}


def feed_number(case_id: int) -> list[CaseEvent]:
    """Number the case's unnumbered events (in the order stored) after its highest number, in a
    transaction of its own; the events numbered now, in order."""
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_lock_id(case_id)])
        cursor.execute(
            "UPDATE cases_caseevent AS event SET seq = top.base + pending.n "
            "FROM (SELECT id, row_number() OVER (ORDER BY id) AS n FROM cases_caseevent "
            "      WHERE case_id = %s AND seq IS NULL) AS pending, "
            "     (SELECT coalesce(max(seq), 0) AS base FROM cases_caseevent "
            "      WHERE case_id = %s) AS top "
            "WHERE event.id = pending.id RETURNING event.id",
            [case_id, case_id],
        )
        numbered = [row[0] for row in cursor.fetchall()]
    if not numbered:
        return []
    return list(CaseEvent.objects.filter(pk__in=numbered).order_by("seq"))


def feed_publish(case_id: int) -> None:
    """Number the case's waiting events and send each to the case's group (a channel layer
    that is down is logged: readers catch up from the table)."""
    events = feed_number(case_id)
    send_now([(case_group(case_id), feed_message(event)) for event in events])


def _lock_id(case_id: int) -> int:
    """The advisory lock (64-bit) that numbers one case's events one numbering at a time."""
    digest = hashlib.blake2b(f"lexweb.case_events:{case_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)
