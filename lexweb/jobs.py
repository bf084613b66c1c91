"""Shared rules for Procrastinate task arguments (ids and JSON primitives, never models)."""

from typing import TYPE_CHECKING

import psycopg
from django.db import InterfaceError, OperationalError, transaction

from lexweb.errors import DomainError

if TYPE_CHECKING:
    from procrastinate.types import JSONValue


def require_arg(value: object, kind: type, name: str) -> None:
    """Job arguments are JSON from the database: a hand-queued or stale job may carry anything.
    A wrong type fails that job with a clear message; the worker carries on."""
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DomainError(f"Task argument {name} must be {kind.__name__}, not {value!r:.40}.")


def database_lost(exc: BaseException) -> bool:
    """True when `exc` says the database connection went away (server killed, network cut).

    A job that meets it must not try to write a "failed" state (that write fails too, or, if
    the database is back, marks for good what a retry will finish): it re-raises, and the
    task's retry policy or stalled-job recovery runs it again from the start. Django's
    errors and psycopg's own count alike: a connection taken outside the ORM (admission's
    advisory locks, the channel layer) raises psycopg's ("too many clients", a reset).
    """
    return isinstance(
        exc,
        OperationalError | InterfaceError | psycopg.OperationalError | psycopg.InterfaceError,
    )


def job_defer(
    task_name: str,
    *,
    queue: str | None = None,
    lock: str | None = None,
    queueing_lock: str | None = None,
    priority: int | None = None,
    schedule_in: dict[str, int] | None = None,
    **task_kwargs: "JSONValue",
) -> int:
    """Queue the task named `task_name` (by name: services never import tasks) with
    `task_kwargs`, and return the job's id.

    The job row is inserted through Django's connection, so it commits with the caller's rows,
    or not at all if they roll back, in a web process and in a worker alike. A worker's app
    has its own connection pool (apps.operations.worker), whose inserts commit at once: a job
    queued that way by a service running inside a job could start before the rows it is about
    (a production, a child document) were committed, and find nothing to do.
    """
    from procrastinate import jobs, manager
    from procrastinate.contrib.django import app
    from procrastinate.contrib.django.django_connector import DjangoConnector

    options: dict[str, object] = {
        key: value
        for key, value in (
            ("queue", queue),
            ("lock", lock),
            ("queueing_lock", queueing_lock),
            ("priority", priority),
            ("schedule_in", schedule_in),
        )
        if value is not None
    }
    configured = app.configure_task(name=task_name, allow_unknown=False, **options)
    deferrer = jobs.JobDeferrer(
        job_manager=manager.JobManager(DjangoConnector()), job=configured.job
    )
    job_id = deferrer.defer(**task_kwargs)
    _queues_changed_on_commit()
    return job_id


def _queues_changed_on_commit() -> None:
    """Tell open job-queue pages that a job was queued, once the caller's transaction commits
    (apps.operations.jobs_pulse: workers say when they take or finish jobs; a job queued while
    no worker takes any would otherwise change no page). Once per transaction, however many
    jobs it queues: a rolled-back one sends nothing."""
    connection = transaction.get_connection()
    if connection.in_atomic_block and any(
        func is _queues_changed for _sids, func, _robust in connection.run_on_commit
    ):
        return
    transaction.on_commit(_queues_changed, robust=True)


def _queues_changed() -> None:
    from apps.operations.jobs_pulse import jobs_changed_send

    jobs_changed_send()
