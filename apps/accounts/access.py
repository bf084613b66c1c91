"""Open websockets lose access the moment their way in ends.

How a socket got in (an API token, or a browser session) is put in its scope by
`WebsocketAuthMiddleware` as a `SocketAccess`. Consumers mix in `AccessWatchedConsumer`, which:

1. joins the person's group `user.<id>`: the services and receivers that revoke a token,
   deactivate an account, sign out or delete a session publish `accounts.access_ended` there,
   and the socket it names closes at once (4401, with the reason);
2. closes a token socket when the token's expiry passes (a timer);
3. registers with this event loop's watch, which re-checks every socket of the process in one
   batch every half `LEXWEB_WS_RECHECK_SECONDS` (a handful of queries, however many sockets), so
   access that ended without any event (a row changed in the shell, a session expired) ends
   the socket within that time too; at half the period, a socket's last confirmation is never
   older than the period, and item 4 costs no query while the watch keeps up (with the full
   period, every streaming socket queried on its own once a period, bench/bench_run_relay.py);
4. before sending an event, re-checks the socket's own access if it was last confirmed more
   than `LEXWEB_WS_RECHECK_SECONDS` ago (0: before every event), and drops the event when
   access ended or cannot be confirmed. Nothing is sent after the socket closed. Such a check
   is the watch's next batched round (one round at a time; every socket that asks while one
   runs joins the next), never one socket's own queries: 20 streaming sockets each asking on
   its own, a new database connection each, queued on the one thread Django's sync calls
   share and held every socket's events back for seconds on a busy machine.

Every message is handed to its handler directly. Channels' own `dispatch` first closes the
process's stale database connections on the one thread Django's sync calls share, for every
message: a round trip to that thread per token batch per socket, queued behind whatever that
thread is doing (400 a second with 20 streaming runs, bench/bench_run_relay.py). Handlers here
reach the database only through `database_sync_to_async`, which does the same before and after
each call.

Membership of a case stream is part of the check (an admin's live break-glass grant counts as
one): a socket whose membership or grant ended closes with 4403, as on
`cases.membership_revoked`.
"""

import asyncio
import dataclasses
import logging
import time
import weakref
from typing import Any, Protocol

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings
from django.utils import timezone

from apps.accounts import selectors
from apps.accounts.events import AccessEnded, session_hash, user_group
from apps.accounts.selectors import SocketAccess

logger = logging.getLogger(__name__)

# Close codes (4000-4999 are the application's): static/lexweb/app.js and cluster.js read them.
CLOSE_ACCESS_ENDED = 4401
CLOSE_MEMBERSHIP_ENDED = 4403
CLOSE_TRY_AGAIN = 1013  # access could not be confirmed at connect (the browser retries)

# The close reason the browser gets (a WebSocket close reason is at most 123 bytes).
CLOSE_REASONS = {
    "token_revoked": "Access ended: this API token was revoked. Use another token.",
    "token_expired": "Access ended: this API token expired. Use another token.",
    "user_deactivated": "Access ended: this account was deactivated.",
    "signed_out": "Access ended: you signed out. Sign in again to reconnect.",
    "session_ended": "Access ended: your session expired. Sign in again to reconnect.",
    "membership_ended": "Access ended: you are no longer a member of this case.",
    "break_glass_ended": "Access ended: your break-glass access to this case ended.",
}


def recheck_seconds() -> float:
    return float(settings.LEXWEB_WS_RECHECK_SECONDS)


class Watched(Protocol):
    """What the watch needs of an open stream: a websocket consumer below, or a Server-Sent
    Events stream (apps/accounts/streams.py)."""

    access: SocketAccess | None
    access_closed: bool
    access_confirmed_at: float

    async def access_lost(self, reason: str) -> None: ...


def watch_add(stream: Watched) -> None:
    """Re-check `stream`'s access with every open socket of this event loop."""
    _watch().add(stream)


def watch_remove(stream: Watched) -> None:
    _watch().remove(stream)


