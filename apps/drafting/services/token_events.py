"""Token events of every stage running in one process, stored together (a group commit).

Each running stage's TokenBatcher hands its batch here every LEXWEB_RUN_TOKEN_FLUSH_MS and
waits until it is stored and published. Whatever batches arrive while a write is under way go
into the next write: one transaction for all the stages of the process, instead of one per
stage on the single thread that Django's sync code shares with every stage's other calls (its
watcher asks five times a second whether the run goes on). With 20 stages at 120 tok/s in one
worker, their writes queued there behind each other and the watchers, and tokens reached
browsers seconds late (bench/bench_run_relay.py).

The writer is a task on the stages' own event loop with a psycopg connection of its own, in
pipeline mode: a write is two round trips (lock and number the runs; then insert the events and
their notices and commit), with no thread between. On a thread, each of the six statements
Django's transaction makes ended in a wait for the GIL that the loop's streams held (up to the
interpreter's 5 ms switch interval each): the write's p99 was 23 ms against 1 ms for the bare
commit. The connection is opened when the first stage starts (`writer_hold`), before its first
token, and kept while any stage streams and LINGER_SECONDS after the last.

Numbers, rows and messages are those of the run event writer (`events`), whose statements this
writer runs: taken under each run row's lock (rows locked in id order), consecutive, in the
order the batches were handed in. The events are published to their run groups in the same
transaction, when the channel layer is the PostgreSQL one on this database
(lexweb.channel_layer `group_send_sql`: one more statement, and the notices go out as the rows
commit, never before). Any other layer (Redis) gets them after the commit, each run's in order;
a channel layer that fails is logged, not raised (the rows are the truth, and a socket that
sees a gap reads the table).
"""

import asyncio
import contextlib
import logging
import time
import weakref
from collections import Counter
from dataclasses import dataclass, field

import psycopg
from channels.layers import get_channel_layer
from django.db import connections
from django.utils import timezone

from apps.drafting.events import run_group
from apps.drafting.models import RunEvent
from apps.drafting.services import events as event_writer
from apps.evidence.services import streaming
from lexweb.channel_layer import PostgresChannelLayer
from lexweb.db import conninfo
from lexweb.errors import NotFound

logger = logging.getLogger(__name__)

TOKENS_KIND = "stage.tokens"
# How long the writer keeps its connection after the last stage stopped streaming.
LINGER_SECONDS = 2.0
# How the writer's session shows in pg_stat_activity.
WRITER_NAME = "lexweb token events"
# A streaming stage's progress time (Stage.last_progress_at), written with its batches at most
# this often: a stage's row is not rewritten at every flush.
PROGRESS_EVERY_SECONDS = 1.0
_PROGRESS_SQL = "UPDATE drafting_stage SET last_progress_at = %s WHERE id = ANY(%s)"


@dataclass
class _Pending:
    run_id: int
    payload: dict[str, object]
    stored: "asyncio.Future[RunEvent]"
    # The stage's streaming artifact and the hashes this batch adds to it (registered in the
    # same transaction as the event: apps.evidence.services.streaming).
    growth: "tuple[streaming.StreamPostings, list[int]] | None" = None


