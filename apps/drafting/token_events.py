"""Token events of every stage running in one process, stored together (a group commit).

Each running stage's TokenBatcher hands its batch here every LEXWEB_RUN_TOKEN_FLUSH_MS and
waits until it is stored and published. Whatever batches arrive while a write is under way go
into the next write: one transaction, on a thread of the writer's own, for all the stages of
the process, instead of one per stage on the single thread that Django's sync code shares with
every stage's other calls (its watcher asks five times a second whether the run goes on). With
20 stages at 120 tok/s in one worker, their writes queued there behind each other and the
watchers, and tokens reached browsers seconds late (bench/bench_run_relay.py).

Numbers stay what `runs.run_event_append` gives: taken under each run row's lock (rows locked in
id order), consecutive, in the order the batches were handed in. The events are published to
their run groups in the same transaction, when the channel layer is the PostgreSQL one on this
database (lexweb.channel_layer `group_send_in`: one more statement, and the notices go out as
the rows commit, never before). Any other layer (Redis) gets them after the commit, each run's
in order; a channel layer that fails is logged, not raised (the rows are the truth, and a
socket that sees a gap reads the table).
"""

import asyncio
import logging
import weakref
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from channels.layers import get_channel_layer
from django.db import connection, transaction

from apps.drafting import runs
from apps.drafting.events import run_group
from apps.drafting.models import RunEvent
from lexweb.channel_layer import PostgresChannelLayer
from lexweb.errors import NotFound

logger = logging.getLogger(__name__)

TOKENS_KIND = "stage.tokens"
# How long the writer keeps its thread and connection after the last batch.
LINGER_SECONDS = 2.0
_LOCK_SQL = "SELECT id FROM drafting_run WHERE id = ANY(%s) ORDER BY id FOR UPDATE"
_NUMBER_SQL = (
    "UPDATE drafting_run AS r SET event_seq = r.event_seq + c.n "
    "FROM unnest(%s::bigint[], %s::bigint[]) AS c(id, n) WHERE r.id = c.id "
    "RETURNING r.id, r.event_seq"
)


@dataclass
class _Pending:
    run_id: int
    payload: dict[str, object]
    stored: "asyncio.Future[RunEvent]"


@dataclass
class _Writer:
    """The group commit of one event loop: one drain task at a time, while batches wait. The
    writes run on a thread of their own (not the one Django's sync code shares with the stages'
    other calls: they would queue behind the stages' watchers)."""

    pending: list[_Pending] = field(default_factory=list)
    task: "asyncio.Task[None] | None" = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)

    def submit(self, run_id: int, payload: dict[str, object]) -> "asyncio.Future[RunEvent]":
        loop = asyncio.get_running_loop()
        stored: asyncio.Future[RunEvent] = loop.create_future()
        self.pending.append(_Pending(run_id, payload, stored))
        self.wake.set()
        if self.task is None or self.task.done():
            self.task = loop.create_task(self._drain())
        return stored

    async def _drain(self) -> None:
        """Write what is pending, then what came meanwhile, until nothing has come for
        LINGER_SECONDS; then the thread's database connection is closed and the thread ends."""
        loop = asyncio.get_running_loop()
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="token-events")
        try:
            while True:
                if not self.pending:
                    self.wake.clear()
                    try:
                        await asyncio.wait_for(self.wake.wait(), LINGER_SECONDS)
                    except TimeoutError:
                        return
                    continue
                batch, self.pending = self.pending, []
                items = [(item.run_id, item.payload) for item in batch]
                try:
                    results, published = await loop.run_in_executor(
                        executor, _store_in_thread, items
                    )
                except Exception as exc:  # every waiting stage gets the error, as alone
                    for item in batch:
                        if not item.stored.done():
                            item.stored.set_exception(exc)
                    continue
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
        finally:
            # Not awaited: a cancelled drain (its loop closing) must not wait on the thread.
            executor.submit(_close_in_thread)
            executor.shutdown(wait=False)


_writers: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Writer]" = (
    weakref.WeakKeyDictionary()
)


async def token_event_append(*, run_id: int, payload: dict[str, object]) -> RunEvent:
    """Store a batch of a stage's tokens as the run's next event, together with the batches of
    the other stages of this process; returns once it is stored and published."""
    loop = asyncio.get_running_loop()
    writer = _writers.get(loop)
    if writer is None:
        writer = _writers[loop] = _Writer()
    return await writer.submit(run_id, payload)


def _store_in_thread(
    items: list[tuple[int, dict[str, object]]],
) -> tuple[list[RunEvent | NotFound], bool]:
    try:
        return token_events_store(items, publish=True)
    except Exception:
        connection.close()  # a broken connection is opened again by the next write
        raise


def _close_in_thread() -> None:
    connection.close()  # this thread's connection (Django's are per thread)


def token_events_store(
    items: list[tuple[int, dict[str, object]]], *, publish: bool = False
) -> tuple[list[RunEvent | NotFound], bool]:
    """Token events of several runs in one transaction, numbered per run in the given order (a
    NotFound in place of each event whose run does not exist), and whether they were also
    published in it (only with `publish`, and only through a PostgreSQL layer on this
    database)."""
    layer = _layer_in_this_database() if publish else None
    counts = Counter(run_id for run_id, _payload in items)
    ids = sorted(counts)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_LOCK_SQL, [ids])
        cursor.execute(_NUMBER_SQL, [ids, [counts[run_id] for run_id in ids]])
        last = dict(cursor.fetchall())
        seq = {run_id: number - counts[run_id] for run_id, number in last.items()}
        results: list[RunEvent | NotFound] = []
        for run_id, payload in items:
            if run_id not in seq:
                results.append(NotFound(f"No run {run_id}."))
                continue
            seq[run_id] += 1
            results.append(
                RunEvent(run_id=run_id, seq=seq[run_id], kind=TOKENS_KIND, payload=payload)
            )
        events = [event for event in results if isinstance(event, RunEvent)]
        RunEvent.objects.bulk_create(events)
        if layer is not None:
            layer.group_send_in(
                cursor, [(run_group(event.run_id), runs.event_message(event)) for event in events]
            )
    return results, layer is not None


def _layer_in_this_database() -> PostgresChannelLayer | None:
    layer = get_channel_layer()
    if isinstance(layer, PostgresChannelLayer) and layer.same_database(connection.settings_dict):
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
                await layer.group_send(run_group(run_id), dict(runs.event_message(event)))
            except Exception:
                logger.exception("Run %s event %s not published.", run_id, event.seq)

    await asyncio.gather(*(send(run_id, ordered) for run_id, ordered in by_run.items()))
