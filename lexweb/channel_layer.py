"""The default channel layer: channels_postgres, with its listener made safe.

channels_postgres (1.1.4) stores each message in a table whose trigger NOTIFYs every listening
process; a process's listener hands each notice to the queue of the channel it is for. Three
things in how it starts listening lose or repeat messages (tests/lexweb/test_channel_layer.py
shows each one against the unpatched layer):

1. When a listener starts it DELETEs every unexpired message of *every* channel and queues them
   here: another process's messages are taken from it (a large one is then lost), and messages
   already delivered are delivered again (every /readyz round trip did this to open sockets).
2. It reads the table first and LISTENs afterwards: a message sent in between is never seen.
3. Two receivers that start together on a fresh process start two listeners, and from then on
   every message arrives twice.

This subclass keeps the library's storage, NOTIFY payloads, groups and serialisation. On the
sending side, `group_send` is one statement (the library spends three round trips: a look-up
of the unprefixed group name that finds nothing, the group's channels, then the insert), and
`group_send_in` writes a batch of group messages through a caller's cursor, in its
transaction (`group_send_sql` gives the statement, for an async connection): the notices go
out when that commits (the run events' writer publishes each batch of token events so,
bench/bench_run_relay.py). On the listening side:

- one listener per event loop, claimed synchronously by the first receiver;
- LISTEN first, then catch up by *reading* (never deleting) the unexpired messages of the
  channels this layer receives on, and again for each channel that starts receiving later;
- queues belong to this layer object and its event loop, and a message id is queued at most
  once per channel, so the overlaps above are harmless;
- a process's own channel (`new_channel`: a name with this layer's random prefix and a `!`,
  which no other process can receive on) made while this event loop's listener is claimed
  receives from the moment it is made: the listener queues its notices, and a listener that
  reconnects catches up on it with the others, so its first receive needs no catch-up read of
  its own (each long poll and stream opened a PostgreSQL connection for one, up to 15 a second
  under the load test, most of them cancelled because the request had already answered);
- a process's own channels take no advisory lock in the database, and what the
  layer keeps for one (its queue, the ids it has seen) is dropped when its receive is cancelled,
  which is how Channels ends a consumer (a socket closed, a long poll or stream over): the
  library held one session-level lock per socket in a pooled session after the socket had gone,
  so a day's sockets filled PostgreSQL's lock table, and the web process kept each channel's
  state for its whole life;
- leaving a group schedules the removal of expired messages (10 to 20 minutes later) only when
  none is pending on that event loop: the library started one sleeping task per call, so a web
  process held one for every socket, long poll and stream of the last 10 to 20 minutes (about
  1 KB each) and then ran as many DELETEs.
"""

import asyncio
import base64
import logging
from collections import deque
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import psycopg
from channels_postgres.core import PostgresChannelLayer as _LibraryLayer
from channels_postgres.db import GROUP_CHANNEL_TABLE, MESSAGE_TABLE
from psycopg import sql

from lexweb.db import conninfo_from_params

logger = logging.getLogger(__name__)

NOTIFY_CHANNEL = "channels_postgres_messages"
SHUTDOWN_PAYLOAD = "1:shutdown"
# Message ids remembered per channel to drop a second copy. Copies meet only within one
# expiry period (catch-up reads unexpired messages), so this covers ~8 messages a second on one
# channel; the dashboard's busiest stream is 12 GPUs every 5 s. Like the library's own queues
# and channel locks, this state is kept for the life of the process (a few KB per channel).
SEEN_PER_CHANNEL = 512
RELISTEN_SECONDS = 1.0
# How the listener's session shows in pg_stat_activity.
LISTENER_NAME = "lexweb channel listener"

_LISTEN_SQL = sql.SQL("LISTEN {}").format(sql.Identifier(NOTIFY_CHANNEL))
_CATCH_UP_SQL = sql.SQL(
    "SELECT id::text, channel, message, extract(epoch from expire)::text FROM {table} "
    "WHERE channel = ANY(%s) AND expire > now() ORDER BY id"
).format(table=sql.Identifier(MESSAGE_TABLE))

