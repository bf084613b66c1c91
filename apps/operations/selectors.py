"""Reads about the job system, for `/readyz` and the admin's *Job queues* page.

- Stuck jobs: `doing` jobs whose worker row is gone or silent past LEXWEB_JOB_STALLED_SECONDS
  (the same test recovery uses; until recovery has run, they are reported here).
- Queues: per queue, jobs waiting and running, and how long the oldest waiting one has waited
  (since it was queued, or since its retry time for a retried job).
- Periodic jobs: for each one this process knows (the periodic registry: cron from settings),
  when it last ran, when it is due again and how late it is. A periodic job is late when it has
  not finished (or at least started) by LEXWEB_PERIODIC_GRACE_SECONDS after the next scheduled
  time following its last run: a machine that slept for hours, a deferrer that stopped, a dead
  job holding its queueing lock, or a queue nobody works show as late, with how long.
"""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import croniter
from django.conf import settings
from django.db import connection
from django.utils import timezone
from procrastinate.contrib.django import procrastinate_app

# Queues lexweb uses today; others appear once they hold jobs.
KNOWN_QUEUES = ("cpu", "cluster")
STUCK_LISTED = 20


@dataclass(frozen=True)
class StuckJob:
    id: int
    task: str
    queue: str
    worker_id: int | None
    attempts: int


@dataclass
class QueueState:
    name: str
    counts: dict[str, int] = field(default_factory=dict)  # by status
    oldest_queued_seconds: float | None = None

    @property
    def queued(self) -> int:
        return self.counts.get("todo", 0)

    @property
    def running(self) -> int:
        return self.counts.get("doing", 0)


@dataclass(frozen=True)
class PeriodicState:
    task: str
    periodic_id: str
    cron: str
    interval_seconds: float
    last_run: datetime | None  # finished, or started if still running; None: never
    last_status: str | None  # the latest run's job status (None: never, or the job was deleted)
    due: datetime | None  # when the next run should have finished by (grace included)
    late_seconds: float  # 0 when on time

    @property
    def ok(self) -> bool:
        return self.late_seconds <= 0


_STUCK_SQL = """
SELECT job.id, job.task_name, job.queue_name, job.worker_id, job.attempts
  FROM procrastinate_jobs job
  LEFT JOIN procrastinate_workers worker ON worker.id = job.worker_id
 WHERE job.status = 'doing'
   AND (worker.id IS NULL OR worker.last_heartbeat < NOW() - make_interval(secs => %s))
 ORDER BY job.id
"""


def jobs_stuck(*, stalled_seconds: int | None = None) -> list[StuckJob]:
    seconds = settings.LEXWEB_JOB_STALLED_SECONDS if stalled_seconds is None else stalled_seconds
    with connection.cursor() as cursor:
        cursor.execute(_STUCK_SQL, [seconds])
        return [StuckJob(*row) for row in cursor.fetchall()]


# Waiting jobs only (status todo): a partial index makes this cheap however many jobs ran.
_WAITING_SQL = """
SELECT job.queue_name, job.status, count(*),
       min(COALESCE(job.scheduled_at, queued.at)) FILTER (WHERE job.status = 'todo')
  FROM procrastinate_jobs job
  LEFT JOIN LATERAL (
       SELECT max(event.at) AS at FROM procrastinate_events event
        WHERE event.job_id = job.id AND event.type IN ('deferred', 'deferred_for_retry')
  ) queued ON true
 WHERE job.status IN ('todo', 'doing')
   AND (job.status = 'doing' OR job.scheduled_at IS NULL OR job.scheduled_at <= NOW())
 GROUP BY job.queue_name, job.status
"""

_ALL_COUNTS_SQL = """
SELECT queue_name, status, count(*) FROM procrastinate_jobs GROUP BY queue_name, status
"""


