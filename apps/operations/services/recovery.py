"""Stalled jobs come back.

Procrastinate 3.10 prunes workers that stopped beating but leaves their `doing` jobs as they
are: the document stays "processing" for good, and a dead job's lock blocks every later job
with that lock. `jobs_recover_stalled` finds jobs in `doing` whose worker row is gone or has
not beaten for `LEXWEB_JOB_STALLED_SECONDS`, and queues each again from the start (every task
is safe to run again from the start). Its `lock` is released with it (only `doing` jobs hold a
lock). A stalled job whose `queueing_lock` a newer queued job already holds cannot go back to
`todo` (PostgreSQL's unique index says so): it is ended as `aborted` instead and the newer one
runs. A job whose worker died `LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS` times is failed for good, so a
file that kills its worker cannot do so forever; an admin retries it from the admin. Such a
job's cause is in the outcome (`causes`), so that the owner of its work can record the true one
(drafting's stranded stages), never a guess.

Before a stalled job is queued again, ended or failed, each function in `STALLED_HOOKS` hears of
it (`StalledJob`), in the same transaction under a savepoint of its own: the apps above fill the
list (drafting announces `stage.stalled` on the run), so this module imports none of them, and a
hook that fails is logged and never stops the recovery.

It runs at each worker start (apps/operations/worker.py) and as the periodic job
`operations.recover_stalled`. Two runs at once are safe: each job is taken with
`FOR UPDATE SKIP LOCKED` and checked again under that lock.
"""

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import connection, transaction

logger = logging.getLogger(__name__)

# `doing` jobs whose worker row is gone (deleted: the foreign key set it NULL) or silent.
# Silence is counted from the database server's own start at the earliest: while PostgreSQL
# was down (killed, restarted) no worker could beat, and a worker that is still running its job
# would otherwise be judged dead the moment the server is back; its late "failed" would then
# overwrite the retry (procrastinate_finish_job_v1 accepts `todo`).
_STALLED_IDS_SQL = """
SELECT job.id
  FROM procrastinate_jobs job
  LEFT JOIN procrastinate_workers worker ON worker.id = job.worker_id
 WHERE job.status = 'doing'
   AND (worker.id IS NULL
        OR GREATEST(worker.last_heartbeat, pg_postmaster_start_time())
           < NOW() - make_interval(secs => %s))
 ORDER BY job.id
"""

# The same test again, for one job, under its row lock.
_LOCK_STALLED_SQL = """
SELECT job.id, job.task_name, job.queue_name, job.queueing_lock, job.attempts, job.worker_id,
       worker.id IS NULL AS worker_gone, job.abort_requested
  FROM procrastinate_jobs job
  LEFT JOIN procrastinate_workers worker ON worker.id = job.worker_id
 WHERE job.id = %s
   AND job.status = 'doing'
   AND (worker.id IS NULL
        OR GREATEST(worker.last_heartbeat, pg_postmaster_start_time())
           < NOW() - make_interval(secs => %s))
   FOR UPDATE OF job SKIP LOCKED
"""

_QUEUED_HOLDER_SQL = """
SELECT id FROM procrastinate_jobs WHERE queueing_lock = %s AND status = 'todo' AND id <> %s
"""


@dataclass(frozen=True)
class StalledJob:
    """A `doing` job found stalled, as the hooks hear of it."""

    job_id: int
    task_name: str
    worker_gone: bool  # its worker row is gone (the process ended), not only silent
    why: str  # "its worker is gone", "worker N silent over S s"


# Filled by the apps' AppConfig.ready (see the module docstring).
STALLED_HOOKS: list[Callable[[StalledJob], None]] = []


def _hooks_tell(job: StalledJob) -> None:
    for hook in STALLED_HOOKS:
        try:
            with transaction.atomic():
                hook(job)
        except Exception:
            logger.exception("A stalled-job hook failed for job %s; recovery goes on.", job.job_id)