async def watch_confirm(stream: Watched) -> bool:
    """Whether `stream`'s access holds, by the watch's next batched round (see `confirm`)."""
    return await _watch().confirm(stream)


class AccessWatchedConsumer(AsyncJsonWebsocketConsumer):
    """A one-way stream whose socket closes when its access ends (see the module docstring).

    Subclasses call `await self.access_begin(case_id=...)` in `connect` after their own checks
    (it joins the groups and accepts nothing), and `await self.access_finish()` in `disconnect`.
    """

    access: SocketAccess | None = None
    access_closed = False
    access_confirmed_at = 0.0  # time.monotonic() of the last check that found access live
    _expiry_timer: asyncio.TimerHandle | None = None

    async def dispatch(self, message: dict[str, Any]) -> None:
        """The message's handler, without Channels' per-message connection clean-up (see the
        module docstring)."""
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message.get('type')!r}")
        await handler(message)

    async def access_begin(self, *, case_id: int | None = None) -> bool:
        """Start watching; False (and the socket closed) if access already ended."""
        access: SocketAccess | None = self.scope.get("access")
        if access is None:  # the middleware always sets it for a signed-in user
            await self.close(code=CLOSE_ACCESS_ENDED, reason=CLOSE_REASONS["session_ended"])
            return False
        self.access = dataclasses.replace(access, case_id=case_id)
        await self.channel_layer.group_add(user_group(access.user_id), self.channel_name)
        _watch().add(self)
        if access.token_expires_at is not None:
            delay = (access.token_expires_at - timezone.now()).total_seconds()
            self._expiry_timer = asyncio.get_running_loop().call_later(max(delay, 0), self._expired)
        # Between authentication and joining the group an event could have been missed.
        if await self.access_confirm():
            return True
        if not self.access_closed:  # not confirmed (database unreachable): refuse for now
            self.access_closed = True
            await self.close(code=CLOSE_TRY_AGAIN)
        return False

    async def access_finish(self) -> None:
        if self._expiry_timer is not None:
            self._expiry_timer.cancel()
            self._expiry_timer = None
        if self.access is not None:
            _watch().remove(self)
            await self.channel_layer.group_discard(
                user_group(self.access.user_id), self.channel_name
            )
            self.access = None

    async def access_confirm(self) -> bool:
        """Check this socket's access now (in the watch's next batched check, shared with every
        socket that asks meanwhile); close it if it ended. False when not confirmed."""
        if self.access is None or self.access_closed:
            return False
        return await _watch().confirm(self)

    async def access_lost(self, reason: str) -> None:
        """Close the socket for `reason` (a key of CLOSE_REASONS). Idempotent."""
        if self.access_closed:
            return
        self.access_closed = True
        _watch().remove(self)
        by_case = reason in ("membership_ended", "break_glass_ended")
        code = CLOSE_MEMBERSHIP_ENDED if by_case else CLOSE_ACCESS_ENDED
        await self.close(code=code, reason=CLOSE_REASONS.get(reason, CLOSE_REASONS["signed_out"]))

    def _expired(self) -> None:
        task = asyncio.ensure_future(self.access_lost("token_expired"))
        _background.add(task)
        task.add_done_callback(_background.discard)

    async def accounts_access_ended(self, event: AccessEnded) -> None:
        if self.access is not None and access_ended_matches(self.access, event):
            await self.access_lost(event["reason"])

    async def send_json(self, content: Any, close: bool = False) -> None:
        """Send only while access holds, confirmed within the last LEXWEB_WS_RECHECK_SECONDS."""
        access = self.access
        if access is None or self.access_closed:
            return
        if access.token_expires_at is not None and access.token_expires_at <= timezone.now():
            await self.access_lost("token_expired")
            return
        stale = time.monotonic() - self.access_confirmed_at >= recheck_seconds()
        if stale and not await self.access_confirm():
            return
        await super().send_json(content, close)


