"""A run's events over HTTP without polling: a long poll (`?wait=`) and a Server-Sent Events
stream (`GET .../runs/{run_id}/events/stream`).

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

Stream (`RunEventStream.body`):
1. Join `run.<id>`, the case's group (`cases.membership_revoked`) and the person's group
   (`accounts.access_ended`), and register with the websockets' access watch
   (apps/accounts/access.py): the stream ends when the token is revoked or expires, the account
   is deactivated, the session ends or the person leaves the case, within
   LEXWEB_WS_RECHECK_SECONDS when nothing announces it, at once when something does.
2. Send every stored event after `after`, then live ones: each as `id: <seq>`, `event: <kind>`,
   `data: {"seq", "kind", "payload", "created_at"}`. A live event at or below the last number sent
   is dropped; one that skips numbers first makes the stream send the missing ones from the
   table. Every number once, in order.
3. After LEXWEB_SSE_KEEPALIVE_SECONDS without an event, a `: keep-alive` comment.
4. It ends with `event: end` (no `id`, `data: {"reason", "detail"}`) and closes: `run_finished`
   once the run is in a final state (FINAL: succeeded, failed, cancelled, rejected) and its last
   event was sent, or the reason access ended. A run waiting for approval or stopped by its gate
   is not final (a lawyer's decision adds events): its stream stays open.
5. At most LEXWEB_SSE_STREAMS_PER_USER streams per person in each web process: 429 beyond.
"""

import asyncio
import json
import threading
import time
import weakref
from collections.abc import AsyncIterator
from typing import Any

from asgiref.sync import sync_to_async
from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings
from django.http import StreamingHttpResponse
from django.utils import timezone

from apps.accounts import access as socket_access
from apps.accounts import selectors as account_selectors
from apps.accounts.events import user_group
from apps.accounts.models import User
from apps.accounts.selectors import SocketAccess
from apps.accounts.throttle import TooManyAttempts
from apps.cases.events import case_group
from apps.drafting import runs, selectors
from apps.drafting.events import RUN_EVENT, RunEventMessage, run_group
from apps.drafting.models import Run, RunEvent

# A run in one of these states never changes again: no event will come.
FINAL = (Run.Status.SUCCEEDED, Run.Status.FAILED, Run.Status.CANCELLED, Run.Status.REJECTED)
MAX_WAIT_SECONDS = 60
KEEP_ALIVE = b": keep-alive\n\n"
END_DETAILS = {
    **socket_access.CLOSE_REASONS,
    "run_finished": "The run finished and every one of its events was sent.",
    "access_unconfirmed": "Access could not be confirmed just now. Connect again.",
}

# What the OpenAPI schema says the stream's 200 is.
OPENAPI: dict[str, Any] = {
    "responses": {
        200: {
            "description": (
                "A text/event-stream: each event as `id: <seq>`, `event: <kind>`, "
                '`data: {"seq", "kind", "payload", "created_at"}`; `: keep-alive` comments '
                'while quiet; a last `event: end` with `data: {"reason", "detail"}` when the '
                "run finished and its last event was sent, or when access ended."
            ),
            "content": {"text/event-stream": {"schema": {"type": "string"}}},
        }
    }
}


class TooManyStreams(TooManyAttempts):
    code = "too_many_streams"


# --- Listening ----------------------------------------------------------------------------------

_WAKE: dict[str, Any] = {"type": "run_stream.wake"}


class _Listener:
    """A channel of this event loop's channel layer, in `groups`, whose messages land in
    `queue` (a reader task receives them; the queue can also be woken with _WAKE)."""

    def __init__(self, groups: list[str]) -> None:
        self.groups = groups
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.layer: BaseChannelLayer | None = None
        self.channel = ""
        self.joined: list[str] = []
        self.reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> "_Listener":
        layer = get_channel_layer()
        if layer is None:  # without a layer, stored events only (reads again on each wake)
            return self
        self.layer = layer
        self.channel = await layer.new_channel()
        for group in self.groups:
            await layer.group_add(group, self.channel)
            self.joined.append(group)
        self.reader = asyncio.get_running_loop().create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.reader is not None:
            self.reader.cancel()
        if self.layer is not None:
            for group in self.joined:
                await self.layer.group_discard(group, self.channel)

    async def _read(self) -> None:
        layer = self.layer
        while layer is not None:
            self.queue.put_nowait(await layer.receive(self.channel))

    async def get(self, timeout: float) -> dict[str, Any] | None:
        """The next message, or None after `timeout` seconds without one."""
        try:
            return await asyncio.wait_for(self.queue.get(), max(timeout, 0))
        except TimeoutError:
            return None


