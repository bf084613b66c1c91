"""Which Procrastinate worker rows a worker process registered, so that its death is seen at
once on its own host.

A worker process writes its PID's file under var/run/workers/ each time its Procrastinate worker
registers (a process registers again after the database came back): one worker id per line.
The launcher (make run), which sees a child end the moment it ends, calls
`worker_process_gone(pid)`: the rows of that process's workers are deleted, so their `doing`
jobs are stalled at once (recovery's rule: a job whose worker row is gone), and recovery runs
now instead of at its next minute and past LEXWEB_JOB_STALLED_SECONDS of silence. `/readyz` and
the job queues page then count only live workers. On other hosts (a worker started by hand),
the heartbeat rule still applies.

A PID is reused by the system in time: a process truncates its file when it starts, and the
launcher removes it once handled, so a file never names another process's workers.
"""

import logging
import os
from pathlib import Path

from django.conf import settings
from django.db import connection

from apps.operations.services.recovery import RecoveryOutcome, jobs_recover_stalled

logger = logging.getLogger(__name__)


def _folder() -> Path:
    return Path(settings.VAR_DIR) / "run" / "workers"


def _file(pid: int) -> Path:
    return _folder() / str(pid)


def worker_process_started() -> None:
    """This process starts: no worker of an earlier process with its PID is its own."""
    path = _file(os.getpid())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("")


def worker_registered(worker_id: int) -> None:
    """This process's Procrastinate worker registered as `worker_id`."""
    path = _file(os.getpid())
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as record:
        record.write(f"{worker_id}\n")


def worker_process_stopped() -> None:
    """This process stops cleanly (its workers unregistered themselves)."""
    _file(os.getpid()).unlink(missing_ok=True)


def worker_ids_of(pid: int) -> list[int]:
    try:
        lines = _file(pid).read_text().split()
    except OSError:
        return []
    return [int(line) for line in lines if line.isdigit()]


def worker_process_gone(*, pid: int) -> RecoveryOutcome | None:
    """The worker process `pid` has ended (its parent saw it): its worker rows go, and its
    `doing` jobs are queued again now. None when it had registered no worker."""
    ids = worker_ids_of(pid)
    if not ids:
        _file(pid).unlink(missing_ok=True)
        return None
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM procrastinate_workers WHERE id = ANY(%s)", [ids])
    outcome = jobs_recover_stalled()
    _file(pid).unlink(missing_ok=True)
    logger.info(
        "worker process %s ended: worker(s) %s removed, %s job(s) queued again",
        pid,
        ids,
        len(outcome.retried),
    )
    return outcome