def queues_state(*, all_statuses: bool = False) -> list[QueueState]:
    """Per queue: waiting and running jobs and the oldest waiting one's age. `all_statuses`
    (the admin page) also counts finished jobs, which reads the whole jobs table."""
    now = timezone.now()
    queues = {name: QueueState(name) for name in KNOWN_QUEUES}
    with connection.cursor() as cursor:
        cursor.execute(_WAITING_SQL)
        for queue, status, count, oldest in cursor.fetchall():
            state = queues.setdefault(queue, QueueState(queue))
            state.counts[status] = count
            if oldest is not None:
                state.oldest_queued_seconds = max(0.0, (now - oldest).total_seconds())
        if all_statuses:
            cursor.execute(_ALL_COUNTS_SQL)
            for queue, status, count in cursor.fetchall():
                queues.setdefault(queue, QueueState(queue)).counts[status] = count
    return sorted(queues.values(), key=lambda q: q.name)


_LATEST_DEFER_SQL = """
SELECT defer.defer_timestamp, job.status,
       (SELECT max(event.at) FROM procrastinate_events event
         WHERE event.job_id = job.id
           AND event.type IN ('started', 'succeeded', 'failed', 'aborted', 'cancelled'))
  FROM procrastinate_periodic_defers defer
  LEFT JOIN procrastinate_jobs job ON job.id = defer.job_id
 WHERE defer.task_name = %s AND defer.periodic_id = %s
 ORDER BY defer.defer_timestamp DESC
 LIMIT 1
"""

_OLDEST_WAITING_SQL = """
SELECT min(event.at)
  FROM procrastinate_jobs job
  JOIN procrastinate_events event ON event.job_id = job.id AND event.type = 'deferred'
 WHERE job.status = 'todo' AND job.task_name = %s
"""


def periodic_state(*, now: datetime | None = None) -> list[PeriodicState]:
    """Each registered periodic job: last run, when due again, how late (see the module doc)."""
    now = timezone.now() if now is None else now
    grace = timedelta(seconds=settings.LEXWEB_PERIODIC_GRACE_SECONDS)
    registry = procrastinate_app.current_app.periodic_registry.periodic_tasks
    states: list[PeriodicState] = []
    with connection.cursor() as cursor:
        for periodic in sorted(registry.values(), key=lambda p: (p.task.name, p.periodic_id)):
            cursor.execute(_LATEST_DEFER_SQL, [periodic.task.name, periodic.periodic_id])
            row = cursor.fetchone()
            cursor.execute(_OLDEST_WAITING_SQL, [periodic.task.name])
            waiting = cursor.fetchone()[0]
            last_run, status = _last_run(row)
            reference = last_run
            if waiting is not None and (reference is None or waiting < reference):
                reference = waiting  # a run queued that long ago has not started
            due = _next(periodic.cron, reference) + grace if reference else None
            late = max(0.0, (now - due).total_seconds()) if due else 0.0
            states.append(
                PeriodicState(
                    task=periodic.task.name,
                    periodic_id=periodic.periodic_id,
                    cron=periodic.cron,
                    interval_seconds=_interval(periodic.cron, now),
                    last_run=last_run,
                    last_status=status,
                    due=due,
                    late_seconds=round(late, 1),
                )
            )
    return states


def _last_run(
    row: tuple[int, str | None, datetime | None] | None,
) -> tuple[datetime | None, str | None]:
    """When the latest deferred run last moved (started or finished); its scheduled time if it
    has not started yet or its job row is gone."""
    if row is None:
        return None, None
    timestamp, status, moved = row
    scheduled = datetime.fromtimestamp(timestamp, tz=timezone.get_current_timezone())
    if status in (None, "todo") or moved is None:
        return scheduled, status
    return max(moved, scheduled), status


def _next(cron: str, after: datetime) -> datetime:
    return croniter.croniter(cron, after).get_next(datetime)


def _interval(cron: str, at: datetime) -> float:
    iterator = croniter.croniter(cron, at)
    following = iterator.get_next(datetime)
    return float((iterator.get_next(datetime) - following).total_seconds())