@dataclass
class _Writer:
    """The group commit of one event loop: one drain task at a time, while batches wait (see
    the module docstring)."""

    pending: list[_Pending] = field(default_factory=list)
    task: "asyncio.Task[None] | None" = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    holders: int = 0  # stages streaming (between writer_hold and writer_release)
    connection: psycopg.AsyncConnection[tuple[object, ...]] | None = None
    # Stage id -> when its progress time was last written (time.monotonic).
    progress_written: dict[int, float] = field(default_factory=dict)

    def submit(
        self,
        run_id: int,
        payload: dict[str, object],
        growth: "tuple[streaming.StreamPostings, list[int]] | None" = None,
    ) -> "asyncio.Future[RunEvent]":
        stored: asyncio.Future[RunEvent] = asyncio.get_running_loop().create_future()
        self.pending.append(_Pending(run_id, payload, stored, growth))
        self._run()
        return stored

    def hold(self) -> None:
        self.holders += 1
        self._run()

    def release(self) -> None:
        self.holders = max(self.holders - 1, 0)
        self.wake.set()

    def _run(self) -> None:
        self.wake.set()
        if self.task is None or self.task.done():
            self.task = asyncio.get_running_loop().create_task(self._drain())

    async def _drain(self) -> None:
        """Connect, then write what is pending and what comes meanwhile, until no stage has
        streamed for LINGER_SECONDS; then the connection is closed and the task ends."""
        try:
            while True:
                if self.pending:
                    batch, self.pending = self.pending, []
                    await self._write(batch)
                    continue
                self.wake.clear()
                if self.holders:
                    if self.connection is None:  # ready before the stage's first token
                        await self._connected_or_none()
                        continue
                    await self.wake.wait()
                    continue
                try:
                    await asyncio.wait_for(self.wake.wait(), LINGER_SECONDS)
                except TimeoutError:
                    # Let go at once: a batch or a stage that comes while the connection closes
                    # below starts a new drain (and a new connection), never waits on this one.
                    self.task = None
                    return
        finally:
            await self._close()  # detaches the connection before its first await

    def _progress_due(self, batch: list[_Pending]) -> list[int]:
        """The stages of `batch` whose progress time is a second old or more."""
        now = time.monotonic()
        if len(self.progress_written) > 10_000:  # stages long finished
            self.progress_written = {
                stage: at for stage, at in self.progress_written.items() if now - at < 60
            }
        due = []
        for item in batch:
            stage = item.payload.get("stage_id")
            if not isinstance(stage, int) or stage in due:
                continue
            if now - self.progress_written.get(stage, now - PROGRESS_EVERY_SECONDS) >= (
                PROGRESS_EVERY_SECONDS
            ):
                due.append(stage)
        return due

    async def _write(self, batch: list[_Pending]) -> None:
        items = [(item.run_id, item.payload) for item in batch]
        growths = [item.growth for item in batch if item.growth is not None]
        progressed = self._progress_due(batch)
        try:
            try:
                results, published = await _store(await self._connect(), items, growths, progressed)
            except _Unsent:
                # The connection was lost before anything was sent that could commit (a server
                # restart, an idle session ended): once more, on a new one. After the commit was
                # sent a second try could store the tokens twice, so that error is the stages'.
                await self._close()
                results, published = await _store(await self._connect(), items, growths, progressed)
        except Exception as exc:  # every waiting stage gets the error, as alone
            if not isinstance(exc, NotFound):
                await self._close()  # a broken connection is opened again by the next write
            error = exc.__cause__ if isinstance(exc, _Unsent) and exc.__cause__ else exc
            for item in batch:
                if not item.stored.done():
                    item.stored.set_exception(error)
            return
        written = time.monotonic()
        self.progress_written.update((stage, written) for stage in progressed)
        # Published before the stages hear back, as run_event_append does outside a
        # transaction: a stage's next event (its status) never overtakes its tokens.
        if not published:
            await _publish([result for result in results if isinstance(result, RunEvent)])
        for item, result in zip(batch, results, strict=True):
            if item.stored.done():  # its stage stopped waiting; the event is stored
                continue
            if isinstance(result, RunEvent):
                item.stored.set_result(result)
            else:
                item.stored.set_exception(result)

    async def _connect(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        if self.connection is None or self.connection.closed:
            self.connection = await psycopg.AsyncConnection.connect(
                conninfo(application_name=WRITER_NAME)
            )
        return self.connection

    async def _connected_or_none(self) -> None:
        """Open the connection ahead of the first batch; a failure is left to that write."""
        try:
            await self._connect()
        except (psycopg.Error, OSError):
            logger.warning("Token events: could not connect ahead of the first batch.")
            self.wake.clear()
            if not self.pending:
                await self.wake.wait()  # until a batch comes (its write reports the error)

    async def _close(self) -> None:
        connection, self.connection = self.connection, None
        if connection is not None and not connection.closed:
            with contextlib.suppress(psycopg.Error, OSError):
                await connection.close()


_writers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Writer]" = (
    weakref.WeakKeyDictionary()
)