# --- Long poll ----------------------------------------------------------------------------------


async def run_events_wait(
    *, user: User, access: SocketAccess, case_id: int, run_id: int, after: int, limit: int,
    wait: int,
) -> list[RunEvent]:  # fmt: skip
    """The run's events after `after` (audited, NotFound for non-members), waiting up to `wait`
    seconds for the first one when there is none yet (see the module docstring)."""
    events = await sync_to_async(selectors.run_events_for_user)(
        user=user, case_id=case_id, run_id=run_id, after=after, limit=limit
    )
    if events or wait <= 0:
        return events
    started = time.monotonic()
    deadline = started + min(wait, MAX_WAIT_SECONDS)
    async with _Listener([run_group(run_id)]) as listener:
        while True:
            events, final = await _events_or_final(run_id, after, limit)
            if events or final or time.monotonic() >= deadline:
                break
            await listener.get(deadline - time.monotonic())
    if events and time.monotonic() - started >= socket_access.recheck_seconds():
        ended = await database_sync_to_async(account_selectors.socket_access_ended)(
            accesses=[access]
        )
        if ended:
            return []
    return events


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
    if not events:
        return {"items": [], "count": 0, "next": None}
    count = await sync_to_async(selectors.run_events_count)(run_id=run_id, after=after)
    following = f"{path}?after={events[-1].seq}&limit={limit}" if count > len(events) else None
    return {"items": events, "count": count, "next": following}


@database_sync_to_async
def _events_or_final(run_id: int, after: int, limit: int) -> tuple[list[RunEvent], bool]:
    events = selectors.run_events_after(run_id=run_id, after=after, limit=limit)
    if events:
        return events, False
    return [], Run.objects.filter(pk=run_id, status__in=FINAL).exists()


# --- Stream -------------------------------------------------------------------------------------

_open_lock = threading.Lock()
_open: dict[int, "weakref.WeakSet[RunEventStream]"] = {}


def stream_open(*, user: User, access: SocketAccess, case_id: int, run_id: int, after: int) -> (
    "RunEventStream"
):  # fmt: skip
    """A stream of the run's events after `after` for `user` (NotFound for non-members and
    missing runs; audited as one read of the run's events, `run.stream`). TooManyStreams when
    `user` already has LEXWEB_SSE_STREAMS_PER_USER open in this process."""
    selectors.run_stream_open_for_user(user=user, case_id=case_id, run_id=run_id)
    stream = RunEventStream(access=access, case_id=case_id, run_id=run_id, after=after)
    limit = settings.LEXWEB_SSE_STREAMS_PER_USER
    with _open_lock:
        streams = _open.setdefault(user.pk, weakref.WeakSet())
        if len(streams) >= limit:
            raise TooManyStreams(
                f"You have {len(streams)} event streams open (at most {limit}): close one, or "
                f"use ?wait= on the events list.",
                retry_after=5,
            )
        streams.add(stream)
    return stream


