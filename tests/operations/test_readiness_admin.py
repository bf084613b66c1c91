"""The admin's Job queues page and retrying a job that failed for good: admins only, audited."""

import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from procrastinate.contrib.django import app
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.operations import selectors
from apps.operations.services import jobs as job_services
from apps.operations.services import recovery
from lexweb.errors import Conflict, PermissionDenied
from lexweb.words import duration
from tests.operations.test_readiness import _empty_job_tables, _fetch, _register_worker, _unregister

pytestmark = pytest.mark.django_db(databases="__all__")

QUEUES_URL = "/admin/procrastinate/procrastinatejob/queues/"
JOBS_URL = "/admin/procrastinate/procrastinatejob/"


@pytest.fixture(autouse=True)
def clean_jobs(transactional_db: None) -> Iterator[None]:
    _empty_job_tables()
    yield
    _empty_job_tables()


def _failed_for_good(settings: Any, case: Case, lawyer: User) -> int:
    """A real job whose worker died on it as often as recovery allows: failed for good."""
    job_id = app.configure_task(name="cases.worker_check").defer(
        case_id=case.pk, requested_by=lawyer.pk, queued_at="2026-12-01T12:00:00+00:00"
    )
    dead = _register_worker()
    assert _fetch("cpu", dead) == job_id
    _unregister(dead)
    settings.LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS = 1
    assert recovery.jobs_recover_stalled().failed == [job_id]
    assert ProcrastinateJob.objects.get(pk=job_id).status == "failed"
    return int(job_id)


def _stuck_job() -> int:
    job_id = app.configure_task(name="cases.worker_check").defer(
        case_id=1, requested_by=1, queued_at="x"
    )
    dead = _register_worker()
    _fetch("cpu", dead)
    _unregister(dead)
    return int(job_id)


def test_admin_sees_job_queues_with_counts_stuck_jobs_and_periodic_jobs(
    admin_client_: Client,
) -> None:
    stuck = _stuck_job()
    app.configure_task(name="cases.worker_check").defer(case_id=1, requested_by=1, queued_at="x")

    response = admin_client_.get(QUEUES_URL)

    assert response.status_code == 200
    page = response.content.decode()
    cpu = next(q for q in response.context["queues"] if q["name"] == "cpu")
    assert dict(cpu["rows"])["todo"] == 1 and dict(cpu["rows"])["doing"] == 1
    assert cpu["oldest_queued_seconds"] is not None
    assert [j.id for j in response.context["stuck"]] == [stuck]
    assert f"/admin/procrastinate/procrastinatejob/{stuck}/change/" in page
    assert "operations.sweep (sweep)" in page and "cluster.health_check (health)" in page
    assert "not yet" in page  # periodic jobs that never ran


def test_the_job_queues_page_says_statuses_and_times_in_words(admin_client_: Client) -> None:
    app.configure_task(name="cases.worker_check").defer(case_id=1, requested_by=1, queued_at="x")

    page = admin_client_.get(QUEUES_URL).content.decode()

    headings = re.findall(r'<th scope="col">([^<]+)</th>', page.split('id="job-queues"')[1])
    assert headings[:4] == ["Queue", "Queued", "Running", "Succeeded"], headings
    assert "Failed for good" in headings and "todo" not in headings and "doing" not in headings
    # The periodic jobs' schedules and the stalled time in words, not counts of seconds.
    periodic = selectors.periodic_state()
    assert any(job.interval_seconds >= 60 for job in periodic)  # else words and seconds agree
    for job in periodic:
        assert f"(every {duration(job.interval_seconds)})" in page, job
    assert f"silent for {duration(settings.LEXWEB_JOB_STALLED_SECONDS)})" in page


def test_the_job_list_links_to_the_job_queues_page(admin_client_: Client) -> None:
    response = admin_client_.get(JOBS_URL)

    assert response.status_code == 200
    assert QUEUES_URL in response.content.decode()


@pytest.mark.parametrize("who", ["lawyer", "staff"])
def test_lawyers_and_staff_do_not_reach_the_job_queues_page(
    who: str, lawyer_client: Client, staff_client: Client
) -> None:
    client = {"lawyer": lawyer_client, "staff": staff_client}[who]

    for url in (QUEUES_URL, JOBS_URL):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")


def test_admin_retries_a_job_that_failed_for_good_and_it_runs_again(
    settings: Any,
    admin_client_: Client,
    admin_user: User,
    case: Case,
    lawyer: User,
    run_jobs: Callable[[], None],
) -> None:
    job_id = _failed_for_good(settings, case, lawyer)

    response = admin_client_.post(
        JOBS_URL, {"action": "retry_failed", "_selected_action": [job_id]}, follow=True
    )

    assert response.status_code == 200
    assert "1 job(s) queued again." in response.content.decode()
    assert ProcrastinateJob.objects.get(pk=job_id).status == "todo"
    event = AuditEvent.objects.get(action="job.retry")
    assert event.actor == admin_user
    assert event.target_id == str(job_id)
    assert event.detail == {
        "job_id": job_id,
        "task": "cases.worker_check",
        "queue": "cpu",
        "attempts": 1,
    }

    run_jobs()

    assert ProcrastinateJob.objects.get(pk=job_id).status == "succeeded"


@pytest.mark.parametrize("who", ["lawyer", "staff"])
def test_lawyers_and_staff_cannot_retry_a_failed_job(
    who: str,
    settings: Any,
    lawyer_client: Client,
    staff_client: Client,
    case: Case,
    lawyer: User,
    staff: User,
) -> None:
    job_id = _failed_for_good(settings, case, lawyer)
    client = {"lawyer": lawyer_client, "staff": staff_client}[who]

    response = client.post(JOBS_URL, {"action": "retry_failed", "_selected_action": [job_id]})

    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert ProcrastinateJob.objects.get(pk=job_id).status == "failed"
    with pytest.raises(PermissionDenied):
        job_services.job_retry_failed(job_id=job_id, actor={"lawyer": lawyer, "staff": staff}[who])
    assert not AuditEvent.objects.filter(action="job.retry").exists()


def test_only_failed_jobs_are_retried_and_the_admin_is_told_why_not(
    admin_client_: Client, admin_user: User
) -> None:
    # A running job (its worker may be alive) must never be queued a second time from here.
    worker = _register_worker()
    job_id = app.configure_task(name="cases.worker_check").defer(
        case_id=1, requested_by=1, queued_at="x"
    )
    _fetch("cpu", worker)

    response = admin_client_.post(
        JOBS_URL, {"action": "retry_failed", "_selected_action": [job_id]}, follow=True
    )

    assert "is doing; only a job that failed for good can be retried" in response.content.decode()
    assert ProcrastinateJob.objects.get(pk=job_id).status == "doing"
    with pytest.raises(Conflict):
        job_services.job_retry_failed(job_id=job_id, actor=admin_user)


def test_a_failed_periodic_job_whose_successor_already_waits_is_not_retried(
    admin_user: User,
) -> None:
    first = app.configure_task(name="operations.sweep").defer(timestamp=1)
    with connection.cursor() as cursor:
        cursor.execute("UPDATE procrastinate_jobs SET status = 'failed' WHERE id = %s", [first])
    app.configure_task(name="operations.sweep").defer(timestamp=2)

    with pytest.raises(Conflict, match="already waiting to run"):
        job_services.job_retry_failed(job_id=first, actor=admin_user)
    assert ProcrastinateJob.objects.get(pk=first).status == "failed"