def _writer() -> _Writer:
    loop = asyncio.get_running_loop()
    writer = _writers.get(loop)
    if writer is None:
        writer = _writers[loop] = _Writer()
    return writer


def writer_hold() -> None:
    """A stage starts streaming on this loop: have the writer's connection ready."""
    _writer().hold()


def writer_release() -> None:
    """That stage has stopped (its last batch handed in)."""
    _writer().release()


async def token_event_append(
    *,
    run_id: int,
    payload: dict[str, object],
    growth: "tuple[streaming.StreamPostings, list[int]] | None" = None,
) -> RunEvent:
    """Store a batch of a stage's tokens as the run's next event, together with the batches of
    the other stages of this process; returns once it is stored and published. `growth`: the
    stage's streaming artifact and the batch's new hashes, registered in the same transaction."""
    return await _writer().submit(run_id, payload, growth)


class _Unsent(Exception):
    """The connection failed before the write's commit was sent (its cause says how)."""


async def _store(
    connection: psycopg.AsyncConnection[tuple[object, ...]],
    items: list[tuple[int, dict[str, object]]],
    growths: "list[tuple[streaming.StreamPostings, list[int]]] | None" = None,
    progressed: list[int] | None = None,
) -> tuple[list[RunEvent | NotFound], bool]:
    """Token events of several runs in one transaction, numbered per run in the given order (a
    NotFound in place of each event whose run does not exist), and whether they were also
    published in it (only through a PostgreSQL layer on this database). Two round trips: the
    runs locked (in id order) and numbered; then the events and their notices, the streaming
    artifacts' new hashes (one statement for all; the text is registered as it becomes
    visible), the progress time of the stages in `progressed`, and the commit."""
    layer = _layer_in_this_database()
    counts = Counter(run_id for run_id, _payload in items)
    ids = sorted(counts)
    committing = False
    try:
        async with connection.pipeline(), connection.transaction():
            await connection.execute(event_writer.LOCK_SQL, [ids])
            numbered = await connection.execute(
                event_writer.NUMBER_SQL, [ids, [counts[run_id] for run_id in ids]]
            )
            rows = await numbered.fetchall()
            committing = True
            results = event_writer.events_numbered(items, rows, kind=TOKENS_KIND)
            events = [event for event in results if isinstance(event, RunEvent)]
            if events:
                inserted = await connection.execute(
                    event_writer.INSERT_SQL, event_writer.insert_params(events)
                )
                if layer is not None:
                    messages = [
                        (run_group(e.run_id), event_writer.event_message(e)) for e in events
                    ]
                    await connection.execute(*layer.group_send_sql(messages))
            if growths:
                await connection.execute(
                    streaming.GROW_SQL, streaming.stream_growth_params(growths)
                )
            if progressed:
                await connection.execute(_PROGRESS_SQL, [timezone.now(), progressed])
    except psycopg.OperationalError as exc:
        if not committing:
            raise _Unsent from exc
        raise
    # The pipeline has synced (the commit included): the ids are there to read.
    if events:
        for event, (event_id,) in zip(events, await inserted.fetchall(), strict=True):
            event.pk = int(event_id)  # type: ignore[call-overload]
    return results, layer is not None


def _layer_in_this_database() -> PostgresChannelLayer | None:
    layer = get_channel_layer()
    if isinstance(layer, PostgresChannelLayer) and layer.same_database(
        connections["default"].settings_dict
    ):
        return layer
    return None


async def _publish(events: list[RunEvent]) -> None:
    """Each run's events to its group, in order; runs side by side."""
    layer = get_channel_layer()
    if layer is None or not events:
        return
    by_run: dict[int, list[RunEvent]] = {}
    for event in events:
        by_run.setdefault(event.run_id, []).append(event)

    async def send(run_id: int, ordered: list[RunEvent]) -> None:
        for event in ordered:
            try:
                await layer.group_send(run_group(run_id), dict(event_writer.event_message(event)))
            except Exception:
                logger.exception("Run %s event %s not published.", run_id, event.seq)

    await asyncio.gather(*(send(run_id, ordered) for run_id, ordered in by_run.items()))
