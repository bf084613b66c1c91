"""A run's events over HTTP without polling: a long poll (`?wait=`) and a Server-Sent Events
stream (`GET .../runs/{run_id}/events/stream`), on the feeds' machinery (apps/accounts/streams.py).

Both listen on the run's channel group `run.<id>` through a channel of their own on the channel
layer, joined *before* the table is read, so no event falls between the stored ones and the live
ones (the websocket consumer, consumers.py, does the same).

Long poll (`run_events_wait`):
1. Read the events after `after` (the audited read of the events list). Any: answer.
2. Otherwise join the group, read again, and wait for any message of the group until `wait`
   seconds have passed, reading again after each; answer with the first events found, or none.
   A run in a final state (FINAL) answers at once: nothing will come.
3. Access is confirmed again before answering with events when the wait outlasted
   LEXWEB_WS_RECHECK_SECONDS.

Stream (`RunEventStream`): the feed's stream (apps/accounts/streams.py) of the run's events,
ending with `event: end` and reason `run_finished` once the run is in a final state (FINAL:
succeeded, failed, cancelled, rejected) and its last event was sent, or with the reason access
ended. A run waiting for approval or stopped by its gate is not final (a lawyer's decision adds
events): its stream stays open. At most LEXWEB_SSE_STREAMS_PER_USER streams per person in each
web process, all feeds together: 429 beyond.
"""

import time
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from django.http import StreamingHttpResponse

from apps.accounts import streams
from apps.accounts.models import User
from apps.accounts.selectors import SocketAccess
from apps.accounts.streams import FeedEvent, TooManyStreams
from apps.cases.events import case_group
from apps.drafting import selectors
from apps.drafting.events import RUN_EVENT, RunEventMessage, run_group
from apps.drafting.models import Run, RunEvent
from apps.drafting.services import events as event_writer

__all__ = ["MAX_WAIT_SECONDS", "OPENAPI", "TooManyStreams"]

# A run in one of these states never changes again: no event will come.
FINAL = (Run.Status.SUCCEEDED, Run.Status.FAILED, Run.Status.CANCELLED, Run.Status.REJECTED)
MAX_WAIT_SECONDS = streams.MAX_WAIT_SECONDS
OPENAPI = streams.openapi("when the run finished and its last event was sent")


# --- Long poll ----------------------------------------------------------------------------------


async def run_events_wait(
    *, user: User, access: SocketAccess, case_id: int, run_id: int, after: int, limit: int,
    wait: int,
) -> list[RunEvent]:  # fmt: skip
    """The run's events after `after` (audited, NotFound for non-members), waiting up to `wait`
    seconds for the first one when there is none yet (see the module docstring)."""
    started = time.monotonic()
    events = await sync_to_async(selectors.run_events_for_user)(
        user=user, case_id=case_id, run_id=run_id, after=after, limit=limit
    )
    if events or wait <= 0:
        return events

    async def read() -> tuple[list[RunEvent], bool]:
        return await _events_or_final(run_id, after, limit)

    return await streams.wait_for_events(
        groups=[run_group(run_id)], read=read, access=access, wait=wait, started=started
    )


async def run_events_page(
    *, user: User, access: SocketAccess, case_id: int, run_id: int, after: int, limit: int,
    wait: int, path: str,
) -> dict[str, object]:  # fmt: skip
    """`run_events_wait` as a list of the API: `{items, count, next}`. `count`: the events stored
    after `after` now (counted only once the person's access is checked by the listing, and 0
    when the listing came back empty, so nothing is told past an access that just ended);
    `next`: `path` with the following page's `after` while more are stored, else None."""
    events = await run_events_wait(
        user=user, access=access, case_id=case_id, run_id=run_id, after=after, limit=limit,
        wait=wait,
    )  # fmt: skip

    async def count() -> int:
        return await sync_to_async(selectors.run_events_count)(run_id=run_id, after=after)

    return await streams.events_page(events, count=count, path=path, limit=limit)


@database_sync_to_async
def _events_or_final(run_id: int, after: int, limit: int) -> tuple[list[RunEvent], bool]:
    events = selectors.run_events_after(run_id=run_id, after=after, limit=limit)
    if events:
        return events, False
    return [], Run.objects.filter(pk=run_id, status__in=FINAL).exists()


# --- Stream -------------------------------------------------------------------------------------


def stream_open(*, user: User, access: SocketAccess, case_id: int, run_id: int, after: int) -> (
    "RunEventStream"
):  # fmt: skip
    """A stream of the run's events after `after` for `user` (NotFound for non-members and
    missing runs; audited as one read of the run's events, `run.stream`). TooManyStreams when
    `user` already has LEXWEB_SSE_STREAMS_PER_USER open in this process."""
    selectors.run_stream_open_for_user(user=user, case_id=case_id, run_id=run_id)
    stream = RunEventStream(access=access, case_id=case_id, run_id=run_id, after=after)
    streams.stream_register(stream)
    return stream


def response(stream: "RunEventStream") -> StreamingHttpResponse:
    return streams.response(stream)


def feed_event(message: RunEventMessage) -> FeedEvent:
    return {
        "seq": message["seq"],
        "kind": message["kind"],
        "payload": message["payload"],
        "created_at": message["at"],
    }


class RunEventStream(streams.EventStream):
    """One open stream of a run's events (see the module docstring)."""

    PAGE = selectors.MAX_EVENTS_PAGE
    END_DETAILS = {"run_finished": "The run finished and every one of its events was sent."}

    def __init__(self, *, access: SocketAccess, case_id: int, run_id: int, after: int) -> None:
        super().__init__(
            access=access, case_id=case_id, after=after,
            groups=[run_group(run_id), case_group(case_id)],
        )  # fmt: skip
        self.run_id = run_id

    async def stored_after(self, after: int) -> list[FeedEvent]:
        return await _events_after(self.run_id, after)

    def live_event(self, message: dict[str, Any]) -> FeedEvent | None:
        if message.get("type") == RUN_EVENT and message.get("run_id") == self.run_id:
            return feed_event(message)  # type: ignore[arg-type]  # a RunEventMessage
        return None

    def is_final(self, event: FeedEvent) -> bool:
        return event["kind"] == "run.status" and event["payload"].get("status") in FINAL

    async def finished(self, last_seq: int) -> str:
        return "run_finished" if await _finished(self.run_id, last_seq) else ""


@database_sync_to_async
@streams.in_turn
def _events_after(run_id: int, after: int) -> list[FeedEvent]:
    return [
        feed_event(event_writer.event_message(e))
        for e in selectors.run_events_after(run_id=run_id, after=after)
    ]


@database_sync_to_async
@streams.in_turn
def _finished(run_id: int, last_seq: int) -> bool:
    return Run.objects.filter(pk=run_id, status__in=FINAL, event_seq__lte=last_seq).exists()
