"""Queued jobs run in the test's own thread, on its own database connection: inside the test's
transaction when it has one (rolled back after it, no table truncated), in autocommit when the
test commits.

It takes jobs as a worker does, through Procrastinate's own SQL (register a worker, fetch the
next job of the queues, finish it or retry it by the task's retry strategy, unregister), and
calls the task as the worker would, with the job's arguments. What it does not do: start a
worker process or thread, run periodic jobs, hold a job's `lock` against another worker, or
wait for a job scheduled later (a retry is left queued, as `run_worker(wait=False)` leaves it).
Tests about those keep a real worker (`tests/conftest.py`'s `run_jobs_worker`, or
`worker_process`).

Inside the test's transaction nothing commits, so what a job sends after commit (the case
stream's events, the job-queue pages' pulse) is not sent: a test about those commits
(`django_db(transaction=True)`) or captures them (`django_capture_on_commit_callbacks`).
"""

import inspect
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from asgiref.sync import async_to_sync
from django.db import connection
from procrastinate import jobs as procrastinate_jobs
from procrastinate.contrib.django import procrastinate_app as procrastinate_django

logger = logging.getLogger("tests.harness.jobs")

# A job that queues itself again and again would loop for ever: far more than any test queues.
JOBS_AT_MOST = 2_000

_FETCH = (
    "SELECT id, status, task_name, priority, lock, queueing_lock, args, scheduled_at,"
    " queue_name, attempts, worker_id"
    " FROM procrastinate_fetch_job_v2(%s::varchar[], %s)"
)


@dataclass(frozen=True)
class JobRan:
    job_id: int
    task_name: str
    status: str  # "succeeded", "failed" or "todo" (failed, queued again by its retry strategy)
    error: str


def jobs_run_here(queues: Iterable[str] | None = None) -> list[JobRan]:
    """Run every job of `queues` (all when None) that is due now, one at a time in order, until
    none is left; return what each did. A job's error is the job's outcome (as in a worker),
    never raised here: the test reads the rows it left, or this list."""
    names = list(queues) if queues is not None else None
    ran: list[JobRan] = []
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM procrastinate_register_worker_v1()")
        worker_id = cursor.fetchone()[0]
    try:
        while (job := _fetch(names, worker_id)) is not None:
            ran.append(_run(job))
            if len(ran) > JOBS_AT_MOST:
                raise AssertionError(
                    f"More than {JOBS_AT_MOST} jobs ran: a job keeps queueing itself "
                    f"(the last: {job.task_name} {job.task_kwargs})."
                )
    finally:
        with connection.cursor() as cursor:
            cursor.execute("SELECT procrastinate_unregister_worker_v1(%s)", [worker_id])
    return ran


def _fetch(queues: list[str] | None, worker_id: int) -> procrastinate_jobs.Job | None:
    with connection.cursor() as cursor:
        cursor.execute(_FETCH, [queues, worker_id])
        columns = [column.name for column in cursor.description]
        row = cursor.fetchone()
    if row is None or row[0] is None:
        return None
    fields = dict(zip(columns, row, strict=True))
    if isinstance(fields["args"], str):  # Django's connection hands jsonb over as its text
        fields["args"] = json.loads(fields["args"])
    return procrastinate_jobs.Job.from_row(fields)


def _run(job: procrastinate_jobs.Job) -> JobRan:
    assert job.id is not None
    task = procrastinate_django.current_app.tasks.get(job.task_name)
    try:
        if task is None:
            raise LookupError(f"Task {job.task_name!r} was not found (not registered).")
        if inspect.iscoroutinefunction(task.func):
            # On a loop of its own; its sync_to_async calls come back to this thread, so it
            # reads and writes on the test's connection too.
            async_to_sync(task.func)(**job.task_kwargs)
        else:
            task(**job.task_kwargs)
    except Exception as exc:  # a job's failure is its outcome, as in a worker
        retry = task.get_retry_exception(exception=exc, job=job) if task is not None else None
        logger.error("Job %s failed: %s", job.call_string, exc, exc_info=exc)
        if retry is not None:
            decision = retry.retry_decision
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT procrastinate_retry_job_v2(%s, %s, %s, %s, %s)",
                    [job.id, decision.retry_at, decision.priority, decision.queue, decision.lock],
                )
            return JobRan(job.id, job.task_name, "todo", str(exc))
        _finish(job.id, "failed")
        return JobRan(job.id, job.task_name, "failed", str(exc))
    _finish(job.id, "succeeded")
    return JobRan(job.id, job.task_name, "succeeded", "")


def _finish(job_id: int, status: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT procrastinate_finish_job_v1(%s, %s, %s)", [job_id, status, False])