# Each message once per channel of its group, in the order given (the channels of one group in
# name order). The ids the trigger NOTIFYs follow that order.
_SEND_MANY = (
    "INSERT INTO {messages} (channel, message, expire) "
    "SELECT g.channel, m.message, %s FROM unnest(%s::text[], %s::bytea[]) "
    "WITH ORDINALITY AS m(group_key, message, n) "
    "CROSS JOIN LATERAL (SELECT DISTINCT channel FROM {groups} "
    "WHERE group_key = m.group_key) AS g ORDER BY m.n, g.channel"
)
_SEND_MANY_SQL = _SEND_MANY.format(messages=f'"{MESSAGE_TABLE}"', groups=f'"{GROUP_CHANNEL_TABLE}"')
_SEND_ONE_SQL = sql.SQL(
    "INSERT INTO {messages} (channel, message, expire) "
    "SELECT DISTINCT channel, %s::bytea, %s FROM {groups} WHERE group_key = %s"
).format(messages=sql.Identifier(MESSAGE_TABLE), groups=sql.Identifier(GROUP_CHANNEL_TABLE))


def _own_channel(channel: str) -> bool:
    """A channel made by `new_channel` ("<prefix>.<this layer's client prefix>!<uuid>"): only the
    process that made it receives on it."""
    return "!" in channel


class Cursor(Protocol):
    """What `group_send_in` needs of a cursor (Django's, or psycopg's)."""

    def execute(self, query: str, params: Sequence[Any], /) -> Any: ...


class _Seen:
    """The ids already queued for one channel (bounded, oldest forgotten first)."""

    def __init__(self) -> None:
        self._ids: set[int] = set()
        self._order: deque[int] = deque()

    def first_time(self, message_id: int) -> bool:
        if message_id in self._ids:
            return False
        self._ids.add(message_id)
        self._order.append(message_id)
        if len(self._order) > SEEN_PER_CHANNEL:
            self._ids.discard(self._order.popleft())
        return True