def access_ended_matches(access: SocketAccess, event: AccessEnded) -> bool:
    """Whether `event` ends `access` (the person's every way in, or its token or session)."""
    if event["user_id"] != access.user_id:
        return False
    if event["token_ids"]:
        return access.token_id in event["token_ids"]
    if event["session_hash"]:
        return bool(access.session_key) and (
            session_hash(access.session_key) == event["session_hash"]
        )
    return True


_background: set["asyncio.Future[None]"] = set()


@dataclasses.dataclass
class _Round:
    """One batched check of every socket of a loop: `done` is True once it confirmed them (False
    when it could not); sockets that ask before it starts share it."""

    done: "asyncio.Future[bool]"
    started: float = 0.0


class _Watch:
    """The open sockets of one event loop, re-checked together every half
    LEXWEB_WS_RECHECK_SECONDS, and on demand (`confirm`): one round at a time, so however many
    sockets ask while a round's queries run, the next round answers them all."""

    def __init__(self) -> None:
        self.sockets: set[Watched] = set()
        self.task: asyncio.Task[None] | None = None
        self._next: _Round | None = None  # not started yet: who asks now joins it
        self._last: asyncio.Future[bool] | None = None
        self.rounds = 0  # rounds started (read by the tests)

    def add(self, consumer: Watched) -> None:
        self.sockets.add(consumer)
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._run())

    def remove(self, consumer: Watched) -> None:
        self.sockets.discard(consumer)
        # The last socket gone: stop the timer (unless this is the watch itself closing sockets;
        # its loop then ends on its own).
        if not self.sockets and self.task is not None and self.task is not asyncio.current_task():
            self.task.cancel()
            self.task = None

    async def confirm(self, consumer: Watched) -> bool:
        """Whether `consumer`'s access holds, by a round that starts after this call."""
        asked = time.monotonic()
        if not await asyncio.shield(self._round().done):
            return False
        return not consumer.access_closed and consumer.access_confirmed_at >= asked

    async def _run(self) -> None:
        # Ends when the last socket goes; the next socket starts it again.
        while self.sockets:
            await asyncio.sleep(max(recheck_seconds() / 2, 0.2))
            await asyncio.shield(self._round().done)

    def _round(self) -> _Round:
        """The round not started yet (a new one, queued behind the one running, if none)."""
        if self._next is not None:
            return self._next
        round_ = self._next = _Round(asyncio.get_running_loop().create_future())
        task = asyncio.ensure_future(self._round_run(round_, self._last))
        self._last = round_.done
        _background.add(task)
        task.add_done_callback(_background.discard)
        return round_

    async def _round_run(self, round_: _Round, before: "asyncio.Future[bool] | None") -> None:
        try:
            if before is not None:
                await asyncio.wait([before])
            await asyncio.sleep(0)  # sockets woken together by one notice join this round
            if self._next is round_:
                self._next = None
            round_.started = time.monotonic()
            self.rounds += 1
            ok = await self._check(list(self.sockets), round_.started)
        except BaseException:
            round_.done.set_result(False)
            raise
        round_.done.set_result(ok)

    async def _check(self, consumers: list[Watched], started: float) -> bool:
        accesses = {c.access for c in consumers if c.access is not None}
        if not accesses:
            return True
        try:
            ended = await database_sync_to_async(selectors.socket_access_ended)(accesses=accesses)
        except Exception:
            # Fail closed: no event is sent on an unconfirmed socket; the watch tries again, and
            # pages reload on reconnect.
            logger.exception("Could not re-check open websockets; trying again.")
            return False
        for consumer in consumers:
            if consumer.access is None:
                continue
            if consumer.access in ended:
                await consumer.access_lost(ended[consumer.access])
            else:
                consumer.access_confirmed_at = max(consumer.access_confirmed_at, started)
        return True


_watches: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watch]" = (
    weakref.WeakKeyDictionary()
)


def _watch() -> _Watch:
    loop = asyncio.get_running_loop()
    watch = _watches.get(loop)
    if watch is None:
        watch = _watches[loop] = _Watch()
    return watch
