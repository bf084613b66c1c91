"""`manage.py worker`: a Procrastinate worker that outlives its database and stops cleanly.

- At each start, and again each time the database comes back, `worker_startup()` runs first
  (recovery of stalled jobs; add other start-up housekeeping there).
- On the first SIGTERM or SIGINT it takes no new job and gives the running ones
  `LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS` to finish. Further signals meanwhile only print that it is
  still waiting: no second signal kills a job mid-write. What still runs when the grace period
  ends (a sync task in a thread cannot be cancelled) is left behind: the worker deletes its own
  worker row, so those jobs are `doing` with no worker, and exits; recovery queues them again at
  the next start of any worker.
- If the database goes away it says so in one line, waits with backoff until it answers, then
  deletes its old worker row (its jobs become recoverable), runs `worker_startup()` again and
  carries on. It never exits 0 by itself.

Lines for the person running it go to stdout, one each, prefixed `worker[<queues>]:`.
"""

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import psycopg
import psycopg_pool
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import DatabaseError, InterfaceError, close_old_connections, connection
from procrastinate import exceptions as procrastinate_exceptions
from procrastinate import job_context, psycopg_connector, utils
from procrastinate import worker as procrastinate_worker
from procrastinate.contrib.django import app
from procrastinate.contrib.django import utils as django_utils

from apps.operations.jobs_pulse import JobsPulse
from apps.operations.services import recovery, sweeper, worker_pids

BACKOFF_FIRST_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0
# A worker that ran this long before losing the database starts its backoff from the first step.
STABLE_SECONDS = 60.0
POOL_TIMEOUT_SECONDS = 10.0
_DATABASE_ERRORS: tuple[type[BaseException], ...] = (
    psycopg.Error,
    psycopg_pool.PoolTimeout,
    DatabaseError,
    InterfaceError,
    procrastinate_exceptions.ConnectorException,
    ConnectionError,
)


def worker_startup() -> None:
    """Runs before the worker takes any job: at start and after the database came back."""
    recovery.jobs_recover_stalled()
    sweeper.files_sweep()


def heartbeat_seconds() -> float:
    """How often a worker beats: a sixth of the stalled timeout, at most every 10 s."""
    return max(1.0, min(10.0, settings.LEXWEB_JOB_STALLED_SECONDS / 6))


def _is_database_error(exc: BaseException) -> bool:
    return any(isinstance(cause, _DATABASE_ERRORS) for cause in utils.causes(exc))


def _database_answers() -> bool:
    close_old_connections()
    try:
        connection.close()
        with connection.cursor() as cursor:
            cursor.execute("SELECT to_regclass('procrastinate_jobs')")
            return cursor.fetchone() is not None
    except (DatabaseError, InterfaceError):
        return False
    finally:
        connection.close()


