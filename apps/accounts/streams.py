"""Numbered events over HTTP without polling, for any feed (a run's events, a case's events):
a long poll (`wait_for_events`) and a Server-Sent Events stream (`EventStream`), both watched
for access like a websocket (apps/accounts/access.py).

A feed is a table of events numbered 1, 2, 3, ... in the order they were committed, and a channel
group on which each stored event is published with its number once committed. A stream or a long
poll joins the group through a channel of its own *before* it reads the table, so no event falls
between the stored ones and the live ones.

Stream (`EventStream.body`), for a subclass that says which groups to join, how to read stored
events, which group messages are its events, and when the feed is finished:
1. Join the feed's groups with the case's group (`cases.membership_revoked`) and the person's group
   (`accounts.access_ended`), and register with the websockets' access watch: the stream ends
   when the token is revoked or expires, the account is deactivated, the session ends or the
   person leaves the case, within LEXWEB_WS_RECHECK_SECONDS when nothing announces it, at once
   when something does.
2. Send every stored event after `after`, then live ones: each as `id: <seq>`, `event: <kind>`,
   `data: {"seq", "kind", "payload", "created_at"}`. A live event at or below the last number sent
   is dropped; one that skips numbers first makes the stream send the missing ones from the
   table. Every number once, in order.
3. After LEXWEB_SSE_KEEPALIVE_SECONDS without an event, a `: keep-alive` comment.
4. It ends with `event: end` (no `id`, `data: {"reason", "detail"}`) and closes: when the feed is
   finished and its last event was sent (the subclass's reason), or with the reason access ended.
5. At most LEXWEB_SSE_STREAMS_PER_USER streams per person in each web process, all feeds
   together: 429 beyond.

Database connections (`database_turn`): each HTTP request's sync work runs on a thread of its
own (Django's ASGI handler), and each thread opens a connection of its own. A stream's database
work (its opening: token, access check, audit; then its reads of stored events and of whether
the feed finished) therefore takes turns, at most LEXWEB_SSE_DATABASE_CONNECTIONS at once in a
web process, and closes its thread's connection at the end of each turn: 200 streams asked for
at once (clients reconnecting after a restart) queue for a few connections instead of opening
200 (half refused 503 by a server allowing 100), and an open stream that waits holds none.
"""

import asyncio
import contextlib
import functools
import json
import threading
import time
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, ParamSpec, Protocol, TypedDict, TypeVar

from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings
from django.db import connections
from django.http import StreamingHttpResponse
from django.utils import timezone

from apps.accounts import access as socket_access
from apps.accounts import selectors as account_selectors
from apps.accounts.events import user_group
from apps.accounts.selectors import SocketAccess
from apps.accounts.throttle import TooManyAttempts

MAX_WAIT_SECONDS = 60
KEEP_ALIVE = b": keep-alive\n\n"
END_DETAILS = {
    **socket_access.CLOSE_REASONS,
    "access_unconfirmed": "Access could not be confirmed just now. Connect again.",
}


class FeedEvent(TypedDict):
    """One numbered event of a feed, as a stream sends it."""

    seq: int
    kind: str
    payload: dict[str, object]
    created_at: str


def openapi(ends: str) -> dict[str, Any]:
    """What the OpenAPI schema says a stream's 200 is; `ends` says when it ends by itself."""
    return {
        "responses": {
            200: {
                "description": (
                    "A text/event-stream: each event as `id: <seq>`, `event: <kind>`, "
                    '`data: {"seq", "kind", "payload", "created_at"}`; `: keep-alive` comments '
                    'while quiet; a last `event: end` with `data: {"reason", "detail"}` '
                    f"{ends}, and when access ended."
                ),
                "content": {"text/event-stream": {"schema": {"type": "string"}}},
            }
        }
    }


class TooManyStreams(TooManyAttempts):
    code = "too_many_streams"


# --- Database turns -----------------------------------------------------------------------------

P = ParamSpec("P")
R = TypeVar("R")

_turns_lock = threading.Lock()
_turns: dict[int, threading.BoundedSemaphore] = {}


def _turns_of(size: int) -> threading.BoundedSemaphore:
    with _turns_lock:
        return _turns.setdefault(size, threading.BoundedSemaphore(size))


@contextlib.contextmanager
def database_turn() -> Iterator[None]:
    """One of at most LEXWEB_SSE_DATABASE_CONNECTIONS streams' database sections of this process
    at once (the calling thread waits for its turn), this thread's connections closed at its end
    (see the module docstring). Sync code only, on a thread that may wait: a request's own
    thread, as Django's ASGI handler and `database_sync_to_async` within a request give."""
    with _turns_of(max(1, int(settings.LEXWEB_SSE_DATABASE_CONNECTIONS))):
        try:
            yield
        finally:
            for connection in connections.all(initialized_only=True):
                if not connection.in_atomic_block:
                    connection.close()


