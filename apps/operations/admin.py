"""The admin's view of the job system: a *Job queues* page, retrying jobs that failed for good,
and the job list in words.

Procrastinate's own job admin stays (list, filters, a job's page), said in words
(apps.operations.job_words: the task, status, arguments and events, not their codes and JSON),
with one change of behaviour: its "Retry Job" action, which also re-queued `doing` jobs a live
worker was running and wrote no audit entry, is replaced by "Retry jobs that failed for good"
(apps.operations.services.jobs, audited).
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
from django.utils.html import format_html_join
from django.utils.safestring import SafeString
from django.utils.timesince import timesince
from django.utils.timezone import localtime
from procrastinate.contrib.django.admin import ProcrastinateJobAdmin
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.operations import job_words, selectors
from apps.operations.services import jobs as job_services
from lexweb.errors import DomainError

admin.site.unregister(ProcrastinateJob)


def job_title(job: ProcrastinateJob) -> str:
    return f"Job {job.pk}: {job_words.task_words(job.task_name)}"


class JobStatusFilter(admin.SimpleListFilter):
    """The statuses in words; the parameter stays Django's (`status__exact=failed`), which the
    job queues page links to."""

    title = "status"
    parameter_name = "status__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(status, job_words.status_words(status)) for status in ProcrastinateJob.STATUSES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[ProcrastinateJob]) -> Any:
        value = self.value()
        return queryset if value is None else queryset.filter(status=value)


class JobTaskFilter(admin.SimpleListFilter):
    """The tasks of the jobs there are, in words (Django's filter would list their names)."""

    title = "task"
    parameter_name = "task_name"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        names = ProcrastinateJob.objects.order_by().values_list("task_name", flat=True).distinct()
        return sorted(((name, job_words.task_words(name)) for name in names), key=lambda t: t[1])

    def queryset(self, request: HttpRequest, queryset: QuerySet[ProcrastinateJob]) -> Any:
        value = self.value()
        return queryset if value is None else queryset.filter(task_name=value)


def _lines(lines: list[tuple[str, str]]) -> SafeString | str:
    """One `<div>` per line (no style attribute: the admin's content security policy)."""
    if not lines:
        return "none"
    return format_html_join("", "<div>{}: {}</div>", lines)


@admin.register(ProcrastinateJob)
class JobAdmin(ProcrastinateJobAdmin):
    """Procrastinate's job admin, in words (apps.operations.job_words): the task, its status,
    its arguments and what happened to it, instead of the stored codes and JSON."""

    change_list_template = "admin/operations/job_change_list.html"
    change_form_template = "admin/operations/job_change_form.html"
    object_history_template = "admin/operations/job_history.html"
    list_display = ["pk", "task", "arguments", "job_status", "queue_name", "last_event"]
    list_filter = [JobStatusFilter, "queue_name", JobTaskFilter, "scheduled_at", "priority"]
    # Locks are found by search (a task's name, or a lock such as "verification:12"), not listed
    # as filters (one entry per lock). No search_help_text: Django then describes the search box
    # by it alone, which axe-core reports (label-title-only, serious).
    search_fields = ["task_name", "lock", "queueing_lock"]
    fields = [
        "pk",
        "task",
        "task_name",
        "arguments",
        "job_status",
        "queue_name",
        "lock",
        "queueing_lock",
        "priority",
        "scheduled_at",
        "attempts",
        "history",
    ]
    # What happened to the job is its "history" field, in words: Procrastinate's inline of
    # events named each "ProcrastinateEvent object (12)" with its type's code.
    inlines = []

    def get_readonly_fields(self, request: Any, obj: ProcrastinateJob | None = None) -> Any:
        return self.fields

    @admin.display(description="task", ordering="task_name")
    def task(self, job: ProcrastinateJob) -> str:
        return job_words.task_words(job.task_name)

    @admin.display(description="arguments")
    def arguments(self, job: ProcrastinateJob) -> SafeString | str:
        args = job.args if isinstance(job.args, dict) else {}
        return _lines(job_words.arguments(args))

    @admin.display(description="status", ordering="status")
    def job_status(self, job: ProcrastinateJob) -> str:
        return job_words.status_words(job.status)

    @admin.display(description="last event")
    def last_event(self, job: ProcrastinateJob) -> str:
        """What last happened and when ("Started 3 minutes ago"); the queue and the rest are
        in their own columns and filters."""
        event = job.procrastinateevent_set.first()  # newest first (get_queryset's prefetch)
        if event is None:
            return ""
        when = f" {timesince(event.at)} ago" if event.at else ""
        return f"{job_words.event_words(event.type)}{when}"

    @admin.display(description="history")
    def history(self, job: ProcrastinateJob) -> SafeString | str:
        events = job.procrastinateevent_set.all()
        lines = [
            (
                f"{localtime(e.at):%Y-%m-%d %H:%M:%S}" if e.at else "unknown time",
                job_words.event_words(e.type),
            )
            for e in sorted(events, key=lambda e: e.id)
        ]
        return _lines(lines)

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        """Titled by the job's number and task in words ("Job 12: Read a document's text"), not
        "ProcrastinateJob object (12)"."""
        job = self.get_object(request, object_id)
        if job is not None:
            extra_context = {**(extra_context or {}), "subtitle": job_title(job)}
        return super().change_view(request, object_id, form_url, extra_context)

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """Titled by the job in words too (its history is always empty: jobs are not changed
        in the admin)."""
        job = self.get_object(request, object_id)
        if job is not None:
            title = job_title(job)
            words = {"title": f"Change history: {title}", "job_title": title}
            extra_context = {**(extra_context or {}), **words}
        return super().history_view(request, object_id, extra_context)

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

    # Procrastinate's own cancel and abort, named in words ("Cancel Job (only 'todo' jobs)").
    @admin.action(description="Cancel queued jobs (those not started)")
    def cancel_queued(self, request: HttpRequest, queryset: QuerySet[ProcrastinateJob]) -> None:
        ProcrastinateJobAdmin.cancel(self, request, queryset)

    @admin.action(description="Abort queued and running jobs")
    def abort_jobs(self, request: HttpRequest, queryset: QuerySet[ProcrastinateJob]) -> None:
        ProcrastinateJobAdmin.abort(self, request, queryset)

    actions = ["retry_failed", "cancel_queued", "abort_jobs"]

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
        labels = [(status, job_words.status_words(status)) for status in statuses]
        periodic = selectors.periodic_state()
        stuck = selectors.jobs_stuck()
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
            "stuck": stuck,
            # Each stuck job with its task in words.
            "stuck_rows": [(job, job_words.task_words(job.task)) for job in stuck],
            "stalled_seconds": settings.LEXWEB_JOB_STALLED_SECONDS,
            "periodic": periodic,
            # Each periodic job with its task and its last run's status in words ("" if it
            # never ran).
            "periodic_rows": [
                (
                    job,
                    job_words.task_words(job.task),
                    job_words.status_words(job.last_status or ""),
                )
                for job in periodic
            ],
            "grace_seconds": settings.LEXWEB_PERIODIC_GRACE_SECONDS,
        }
        return TemplateResponse(request, "admin/operations/job_queues.html", context)