class _ShortDatabaseTracebacks(logging.Filter):
    """While the database is away Procrastinate and asyncio log a traceback for every failing
    side task, job acknowledgement and listener; our own line says what happened. Theirs keep
    their message, with the error's last line instead of the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        info = record.exc_info
        if (
            info
            and info[1] is not None
            and record.name.startswith(("procrastinate", "asyncio"))
            and _is_database_error(info[1])
        ):
            last = str(info[1]).strip().splitlines()[-1:] or [""]
            record.msg = f"{record.getMessage()} [{type(info[1]).__name__}: {last[0].strip()}]"
            record.args = None
            record.exc_info = None
            record.exc_text = None
        return True


def _worker_connector() -> psycopg_connector.PsycopgConnector:
    """Procrastinate's worker connector, with a shorter wait for a pooled connection (30 s by
    default): a worker that lost the database notices and says so sooner."""
    return psycopg_connector.PsycopgConnector(
        kwargs=django_utils.connector_params("default"), timeout=POOL_TIMEOUT_SECONDS
    )


class _Worker(procrastinate_worker.Worker):
    """Procrastinate's worker, telling us when it stops (it stops by itself when a side task,
    its listener or heartbeat, fails) and which id it registered as."""

    def __init__(self, *, on_stop: Callable[[], None], **options: Any) -> None:
        super().__init__(**options)
        self._on_stop = on_stop

    async def _run_loop(self) -> None:
        # Procrastinate (pinned) registers the worker just before its run loop starts.
        if self.worker_id is not None:
            await sync_to_async(worker_pids.worker_registered, thread_sensitive=True)(
                self.worker_id
            )
        await super()._run_loop()

    def stop(self) -> None:
        self._on_stop()
        super().stop()


class WorkerRunner:
    """One worker process: the loop of (wait for database, start-up, Procrastinate worker)."""

    def __init__(
        self,
        *,
        queues: list[str] | None,
        concurrency: int,
        grace_seconds: float,
        say: Callable[[str], None],
        name: str = "worker",
    ) -> None:
        self.queues = queues
        self.concurrency = concurrency
        self.grace_seconds = grace_seconds
        self.name = name
        self._say_line = say
        self._label = ",".join(queues) if queues else "all queues"
        self._stopping = False
        self._stop_deadline = 0.0
        self._wake = asyncio.Event()  # wakes the backoff sleep on a stop request
        self._worker: procrastinate_worker.Worker | None = None
        self._stale_worker_ids: list[int] = []
        self._running: dict[int, str] = {}  # job id -> "task[id]"
        self._pulse = JobsPulse()  # tells open job-queue pages that the queues changed
        self._grace_task: asyncio.Task[None] | None = None
        self._lost_said = False
        self._lost_at: float | None = None

    def say(self, line: str) -> None:
        self._say_line(f"worker[{self._label}]: {line}")

    # --- entry point -------------------------------------------------------------------------

    def run(self) -> int:
        short = _ShortDatabaseTracebacks()
        # The pool says "error connecting" several times a second while the database is away.
        logging.getLogger("psycopg.pool").setLevel(logging.ERROR)
        handlers = logging.getLogger().handlers
        for handler in handlers:
            handler.addFilter(short)
        worker_pids.worker_process_started()
        try:
            with app.replace_connector(_worker_connector()):
                code = asyncio.run(self._main())
            worker_pids.worker_process_stopped()
            return code
        finally:
            for handler in handlers:
                handler.removeFilter(short)

    def _say_lost(self, why: str) -> None:
        """One line per outage, however many ways Procrastinate notices it."""
        if not self._lost_said:
            self._lost_said = True
            self.say(f"lost the database ({why}); waiting for it to come back, then carrying on")

    async def _main(self) -> int:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._on_signal, signum)
        backoff = BACKOFF_FIRST_SECONDS
        lost_since: float | None = None
        while not self._stopping:
            if not await sync_to_async(_database_answers, thread_sensitive=True)():
                if lost_since is None:
                    lost_since = time.monotonic()
                if not self._lost_said:
                    self._lost_said = True
                    self.say(
                        "the database does not answer; waiting for it (retrying with backoff "
                        f"up to every {BACKOFF_MAX_SECONDS:.0f} s), jobs resume when it is back"
                    )
                await self._sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_MAX_SECONDS)
                continue
            if lost_since is not None:
                self.say(f"the database is back after {time.monotonic() - lost_since:.0f} s")
                lost_since = None
            self._lost_said = False
            started = time.monotonic()
            try:
                await self._run_once()
            except Exception as exc:
                if self._stopping:
                    break
                if not _is_database_error(exc):
                    self.say(f"stopped by an error: {type(exc).__name__}: {exc}")
                    raise
                self._say_lost(f"{type(exc).__name__}: {str(exc).strip()[:200]}")
            else:
                if self._stopping:
                    break
                # Procrastinate stops by itself when a side task (heartbeat, listener) fails:
                # that is the database going away, even if it is already back.
                self._say_lost("its connection failed")
            lost_since = self._lost_at or time.monotonic()
            self.say(
                "its jobs stopped (Procrastinate's worker ended); trying the database again "
                f"with backoff up to every {BACKOFF_MAX_SECONDS:.0f} s"
            )
            if time.monotonic() - started > STABLE_SECONDS:
                backoff = BACKOFF_FIRST_SECONDS
            await self._sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_MAX_SECONDS)
        if self._grace_task is not None:
            self._grace_task.cancel()
        self.say("stopped")
        return 0

    def _worker_stopping(self) -> None:
        """Procrastinate stops its worker: on our request, or because a side task (listener,
        heartbeat) lost the database. Say the second at once, not after its teardown."""
        if not self._stopping:
            self._lost_at = self._lost_at or time.monotonic()
            self._say_lost("a worker connection failed")

    async def _run_once(self) -> None:
        self._lost_at = None
        async with app.open_async():
            # Rows of our earlier workers that lost the database: no job of theirs still runs
            # (Procrastinate waited for them), so their `doing` jobs become recoverable now.
            while self._stale_worker_ids:
                await app.job_manager.unregister_worker(self._stale_worker_ids[0])
                self._stale_worker_ids.pop(0)
            await sync_to_async(worker_startup, thread_sensitive=True)()
            if self._stopping:
                return
            options: dict[str, Any] = {
                **app.worker_defaults,
                "queues": self.queues,
                "name": self.name,
                "concurrency": self.concurrency,
                "install_signal_handlers": False,
                "shutdown_graceful_timeout": None,  # ours: see _grace_period
                "update_heartbeat_interval": heartbeat_seconds(),
                "stalled_worker_timeout": settings.LEXWEB_JOB_STALLED_SECONDS,
                "worker_middleware": [self._track],
            }
            worker = _Worker(app=app, on_stop=self._worker_stopping, **options)
            self._worker = worker
            try:
                await worker.run()
            finally:
                self._worker = None
                if worker.worker_id is not None:  # not unregistered: the database went away
                    self._stale_worker_ids.append(worker.worker_id)

    async def _track(
        self,
        call_next: Callable[[], Awaitable[Any]],
        context: job_context.JobContext,
        worker: procrastinate_worker.Worker,
    ) -> Any:
        job_id = context.job.id or 0
        self._running[job_id] = f"{context.job.task_name}[{job_id}]"
        self._pulse.changed()
        try:
            return await call_next()
        finally:
            self._running.pop(job_id, None)
            self._pulse.changed()

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout=seconds)

    # --- stopping ----------------------------------------------------------------------------

    def _running_text(self) -> str:
        if not self._running:
            return "no running job"
        jobs = ", ".join(sorted(self._running.values()))
        return f"{len(self._running)} running job{'s' if len(self._running) > 1 else ''} ({jobs})"

    def _on_signal(self, signum: int) -> None:
        signame = signal.Signals(signum).name
        if self._stopping:
            left = max(0.0, self._stop_deadline - time.monotonic())
            self.say(
                f"{signame} again: still waiting up to {left:.0f} s for {self._running_text()}; "
                "running jobs are not interrupted"
            )
            return
        self._stopping = True
        self._stop_deadline = time.monotonic() + self.grace_seconds
        self.say(
            f"{signame}: taking no new jobs; waiting up to {self.grace_seconds:.0f} s for "
            f"{self._running_text()}"
        )
        self._wake.set()
        if self._worker is not None:
            self._worker.stop()
        self._grace_task = asyncio.get_running_loop().create_task(self._grace_period())

    async def _grace_period(self) -> None:
        await asyncio.sleep(self.grace_seconds)
        if not self._running:
            return
        self.say(
            f"{self._running_text()} still running after {self.grace_seconds:.0f} s; "
            "leaving them to be retried from the start at the next worker start"
        )
        worker = self._worker
        if worker is not None and worker.worker_id is not None:
            try:
                # Their worker row goes: recovery retries `doing` jobs without a worker at once.
                await app.job_manager.unregister_worker(worker.worker_id)
            except Exception as exc:  # the database is gone too: recovery will time them out
                self.say(f"could not unregister ({type(exc).__name__}); recovery times them out")
        sys.stdout.flush()
        sys.stderr.flush()
        # A thread cannot be stopped; the process ends with it. Exit status 0: stop was asked.
        os._exit(0)
