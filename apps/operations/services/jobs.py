"""What an admin does with a job: retry one that failed for good.

A job fails for good when a task raised more often than its retry policy allows, or when its
worker died LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS times (recovery). Once the cause is fixed, an admin
queues it again from the admin (*Procrastinate jobs*, action "Retry jobs that failed for
good"); it runs from the start, one attempt more, and the retry is audited.
"""

from django.db import connection, transaction
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts import services as account_services
from apps.accounts.models import User
from lexweb.errors import Conflict, NotFound, PermissionDenied


def job_retry_failed(*, job_id: int, actor: User) -> None:
    """Queue a failed job again, now. Only admins; audited as `job.retry`."""
    if not (actor.is_active and actor.role == User.Role.ADMIN):
        raise PermissionDenied("Only an admin can retry a job.")
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT status, task_name, queue_name, attempts, queueing_lock "
            "FROM procrastinate_jobs WHERE id = %s FOR UPDATE",
            [job_id],
        )
        row = cursor.fetchone()
        if row is None:
            raise NotFound(f"Job {job_id} no longer exists.")
        status, task_name, queue, attempts, queueing_lock = row
        if status != "failed":
            raise Conflict(
                f"Job {job_id} ({task_name}) is {status}; only a job that failed for good can "
                "be retried."
            )
        if queueing_lock:
            cursor.execute(
                "SELECT id FROM procrastinate_jobs WHERE queueing_lock = %s AND status = 'todo'",
                [queueing_lock],
            )
            waiting = cursor.fetchone()
            if waiting is not None:
                raise Conflict(
                    f"Job {job_id} ({task_name}) need not be retried: job {waiting[0]} of the "
                    "same kind is already waiting to run."
                )
        cursor.execute("SELECT procrastinate_retry_job_v2(%s, NOW(), NULL, NULL, NULL)", [job_id])
        account_services.audit_record(
            actor=actor,
            action="job.retry",
            target=ProcrastinateJob.objects.get(pk=job_id),
            detail={"job_id": job_id, "task": task_name, "queue": queue, "attempts": attempts},
        )