def in_turn(function: Callable[P, R]) -> Callable[P, R]:
    """`function` run in a `database_turn`."""

    @functools.wraps(function)
    def turned(*args: P.args, **kwargs: P.kwargs) -> R:
        with database_turn():
            return function(*args, **kwargs)

    return turned


# --- Listening ----------------------------------------------------------------------------------

WAKE: dict[str, Any] = {"type": "streams.wake"}


class Listener:
    """A channel of this event loop's channel layer, in `groups`, whose messages land in
    `queue` (a reader task receives them; the queue can also be woken with WAKE)."""

    def __init__(self, groups: list[str]) -> None:
        self.groups = groups
        self.queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.layer: BaseChannelLayer | None = None
        self.channel = ""
        self.joined: list[str] = []
        self.reader: asyncio.Task[None] | None = None

    async def __aenter__(self) -> "Listener":
        layer = get_channel_layer()
        if layer is None:  # without a layer, stored events only (reads again on each wake)
            return self
        self.layer = layer
        self.channel = await layer.new_channel()
        try:
            for group in self.groups:
                await layer.group_add(group, self.channel)
                self.joined.append(group)
        except BaseException:
            self._forget()
            raise
        self.reader = asyncio.get_running_loop().create_task(self._read())
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.reader is not None:
            self.reader.cancel()
        if self.layer is not None:
            try:
                for group in self.joined:
                    await self.layer.group_discard(group, self.channel)
            finally:
                self._forget()

    def _forget(self) -> None:
        """lexweb's layer keeps state for a channel from its making; a cancelled receive drops
        it, and this drops it too where the reader never got to receive (or never started)."""
        forget = getattr(self.layer, "forget_channel", None)
        if forget is not None:
            forget(self.channel)

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


T = TypeVar("T")
E = TypeVar("E", bound="Numbered")


async def wait_for_events(
    *,
    groups: list[str],
    read: Callable[[], Awaitable[tuple[list[T], bool]]],
    access: SocketAccess,
    wait: int,
    started: float,
) -> list[T]:
    """Long poll: join `groups`, then `read()` (events after the client's number, and whether the
    feed is finished) again after each message of the groups until it gives events, the feed is
    finished, or `wait` seconds (at most MAX_WAIT_SECONDS) from `started` have passed. Access is
    confirmed again before answering with events when the wait outlasted
    LEXWEB_WS_RECHECK_SECONDS (no events then if it ended)."""
    deadline = started + min(wait, MAX_WAIT_SECONDS)
    async with Listener(groups) as listener:
        while True:
            events, final = await read()
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


class Numbered(Protocol):
    seq: Any  # a stored event's number (set once numbered)


async def events_page(
    events: "list[E]", *, count: Callable[[], Awaitable[int]], path: str, limit: int
) -> dict[str, object]:
    """A feed's events as a list of the API, `{items, count, next}`. `count()`: the events
    stored after the client's number now, asked only when `events` holds any (0 when the list
    came back empty, so nothing is told past an access that just ended); `next`: `path` with the
    following page's `after` while more are stored, else None."""
    if not events:
        return {"items": [], "count": 0, "next": None}
    total = await count()
    following = f"{path}?after={events[-1].seq}&limit={limit}" if total > len(events) else None
    return {"items": events, "count": total, "next": following}


# --- Stream -------------------------------------------------------------------------------------

_open_lock = threading.Lock()
_open: dict[int, "weakref.WeakSet[EventStream]"] = {}


def stream_register(stream: "EventStream") -> None:
    """Count `stream` among its person's open streams; TooManyStreams when they already have
    LEXWEB_SSE_STREAMS_PER_USER open in this process."""
    limit = settings.LEXWEB_SSE_STREAMS_PER_USER
    with _open_lock:
        streams = _open.setdefault(stream.user_id, weakref.WeakSet())
        if len(streams) >= limit:
            raise TooManyStreams(
                f"You have {len(streams)} event streams open (at most {limit}): close one, or "
                f"use ?wait= on the events list.",
                retry_after=5,
            )
        streams.add(stream)


def open_streams(user_id: int) -> int:
    """How many streams `user_id` has open in this process."""
    with _open_lock:
        return len(_open.get(user_id, ()))


def _stream_close(stream: "EventStream") -> None:
    with _open_lock:
        streams = _open.get(stream.user_id)
        if streams is not None:
            streams.discard(stream)
            if not streams:
                del _open[stream.user_id]


def response(stream: "EventStream") -> StreamingHttpResponse:
    answer = StreamingHttpResponse(stream.body(), content_type="text/event-stream")
    answer["X-Accel-Buffering"] = "no"  # a proxy in front must not hold events back
    return answer


