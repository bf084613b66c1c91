"""The admin's view of the job system: a *Job queues* page and retrying jobs that failed for good.

Procrastinate's own job admin stays (list, filters, events), with one change: its "Retry Job"
action, which also re-queued `doing` jobs a live worker was running and wrote no audit entry,
is replaced by "Retry jobs that failed for good" (apps.operations.services.jobs, audited).
The *Job queues* page (a link above the job list, /admin/procrastinate/procrastinatejob/queues/)
shows per queue the jobs by status and the oldest waiting one's age, the stuck jobs, and each
periodic job's last run and lateness: what /readyz reports. Only admins reach the admin.
"""

from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from procrastinate.contrib.django.admin import ProcrastinateJobAdmin
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.operations import selectors
from apps.operations.services import jobs as job_services
from lexweb.errors import DomainError

admin.site.unregister(ProcrastinateJob)


# Procrastinate's job statuses as the job queues page says them (the admin's job list and its
# filter keep Procrastinate's own words).
JOB_STATUS_WORDS = {
    "todo": "Queued",
    "doing": "Running",
    "succeeded": "Succeeded",
    "failed": "Failed for good",
    "cancelled": "Cancelled",
    "aborting": "Being aborted",
    "aborted": "Aborted",
}


@admin.register(ProcrastinateJob)
class JobAdmin(ProcrastinateJobAdmin):
    change_list_template = "admin/operations/job_change_list.html"

    @admin.action(description="Retry jobs that failed for good")
    def retry_failed(self, request: HttpRequest, queryset: QuerySet[ProcrastinateJob]) -> None:
        user = request.user
        assert isinstance(user, User)  # noqa: S101  (the admin site only lets admins in)
        retried = 0
        for job_id in queryset.order_by("id").values_list("id", flat=True):
            try:
                job_services.job_retry_failed(job_id=job_id, actor=user)
            except DomainError as exc:
                self.message_user(request, exc.message, messages.WARNING)
            else:
                retried += 1
        if retried:
            self.message_user(request, f"{retried} job(s) queued again.", messages.SUCCESS)

    actions = ["retry_failed", "cancel", "abort"]

    def get_urls(self) -> list[URLPattern]:
        queues = path(
            "queues/",
            self.admin_site.admin_view(self.queues_view),
            name="operations_job_queues",
        )
        return [queues, *super().get_urls()]

    def queues_view(self, request: HttpRequest) -> HttpResponse:
        user = request.user
        if not (isinstance(user, User) and user.role == User.Role.ADMIN):
            raise PermissionDenied  # is_staff already means admin; said twice for this page
        statuses = list(ProcrastinateJob.STATUSES)
        labels = [(status, JOB_STATUS_WORDS.get(status, status)) for status in statuses]
        periodic = selectors.periodic_state()
        queues = [
            {
                "name": queue.name,
                "rows": [(status, queue.counts.get(status, 0)) for status in statuses],
                "oldest_queued_seconds": queue.oldest_queued_seconds,
            }
            for queue in selectors.queues_state(all_statuses=True)
        ]
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "title": "Job queues",
            "opts": self.model._meta,
            "queues": queues,
            "statuses": statuses,
            "status_labels": labels,
            "stuck": selectors.jobs_stuck(),
            "stalled_seconds": settings.LEXWEB_JOB_STALLED_SECONDS,
            "periodic": periodic,
            # Each periodic job with its last run's status in words ("" if it never ran).
            "periodic_rows": [
                (job, JOB_STATUS_WORDS.get(job.last_status or "", job.last_status or ""))
                for job in periodic
            ],
            "grace_seconds": settings.LEXWEB_PERIODIC_GRACE_SECONDS,
        }
        return TemplateResponse(request, "admin/operations/job_queues.html", context)
