"""What the job system's stored codes say in words, for the admin's job list and job queues page.

Procrastinate stores a job's task by its name ("documents.extract_text"), its status and its
events by code ("todo", "deferred_for_retry") and its arguments as JSON
(`{"document_id": 12}`); its own admin shows them so. The admin's job pages say instead
"Read a document's text", "Queued", "Queued again to retry" and "Document: 12", and still show
the task's name on a job's page (it is what the logs and `procrastinate` commands use).
A task without words here is shown by its name; `tests/operations/test_job_words.py` fails on
a task the product registers without words.
"""

import datetime
from collections.abc import Mapping

# Every task name the product registers (apps/*/tasks.py, lexweb_dev/tasks.py) and
# Procrastinate's own, as a person reads it.
TASK_WORDS = {
    "cases.worker_check": "Check that a worker answers, for a case",
    "cluster.health_check": "Check the backends' health",
    "documents.extract_text": "Read a document's text",
    "documents.render": "Render a document as PDF",
    "documents.stamp_production": "Bates-stamp a production",
    "documents.export_production": "Build a production's volume",
    "drafting.run_stage": "Run a stage of a drafting run",
    "operations.recover_stalled": "Queue again the jobs of workers that died",
    "operations.sweep": "Sweep orphaned files",
    "verification.verify": "Verify a draft version's claims",
    "verification.fail_stale": "Fail the verifications whose job is gone",
    "verification.index_prepare": "Index a frozen packet for verification",
    "lexweb_dev.demo_seed_continue": "Finish seeding the demo case",
    "procrastinate.builtin_tasks.remove_old_jobs": "Remove old finished jobs",
}

# A job's status (ProcrastinateJob.STATUSES).
STATUS_WORDS = {
    "todo": "Queued",
    "doing": "Running",
    "succeeded": "Succeeded",
    "failed": "Failed for good",
    "cancelled": "Cancelled",
    "aborting": "Being aborted",
    "aborted": "Aborted",
}

# What happened to a job (ProcrastinateEvent.TYPES).
EVENT_WORDS = {
    "deferred": "Queued",
    "started": "Started",
    "deferred_for_retry": "Queued again to retry",
    "failed": "Failed",
    "succeeded": "Succeeded",
    "cancelled": "Cancelled",
    "abort_requested": "Asked to abort",
    "aborted": "Aborted",
    "scheduled": "Scheduled",
}

# Argument names said otherwise than by their name (an id's name without "_id").
ARGUMENT_WORDS = {
    "requested_by": "Asked by user",
    "queued_at": "Asked at",
    "timestamp": "Scheduled for",
}


def task_words(task_name: str) -> str:
    """A task in words; its name when it has none."""
    return TASK_WORDS.get(task_name, task_name)


def status_words(status: str) -> str:
    return STATUS_WORDS.get(status, status)


def event_words(event_type: str) -> str:
    return EVENT_WORDS.get(event_type, event_type)


def argument_name(name: str) -> str:
    """ "document_id" is "Document", "requested_by" "Asked by user"."""
    if name in ARGUMENT_WORDS:
        return ARGUMENT_WORDS[name]
    return name.removesuffix("_id").replace("_", " ").capitalize()


def argument_value(name: str, value: object) -> str:
    """One argument's value: a periodic job's `timestamp` (seconds since 1970) as a UTC time."""
    if name == "timestamp" and isinstance(value, int) and not isinstance(value, bool):
        moment = datetime.datetime.fromtimestamp(value, tz=datetime.UTC)
        return f"{moment:%Y-%m-%d %H:%M:%S} UTC"
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def arguments(args: Mapping[str, object]) -> list[tuple[str, str]]:
    """A job's arguments as (name, value) in words, in their stored order."""
    return [(argument_name(key), argument_value(key, value)) for key, value in args.items()]
