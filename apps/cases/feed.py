"""A case's events over HTTP without polling (issue 22): `GET /cases/{id}/events` (a list, and a
long poll with `?wait=`) and `GET /cases/{id}/events/stream` (Server-Sent Events), on the feeds'
machinery (apps/accounts/streams.py). The events are those of the case's feed
(apps/cases/events.py): ingest progress, productions and their exports, renderings,
verification and notices, numbered per case in commit order.

Long poll (`case_events_page`): the events after `after` (an audited read); none yet and `wait`
given: join the case's group, read again after each of its messages until one is stored or `wait`
seconds passed. A case's feed never finishes: the stream ends only when access ends (token
revoked or expired, account deactivated, session ended, membership or break-glass ended).
"""

import time
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async

from apps.accounts import streams
from apps.accounts.models import User
from apps.accounts.selectors import SocketAccess
from apps.accounts.streams import FeedEvent
from apps.cases import selectors
from apps.cases.events import LIVE_ONLY, case_group
from apps.cases.models import CaseEvent

OPENAPI = streams.openapi("never by itself (a case's feed has no end)")


async def case_events_page(
    *, user: User, access: SocketAccess, case_id: int, after: int, limit: int, wait: int,
    path: str,
) -> dict[str, object]:  # fmt: skip
    """The case's events after `after` as a list of the API, `{items, count, next}`, waiting up
    to `wait` seconds (at most 60) for the first one when there is none yet. `count`: the events
    stored after `after` now (0 when the list came back empty, so nothing is told past an access
    that just ended); `next`: `path` with the following page's `after` while more are stored."""
    started = time.monotonic()
    events = await sync_to_async(selectors.case_events_for_user)(
        user=user, case_id=case_id, after=after, limit=limit
    )
    if not events and wait > 0:

        async def read() -> tuple[list[CaseEvent], bool]:
            return await _events_after(case_id, after, limit), False

        events = await streams.wait_for_events(
            groups=[case_group(case_id)], read=read, access=access, wait=wait, started=started
        )

    async def count() -> int:
        return await sync_to_async(selectors.case_events_count)(case_id=case_id, after=after)

    return await streams.events_page(events, count=count, path=path, limit=limit)


@database_sync_to_async
@streams.in_turn
def _events_after(case_id: int, after: int, limit: int) -> list[CaseEvent]:
    return selectors.case_events_after(case_id=case_id, after=after, limit=limit)


def stream_open(*, user: User, access: SocketAccess, case_id: int, after: int) -> (
    "CaseEventStream"
):  # fmt: skip
    """A stream of the case's events after `after` for `user` (NotFound for non-members;
    audited as one read of the case's events, `case.stream`). TooManyStreams when `user` already
    has LEXWEB_SSE_STREAMS_PER_USER streams open in this process."""
    selectors.case_stream_open_for_user(user=user, case_id=case_id)
    stream = CaseEventStream(access=access, case_id=case_id, after=after)
    streams.stream_register(stream)
    return stream


def feed_event(event: CaseEvent) -> FeedEvent:
    return {
        "seq": event.seq or 0,
        "kind": event.kind,
        "payload": event.payload,
        "created_at": event.created_at.isoformat(),
    }


class CaseEventStream(streams.EventStream):
    """One open stream of a case's events (see the module docstring)."""

    PAGE = selectors.MAX_EVENTS_PAGE

    def __init__(self, *, access: SocketAccess, case_id: int, after: int) -> None:
        super().__init__(access=access, case_id=case_id, after=after, groups=[case_group(case_id)])

    async def stored_after(self, after: int) -> list[FeedEvent]:
        return [feed_event(e) for e in await _events_after(self.case_id, after, self.PAGE)]

    def live_event(self, message: dict[str, Any]) -> FeedEvent | None:
        """A numbered event of the feed as the case's group carries it (apps/cases/events.py:
        the payload with `seq` and `created_at`)."""
        seq, kind = message.get("seq"), message.get("type")
        if not isinstance(seq, int) or not isinstance(kind, str) or kind in LIVE_ONLY:
            return None
        payload = {k: v for k, v in message.items() if k not in {"seq", "created_at"}}
        return {
            "seq": seq,
            "kind": kind,
            "payload": payload,
            "created_at": str(message.get("created_at", "")),
        }