def sse_event(event: FeedEvent) -> bytes:
    kind = "".join(c for c in event["kind"] if c not in "\r\n")
    return f"id: {event['seq']}\nevent: {kind}\ndata: {json.dumps(event)}\n\n".encode()


def sse_end(reason: str, details: dict[str, str]) -> bytes:
    detail = details.get(reason) or END_DETAILS.get(reason) or END_DETAILS["signed_out"]
    return f"event: end\ndata: {json.dumps({'reason': reason, 'detail': detail})}\n\n".encode()


class EventStream:
    """One open stream (see the module docstring); watched like a websocket (access.Watched).

    A subclass gives `groups` (the feed's own and the case's, whose `cases.membership_revoked`
    ends the stream), `PAGE` (the most `stored_after` returns at once),
    `stored_after`, `live_event`, `finished` and `END_DETAILS` (its own end reasons)."""

    PAGE = 1000
    END_DETAILS: dict[str, str] = {}

    def __init__(self, *, access: SocketAccess, case_id: int, after: int, groups: list[str]):
        self.access: SocketAccess | None = access
        self.user_id = access.user_id
        self.case_id, self.last_seq = case_id, after
        self.feed_groups = groups
        self.access_closed = False
        self.access_confirmed_at = 0.0
        self.ended = ""
        self.final_seen = False
        self.listener: Listener | None = None

    # What a feed says of itself.

    async def stored_after(self, after: int) -> list[FeedEvent]:
        raise NotImplementedError

    def live_event(self, message: dict[str, Any]) -> FeedEvent | None:
        """The feed's event in a group message, or None when the message is not one."""
        raise NotImplementedError

    def is_final(self, event: FeedEvent) -> bool:
        """Whether `event` may be the feed's last (then `finished` is asked after sending it)."""
        return False

    async def finished(self, last_seq: int) -> str:
        """The end reason when the feed is finished and its event `last_seq` was its last."""
        return ""

    # The stream.

    async def access_lost(self, reason: str) -> None:
        if self.access_closed:
            return
        self.access_closed, self.ended = True, reason
        if self.listener is not None:
            self.listener.queue.put_nowait(WAKE)

    async def body(self) -> AsyncIterator[bytes]:
        groups = [*self.feed_groups, user_group(self.user_id)]
        try:
            async with Listener(list(dict.fromkeys(groups))) as listener:
                self.listener = listener
                socket_access.watch_add(self)
                try:
                    if not await socket_access.watch_confirm(self):
                        yield self._end(self.ended or "access_unconfirmed")
                        return
                    async for chunk in self._follow(listener):
                        yield chunk
                finally:
                    socket_access.watch_remove(self)
        finally:
            _stream_close(self)

    def _end(self, reason: str) -> bytes:
        return sse_end(reason, self.END_DETAILS)

    async def _follow(self, listener: Listener) -> AsyncIterator[bytes]:
        async for chunk in self._catch_up(upto=None):
            yield chunk
        check = True  # a feed already finished ends once its backlog is sent
        keep_alive = float(settings.LEXWEB_SSE_KEEPALIVE_SECONDS)
        while not self.access_closed:
            if check or self.final_seen:
                reason = await self.finished(self.last_seq)
                if reason:
                    yield self._end(reason)
                    return
            check = False
            message = await listener.get(keep_alive)
            if message is None:
                yield KEEP_ALIVE
                continue
            async for chunk in self._handle(message):
                yield chunk
        yield self._end(self.ended)

    async def _handle(self, message: dict[str, Any]) -> AsyncIterator[bytes]:
        kind = message.get("type")
        if kind == "cases.membership_revoked":
            if message.get("user_id") == self.user_id:
                await self.access_lost("membership_ended")
            return
        if kind == "accounts.access_ended":
            if self.access is not None and socket_access.access_ended_matches(
                self.access,
                message,  # type: ignore[arg-type]
            ):
                await self.access_lost(message["reason"])
            return
        event = self.live_event(message)
        if event is None:
            return
        seq = event["seq"]
        if seq > self.last_seq + 1:
            async for chunk in self._catch_up(upto=seq):
                yield chunk
        if seq > self.last_seq and await self._may_send():
            yield self._sent(event)

    async def _catch_up(self, *, upto: int | None) -> AsyncIterator[bytes]:
        """The stored events after the last one sent (below `upto` when given)."""
        while True:
            stored = await self.stored_after(self.last_seq)
            for event in stored:
                if (upto is not None and event["seq"] >= upto) or not await self._may_send():
                    return
                yield self._sent(event)
            if len(stored) < self.PAGE:
                return

    def _sent(self, event: FeedEvent) -> bytes:
        self.last_seq = event["seq"]
        if self.is_final(event):
            self.final_seen = True
        return sse_event(event)

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