# After each periodic recovery run, each of these hears its outcome (drafting queues again the
# stages whose job failed without recording why, with the cause the outcome knows). Filled by
# the apps' AppConfig.ready; a hook's error fails the job, which runs again at the next tick.
AFTER_RECOVERY_HOOKS: list[Callable[["RecoveryOutcome"], object]] = []


@dataclass
class RecoveryOutcome:
    """What one recovery run did, by job id."""

    retried: list[int] = field(default_factory=list)
    superseded: list[int] = field(default_factory=list)  # ended: a newer queued job holds its lock
    aborted: list[int] = field(default_factory=list)  # an abort was asked for before it died
    failed: list[int] = field(default_factory=list)  # its worker died too often
    # Why each failed job failed, in words a job's owner may show (drafting's stranded stages).
    causes: dict[int, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.retried) + len(self.superseded) + len(self.aborted) + len(self.failed)


def jobs_recover_stalled(*, stalled_seconds: int | None = None) -> RecoveryOutcome:
    """Queue again every job whose worker is gone or silent past `stalled_seconds`
    (default: settings.LEXWEB_JOB_STALLED_SECONDS). Logs one line per job it touched."""
    seconds = settings.LEXWEB_JOB_STALLED_SECONDS if stalled_seconds is None else stalled_seconds
    outcome = RecoveryOutcome()
    with connection.cursor() as cursor:
        cursor.execute(_STALLED_IDS_SQL, [seconds])
        job_ids = [row[0] for row in cursor.fetchall()]
    for job_id in job_ids:
        _recover_one(job_id=job_id, seconds=seconds, outcome=outcome)
    return outcome


def _recover_one(*, job_id: int, seconds: int, outcome: RecoveryOutcome) -> None:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(_LOCK_STALLED_SQL, [job_id, seconds])
        row = cursor.fetchone()
        if row is None:  # finished meanwhile, or another recovery has it
            return
        _, task_name, queue, queueing_lock, attempts, worker_id, worker_gone, abort_requested = row
        why = "its worker is gone" if worker_gone else f"worker {worker_id} silent over {seconds} s"
        name = f"job {job_id} {task_name} on {queue}"
        _hooks_tell(StalledJob(job_id, task_name, bool(worker_gone), why))
        holder = None
        if queueing_lock:
            cursor.execute(_QUEUED_HOLDER_SQL, [queueing_lock, job_id])
            found = cursor.fetchone()
            holder = found[0] if found else None
        if abort_requested:
            cursor.execute("SELECT procrastinate_finish_job_v1(%s, 'aborted', false)", [job_id])
            outcome.aborted.append(job_id)
            logger.warning(
                "Stalled %s (%s) ended as aborted: an abort had been requested.", name, why
            )
        elif holder is not None:
            cursor.execute("SELECT procrastinate_finish_job_v1(%s, 'aborted', false)", [job_id])
            outcome.superseded.append(job_id)
            logger.warning(
                "Stalled %s (%s) ended as aborted: job %s, queued later with the same "
                "queueing lock %r, runs instead.",
                name,
                why,
                holder,
                queueing_lock,
            )
        elif attempts + 1 >= settings.LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS:
            cursor.execute("SELECT procrastinate_finish_job_v1(%s, 'failed', false)", [job_id])
            outcome.failed.append(job_id)
            outcome.causes[job_id] = (
                f"its worker stopped while running it on each of {attempts + 1} attempts (the "
                "process was killed, crashed or stopped answering)"
            )
            logger.error(
                "Stalled %s (%s) failed for good: attempt %s of %s ended with its worker dying. "
                "Retry it from the admin (Procrastinate jobs) once the cause is fixed.",
                name,
                why,
                attempts + 1,
                settings.LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS,
            )
        else:
            # procrastinate_retry_job_v2: back to `todo` now, attempts + 1; its lock goes with
            # the `doing` status.
            cursor.execute(
                "SELECT procrastinate_retry_job_v2(%s, NOW(), NULL, NULL, NULL)", [job_id]
            )
            outcome.retried.append(job_id)
            logger.warning(
                "Stalled %s (%s) queued again from the start (attempt %s of %s).",
                name,
                why,
                attempts + 2,
                settings.LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS,
            )