def _stream_close(stream: "RunEventStream") -> None:
    with _open_lock:
        streams = _open.get(stream.user_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del _open[stream.user_id]


def response(stream: "RunEventStream") -> StreamingHttpResponse:
    answer = StreamingHttpResponse(stream.body(), content_type="text/event-stream")
    answer["X-Accel-Buffering"] = "no"  # a proxy in front must not hold events back
    return answer


def sse_event(message: RunEventMessage) -> bytes:
    data = {
        "seq": message["seq"],
        "kind": message["kind"],
        "payload": message["payload"],
        "created_at": message["at"],
    }
    kind = "".join(c for c in message["kind"] if c not in "\r\n")
    return f"id: {message['seq']}\nevent: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def sse_end(reason: str) -> bytes:
    data = {"reason": reason, "detail": END_DETAILS.get(reason, END_DETAILS["signed_out"])}
    return f"event: end\ndata: {json.dumps(data)}\n\n".encode()


class RunEventStream:
    """One open stream (see the module docstring); watched like a websocket (access.Watched)."""

    def __init__(self, *, access: SocketAccess, case_id: int, run_id: int, after: int) -> None:
        self.access: SocketAccess | None = access
        self.user_id = access.user_id
        self.case_id, self.run_id, self.last_seq = case_id, run_id, after
        self.access_closed = False
        self.access_confirmed_at = 0.0
        self.ended = ""
        self.final_seen = False
        self.listener: _Listener | None = None

    async def access_lost(self, reason: str) -> None:
        if self.access_closed:
            return
        self.access_closed, self.ended = True, reason
        if self.listener is not None:
            self.listener.queue.put_nowait(_WAKE)

    async def body(self) -> AsyncIterator[bytes]:
        groups = [run_group(self.run_id), case_group(self.case_id), user_group(self.user_id)]
        try:
            async with _Listener(groups) as listener:
                self.listener = listener
                socket_access.watch_add(self)
                try:
                    if not await socket_access.watch_confirm(self):
                        yield sse_end(self.ended or "access_unconfirmed")
                        return
                    async for chunk in self._follow(listener):
                        yield chunk
                finally:
                    socket_access.watch_remove(self)
        finally:
            _stream_close(self)

    async def _follow(self, listener: _Listener) -> AsyncIterator[bytes]:
        async for chunk in self._catch_up(upto=None):
            yield chunk
        check = True  # a run already final ends once its backlog is sent
        keep_alive = float(settings.LEXWEB_SSE_KEEPALIVE_SECONDS)
        while not self.access_closed:
            if (check or self.final_seen) and await _finished(self.run_id, self.last_seq):
                yield sse_end("run_finished")
                return
            check = False
            message = await listener.get(keep_alive)
            if message is None:
                yield KEEP_ALIVE
                continue
            async for chunk in self._handle(message):
                yield chunk
        yield sse_end(self.ended)

    async def _handle(self, message: dict[str, Any]) -> AsyncIterator[bytes]:
        kind = message.get("type")
        if kind == RUN_EVENT and message.get("run_id") == self.run_id:
            seq = message["seq"]
            if seq > self.last_seq + 1:
                async for chunk in self._catch_up(upto=seq):
                    yield chunk
            if seq > self.last_seq and await self._may_send():
                yield self._sent(message)  # type: ignore[arg-type]  # a RunEventMessage
        elif kind == "cases.membership_revoked" and message.get("user_id") == self.user_id:
            await self.access_lost("membership_ended")
        elif (
            kind == "accounts.access_ended"
            and self.access is not None
            and socket_access.access_ended_matches(self.access, message)  # type: ignore[arg-type]
        ):
            await self.access_lost(message["reason"])

    async def _catch_up(self, *, upto: int | None) -> AsyncIterator[bytes]:
        """The stored events after the last one sent (below `upto` when given)."""
        while True:
            stored = await _events_after(self.run_id, self.last_seq)
            for message in stored:
                if (upto is not None and message["seq"] >= upto) or not await self._may_send():
                    return
                yield self._sent(message)
            if len(stored) < selectors.MAX_EVENTS_PAGE:
                return

    def _sent(self, message: RunEventMessage) -> bytes:
        self.last_seq = message["seq"]
        if message["kind"] == "run.status" and message["payload"].get("status") in FINAL:
            self.final_seen = True
        return sse_event(message)

    async def _may_send(self) -> bool:
        """Access holds, confirmed within LEXWEB_WS_RECHECK_SECONDS (as a websocket's send)."""
        access = self.access
        if access is None or self.access_closed:
            return False
        if access.token_expires_at is not None and access.token_expires_at <= timezone.now():
            await self.access_lost("token_expired")
            return False
        stale = time.monotonic() - self.access_confirmed_at >= socket_access.recheck_seconds()
        if stale and not await socket_access.watch_confirm(self):
            if not self.access_closed:
                await self.access_lost("access_unconfirmed")
            return False
        return True


@database_sync_to_async
def _events_after(run_id: int, after: int) -> list[RunEventMessage]:
    return [runs.event_message(e) for e in selectors.run_events_after(run_id=run_id, after=after)]


@database_sync_to_async
def _finished(run_id: int, last_seq: int) -> bool:
    return Run.objects.filter(pk=run_id, status__in=FINAL, event_seq__lte=last_seq).exists()
