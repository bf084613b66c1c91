"""The one writer of a run's events (issue 23 req 2): how they are numbered, stored and told.

Every event of a run, whether a stage's status, a run's decision or a batch of streamed
tokens, is numbered the same way: its run's row is locked and `event_seq` moved on by the
number of events (NUMBER_SQL), so numbers have no gaps and no repeats, then the rows are
inserted (INSERT_SQL) and published to the run's group (`run.<id>`) with `event_message`. Two
callers, one set of statements: `run_event_append` for one event in Django's transaction
(published when it commits), and the worker's group commit of token batches
(`token_events`), which numbers several runs' batches at once on its own connection (rows
locked in id order, LOCK_SQL) and publishes them in the same transaction.
"""

import json
from collections import Counter
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from apps.drafting.events import RunEventMessage, run_group
from apps.drafting.models import Run, RunEvent
from lexweb.errors import NotFound
from lexweb.live import publish_on_commit

LOCK_SQL = "SELECT id FROM drafting_run WHERE id = ANY(%s) ORDER BY id FOR UPDATE"
NUMBER_SQL = (
    "UPDATE drafting_run AS r SET event_seq = r.event_seq + c.n "
    "FROM unnest(%s::bigint[], %s::bigint[]) AS c(id, n) WHERE r.id = c.id "
    "RETURNING r.id, r.event_seq"
)
INSERT_SQL = (
    "INSERT INTO drafting_runevent (run_id, seq, kind, payload, created_at) "
    "SELECT e.run_id, e.seq, %s, e.payload::jsonb, %s "
    "FROM unnest(%s::bigint[], %s::bigint[], %s::text[]) "
    "WITH ORDINALITY AS e(run_id, seq, payload, n) "
    "ORDER BY e.n RETURNING id"
)


def run_event_append(*, run: Run | int, kind: str, payload: dict[str, object]) -> RunEvent:
    """Store the run's next event (its number taken under the run row's lock) and publish it
    to `run.<id>` once the transaction commits. NotFound for a run that does not exist."""
    run_id = run if isinstance(run, int) else run.pk
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(NUMBER_SQL, [[run_id], [1]])
        rows = cursor.fetchall()
        (event,) = events_numbered([(run_id, payload)], rows, kind=kind)
        if isinstance(event, NotFound):
            raise event
        cursor.execute(INSERT_SQL, insert_params([event]))
        event.pk = cursor.fetchone()[0]
        publish_on_commit(run_group(run_id), event_message(event))
    return event


def events_numbered(
    items: list[tuple[int, dict[str, object]]], rows: list[tuple[object, ...]], *, kind: str
) -> list[RunEvent | NotFound]:
    """Each (run id, payload) as its run's next event of `kind`, numbered from the runs' new
    last numbers (`rows`, as NUMBER_SQL returned them, for these items' counts), in the order
    given; a NotFound in place of each event whose run does not exist."""
    counts = Counter(run_id for run_id, _payload in items)
    last = {int(run_id): int(number) for run_id, number in rows}  # type: ignore[call-overload]
    seq = {run_id: number - counts[run_id] for run_id, number in last.items()}
    now = timezone.now()
    results: list[RunEvent | NotFound] = []
    for run_id, payload in items:
        if run_id not in seq:
            results.append(NotFound(f"No run {run_id}."))
            continue
        seq[run_id] += 1
        results.append(
            RunEvent(run_id=run_id, seq=seq[run_id], kind=kind, payload=payload, created_at=now)
        )
    return results


def insert_params(events: list[RunEvent]) -> list[Any]:
    """INSERT_SQL's parameters for `events`, which share one kind and one time."""
    return [
        events[0].kind, events[0].created_at,
        [event.run_id for event in events], [event.seq for event in events],
        [json.dumps(event.payload) for event in events],
    ]  # fmt: skip


def event_message(event: RunEvent) -> RunEventMessage:
    """An event as the run's group, its stream and its socket carry it."""
    return {
        "type": "drafting.run_event",
        "run_id": event.run_id,
        "seq": event.seq,
        "kind": event.kind,
        "payload": event.payload,
        "at": event.created_at.isoformat(),
    }