class PostgresChannelLayer(_LibraryLayer):
    listener_task_is_running: asyncio.Event | None
    event_loop: asyncio.AbstractEventLoop | None

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._queues: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Queue[str]]] = {}
        self._seen: dict[str, _Seen] = {}
        self._listening_on: asyncio.AbstractEventLoop | None = None
        # The pending removal of expired messages, per event loop (group_discard).
        self._expired_removal: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    # -- sending -----------------------------------------------------------------------------

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        """Send `message` to every channel of `group`: one statement. A send that meets a
        connection the server ended (PostgreSQL restarted) is sent again once, after the pool
        has dropped its dead connections: the first publish after a restart is not lost."""
        self.require_valid_group_name(group)  # raises on a bad name
        params = [self.serialize(message), self._expire(), self._group_key(group)]
        pool = await self.django_db.get_db_pool(db_params=self.db_params)
        try:
            async with pool.connection() as connection:
                await connection.execute(_SEND_ONE_SQL, params)
        except psycopg.OperationalError as exc:
            logger.warning("A channel layer send failed (%s); sending it again.", exc)
            await pool.check()
            async with pool.connection() as connection:
                await connection.execute(_SEND_ONE_SQL, params)

    async def group_discard(self, group: str, channel: str, expire: int | None = None) -> None:
        """Take `channel` out of `group`; then expired messages are removed (and expired group
        rows, with a group expiry) by one pending task per event loop, not one per call."""
        self.require_valid_group_name(group)  # raise on a bad name
        self.require_valid_channel_name(channel)
        await self.django_db.delete_channel_group(self._group_key(group), channel)
        loop = asyncio.get_running_loop()
        pending = self._expired_removal.get(loop)
        if pending is None or pending.done():
            self._expired_removal = {
                held: task for held, task in self._expired_removal.items() if not task.done()
            }
            self._expired_removal[loop] = loop.create_task(self._remove_expired(expire))

    async def _remove_expired(self, expire: int | None) -> None:
        if self.group_expiry > 0:
            await self.django_db.delete_expired_groups()
        await self.django_db.delete_expired_messages(expire)

    def group_send_in(
        self, cursor: Cursor, messages: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> None:
        """Send each (group, message) through `cursor`, in its transaction and in the given
        order: nothing is delivered unless the transaction commits. The cursor must be on this
        layer's database (`same_database`)."""
        if messages:
            cursor.execute(*self.group_send_sql(messages))

    def group_send_sql(
        self, messages: Sequence[tuple[str, Mapping[str, Any]]]
    ) -> tuple[str, list[Any]]:
        """The one statement (and its parameters) that sends each (group, message) in the given
        order, for a caller to run in its own transaction (sync or async)."""
        keys, bodies = [], []
        for group, message in messages:
            self.require_valid_group_name(group)
            keys.append(self._group_key(group))
            bodies.append(self.serialize(dict(message)))
        return _SEND_MANY_SQL, [self._expire(), keys, bodies]

    def same_database(self, settings_dict: Mapping[str, Any]) -> bool:
        """Whether a Django connection with these settings reaches this layer's database."""
        params = self.db_params
        return (
            params.get("dbname") == settings_dict.get("NAME")
            and (params.get("host") or "") == (settings_dict.get("HOST") or "")
            and str(params.get("port") or "") == str(settings_dict.get("PORT") or "")
        )

    def _expire(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.expiry)

    # -- queues ------------------------------------------------------------------------------

    def _get_or_create_queue(self, channel: str) -> asyncio.Queue[str]:
        """This layer's queue for `channel` on the running loop (queues are loop-bound)."""
        loop = asyncio.get_running_loop()
        held = self._queues.get(channel)
        if held is None or held[0] is not loop:
            held = (loop, asyncio.Queue())
            self._queues[channel] = held
        return held[1]

    def _enqueue(self, payload: str) -> None:
        """Queue a NOTIFY payload ("id:channel[:base64:expire]") for a channel this layer
        receives on, once."""
        message_id, _, rest = payload.partition(":")
        channel = rest.split(":", 1)[0]
        if not self._channel_advisory_locks.get(channel) or not message_id.isdigit():
            return  # another process receives on it (or a payload we do not understand)
        if self._seen.setdefault(channel, _Seen()).first_time(int(message_id)):
            self._get_or_create_queue(channel).put_nowait(payload)

    def _enqueue_rows(self, rows: list[tuple[str, str, bytes, str]]) -> None:
        for message_id, channel, message, expire in rows:
            encoded = base64.b64encode(bytes(message)).decode("ascii")
            self._enqueue(f"{message_id}:{channel}:{encoded}:{expire}")

    # -- listening ---------------------------------------------------------------------------

    def _get_or_create_listener_task(self) -> tuple[asyncio.Event, bool]:
        """(ready event, whether the caller must start the listener). Claimed here, before any
        await, so that receivers starting together start one listener between them."""
        loop = asyncio.get_running_loop()
        if self._listening_on is loop and self.listener_task_is_running is not None:
            return self.listener_task_is_running, False
        self._listening_on = loop
        self.event_loop = loop
        self.listener_task_is_running = asyncio.Event()
        return self.listener_task_is_running, True

    async def listen_to_all_channels(self) -> None:
        """Listen until a shutdown notice. A lost database connection (PostgreSQL restarted, a
        network blip) is retried every RELISTEN_SECONDS; each new connection catches up on what
        was sent meanwhile, within the messages' expiry. Receivers wait while it reconnects."""
        ready = self.listener_task_is_running
        if ready is None:  # receive() claims the listener before starting it
            raise RuntimeError("listen_to_all_channels started without a claim")
        loop = asyncio.get_running_loop()
        try:
            while True:
                try:
                    await self._listen(ready)
                    return
                except (psycopg.OperationalError, OSError) as exc:
                    ready.clear()
                    logger.warning(
                        "Channel layer lost its database connection (%s); listening again.",
                        " ".join(str(exc).split())[:200],
                    )
                    await asyncio.sleep(RELISTEN_SECONDS)
        finally:
            ready.clear()
            # The next receiver on this loop starts a new listener.
            if self._listening_on is loop and self.listener_task_is_running is ready:
                self._listening_on = None

    async def _listen(self, ready: asyncio.Event) -> None:
        """LISTEN, catch up on what was sent before, then queue every notice that is ours."""
        conninfo = conninfo_from_params(self.db_params, application_name=LISTENER_NAME)
        async with await psycopg.AsyncConnection.connect(
            conninfo=conninfo, autocommit=True
        ) as connection:
            await connection.execute(_LISTEN_SQL)
            cursor = await connection.execute(_CATCH_UP_SQL, [self._receiving()])
            self._enqueue_rows(await cursor.fetchall())
            ready.set()
            async for notice in connection.notifies():
                if notice.payload == SHUTDOWN_PAYLOAD:
                    return
                self._enqueue(notice.payload)

    async def new_channel(self, prefix: str = "specific") -> str:
        """A channel of this process's own; receiving from now on when this loop's listener is
        claimed (see the module docstring). Made and received on one event loop, as Channels'
        consumers and `apps.accounts.streams.Listener` do."""
        channel = await super().new_channel(prefix)
        if self._listening_on is asyncio.get_running_loop():
            self._channel_advisory_locks[channel] = True
        return channel

    def forget_channel(self, channel: str) -> None:
        """Drop what this layer keeps for a channel of its own that will never be received on
        (its groups could not be joined)."""
        if _own_channel(channel):
            self._channel_forget(channel)

    def _receiving(self) -> list[str]:
        return [channel for channel, held in self._channel_advisory_locks.items() if held]

    async def receive(self, channel: str) -> dict[str, Any]:
        """The library's receive; cancelled (Channels ends the consumer that receives on the
        channel), a channel of this process's own is forgotten (see the module docstring)."""
        try:
            message: dict[str, Any] = await super().receive(channel)
        except asyncio.CancelledError:
            if _own_channel(channel):
                self._channel_forget(channel)
            raise
        return message

    def _channel_forget(self, channel: str) -> None:
        """Nothing more is received on `channel`: its queue and seen ids go, and a notice for
        it is no longer queued (`_enqueue` looks for its flag)."""
        self._channel_advisory_locks.pop(channel, None)
        self._queues.pop(channel, None)
        self._seen.pop(channel, None)

    async def _get_or_create_channel_advisory_lock(self, channel: str) -> bool:
        """Take the channel (as the library does; a channel of this process's own needs no
        lock) and, the first time, catch up on messages sent to it before this layer received
        on it: the listener dropped their notices."""
        had = bool(self._channel_advisory_locks.get(channel))
        if _own_channel(channel):
            self._channel_advisory_locks[channel] = True
            held = True
        else:
            held = await super()._get_or_create_channel_advisory_lock(channel)
        if held and not had:
            # Whatever the listener is doing meanwhile (not started, between LISTEN and its own
            # catch-up, running): this read plus its notices cover every message; ids dedupe.
            await self._catch_up([channel])
        return held

    async def _catch_up(self, channels: list[str]) -> None:
        conninfo = conninfo_from_params(self.db_params)
        async with await psycopg.AsyncConnection.connect(
            conninfo=conninfo, autocommit=True
        ) as connection:
            cursor = await connection.execute(_CATCH_UP_SQL, [channels])
            self._enqueue_rows(await cursor.fetchall())
