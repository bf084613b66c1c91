"""Stalled jobs come back: recovery on the real Procrastinate schema, jobs run by a real worker.

A job is made stalled the way a dead worker leaves it: a worker row registered and a job
fetched by Procrastinate's own functions, then the worker row deleted (what pruning does) or
its heartbeat left behind. The real kills are in test_recovery_kills.py.
"""

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from procrastinate.contrib.django import app
from procrastinate.contrib.django import procrastinate_app as procrastinate_django

from apps.accounts.models import User
from apps.cases import services as case_services
from apps.cases.models import Case
from apps.documents.models import Document
from apps.operations import tasks as operations_tasks
from apps.operations.services import recovery
from tests.documents.conftest import blob_root  # noqa: F401 (a fixture)
from tests.documents.files import text_pdf
from tests.operations.processes import clean_jobs, job_row  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.django_db(databases="__all__"),
    pytest.mark.usefixtures("clean_jobs"),
]


def _sql(query: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return cursor.fetchone()[0] if cursor.description else None


def _register_worker() -> int:
    worker_id: int = _sql("SELECT worker_id FROM procrastinate_register_worker_v1()")
    return worker_id


def _take(job_id: int, worker_id: int, queue: str = "cpu") -> None:
    """Procrastinate's own fetch: the job goes to `doing` for that worker."""
    fetched = _sql(
        "SELECT id FROM procrastinate_fetch_job_v2(%s::varchar[], %s)", [[queue], worker_id]
    )
    assert fetched == job_id, f"fetched {fetched}, expected {job_id}"


def _stall_with_worker_gone(job_id: int, queue: str = "cpu") -> None:
    worker_id = _register_worker()
    _take(job_id, worker_id, queue)
    _sql("SELECT procrastinate_unregister_worker_v1(%s)", [worker_id])


def _stall_with_silent_worker(job_id: int, silent_seconds: float) -> int:
    worker_id = _register_worker()
    _take(job_id, worker_id)
    _sql(
        "UPDATE procrastinate_workers SET last_heartbeat = NOW() - make_interval(secs => %s) "
        "WHERE id = %s",
        [silent_seconds, worker_id],
    )
    return worker_id


def _check_job(case: Case, lawyer: User) -> int:
    return case_services.case_worker_check_request(actor=lawyer, case=case)


def test_a_job_whose_worker_row_is_gone_is_queued_again_and_then_runs(
    lawyer: User, case: Case, run_jobs: Callable[[], None], caplog: pytest.LogCaptureFixture
) -> None:
    job_id = _check_job(case, lawyer)
    _stall_with_worker_gone(job_id)
    assert job_row(job_id)["status"] == "doing"

    outcome = recovery.jobs_recover_stalled()

    assert outcome.retried == [job_id]
    assert job_row(job_id)["status"] == "todo"
    assert job_row(job_id)["attempts"] == 1
    lines = [r.getMessage() for r in caplog.records if r.name == recovery.__name__]
    assert lines == [
        f"Stalled job {job_id} cases.worker_check on cpu (its worker is gone) queued again "
        "from the start (attempt 2 of 5)."
    ]
    run_jobs()
    assert job_row(job_id)["status"] == "succeeded"


@pytest.mark.parametrize(
    ("silent", "recovered"), [(50, False), (58, False), (62, True), (600, True)]
)
def test_a_worker_silent_past_the_timeout_has_its_job_recovered_and_not_before(
    lawyer: User, case: Case, settings: Any, silent: int, recovered: bool
) -> None:
    settings.LEXWEB_JOB_STALLED_SECONDS = 60
    job_id = _check_job(case, lawyer)
    _stall_with_silent_worker(job_id, silent)

    outcome = recovery.jobs_recover_stalled()

    assert outcome.retried == ([job_id] if recovered else [])
    assert job_row(job_id)["status"] == ("todo" if recovered else "doing")


def test_a_live_worker_keeps_its_job(lawyer: User, case: Case) -> None:
    job_id = _check_job(case, lawyer)
    _take(job_id, _register_worker())  # heartbeat just now

    assert recovery.jobs_recover_stalled().total == 0
    assert job_row(job_id)["status"] == "doing"


def test_the_lock_of_a_dead_job_no_longer_blocks_later_jobs(
    lawyer: User, case: Case, run_jobs: Callable[[], None]
) -> None:
    task = app.configure_task(name="cases.worker_check", lock="case-lock")
    queued_at = "2026-01-01T00:00:00Z"
    dead = task.defer(case_id=case.pk, requested_by=lawyer.pk, queued_at=queued_at)
    _stall_with_worker_gone(dead)
    later = task.defer(case_id=case.pk, requested_by=lawyer.pk, queued_at=queued_at)
    run_jobs()
    assert job_row(later)["status"] == "todo", "the dead job's lock should block it until recovery"

    recovery.jobs_recover_stalled()
    run_jobs()

    assert (job_row(dead)["status"], job_row(later)["status"]) == ("succeeded", "succeeded")


def test_a_dead_health_check_holding_its_lock_and_queueing_lock_does_not_stop_later_ones(
    run_jobs: Callable[[], None], caplog: pytest.LogCaptureFixture
) -> None:
    health = app.configure_task(name="cluster.health_check")
    dead = health.defer(timestamp=1)
    _stall_with_worker_gone(dead, queue="cluster")
    # The queueing lock only guards `todo` jobs: the next scheduled check is queued meanwhile.
    newer = health.defer(timestamp=2)

    outcome = recovery.jobs_recover_stalled()

    assert (outcome.retried, outcome.superseded) == ([], [dead])
    assert job_row(dead)["status"] == "aborted"
    assert f"job {newer}, queued later with the same queueing lock" in caplog.text
    run_jobs()
    assert job_row(newer)["status"] == "succeeded"
    # And the schedule goes on.
    after = health.defer(timestamp=3)
    run_jobs()
    assert job_row(after)["status"] == "succeeded"


def test_a_dead_health_check_with_no_newer_one_is_itself_queued_again(
    run_jobs: Callable[[], None],
) -> None:
    dead = app.configure_task(name="cluster.health_check").defer(timestamp=1)
    _stall_with_worker_gone(dead, queue="cluster")

    assert recovery.jobs_recover_stalled().retried == [dead]
    run_jobs()
    assert job_row(dead)["status"] == "succeeded"


@pytest.mark.parametrize(("attempts_before", "status"), [(3, "todo"), (4, "failed"), (5, "failed")])
def test_a_job_whose_worker_keeps_dying_fails_for_good_at_the_limit(
    lawyer: User, case: Case, settings: Any, attempts_before: int, status: str
) -> None:
    settings.LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS = 5
    job_id = _check_job(case, lawyer)
    _sql("UPDATE procrastinate_jobs SET attempts = %s WHERE id = %s", [attempts_before, job_id])
    _stall_with_worker_gone(job_id)

    outcome = recovery.jobs_recover_stalled()

    assert job_row(job_id)["status"] == status
    assert (outcome.failed == [job_id]) is (status == "failed")


def test_a_dead_job_whose_abort_was_requested_ends_as_aborted_not_retried(
    lawyer: User, case: Case
) -> None:
    job_id = _check_job(case, lawyer)
    _stall_with_worker_gone(job_id)
    _sql("SELECT procrastinate_cancel_job_v1(%s, true, false)", [job_id])  # the admin's abort

    outcome = recovery.jobs_recover_stalled()

    assert outcome.aborted == [job_id]
    assert job_row(job_id)["status"] == "aborted"


def test_a_recovered_ingest_whose_document_was_removed_meanwhile_ends_as_a_no_op(
    lawyer_api: Any,
    case: Case,
    run_jobs: Callable[[], None],
    blob_root: Any,  # noqa: F811
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test.client import MULTIPART_CONTENT

    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {"files": [SimpleUploadedFile("a.pdf", text_pdf(["Gone meanwhile."]))], "origin": "client"},
        content_type=MULTIPART_CONTENT,
    )
    assert response.status_code == 201, response.content
    document = Document.objects.get(case=case)
    job_id = _sql(
        "SELECT id FROM procrastinate_jobs WHERE task_name = 'documents.extract_text' "
        "AND (args->>'document_id')::bigint = %s",
        [document.pk],
    )
    _stall_with_worker_gone(job_id)
    document.delete()

    assert recovery.jobs_recover_stalled().retried == [job_id]
    run_jobs()

    row = job_row(job_id)
    assert (row["status"], row["attempts"]) == ("succeeded", 2)
    assert not Document.objects.filter(case=case).exists()


def test_a_recovered_stamping_whose_production_was_removed_meanwhile_ends_as_a_no_op(
    run_jobs: Callable[[], None],
) -> None:
    job_id = app.configure_task(name="documents.stamp_production").defer(production_id=2**40)
    _stall_with_worker_gone(job_id)

    assert recovery.jobs_recover_stalled().retried == [job_id]
    run_jobs()

    assert job_row(job_id)["status"] == "succeeded"


def test_two_recoveries_at_once_touch_each_job_once(lawyer: User, case: Case) -> None:
    job_id = _check_job(case, lawyer)
    _stall_with_worker_gone(job_id)

    first = recovery.jobs_recover_stalled()
    second = recovery.jobs_recover_stalled()

    assert (first.retried, second.total) == ([job_id], 0)
    assert job_row(job_id)["attempts"] == 1


def test_recovery_is_a_periodic_job_on_the_cluster_queue_and_runs_as_one(
    lawyer: User, case: Case, run_jobs: Callable[[], None]
) -> None:
    real_app = procrastinate_django.current_app
    periodic = [
        p
        for p in real_app.periodic_registry.periodic_tasks.values()
        if p.task.name == "operations.recover_stalled"
    ]
    assert [(p.cron, p.periodic_id) for p in periodic] == [("* * * * *", "recover_stalled")]
    assert operations_tasks.jobs_recover_stalled_task.queue == "cluster"

    stalled = _check_job(case, lawyer)
    _stall_with_worker_gone(stalled)
    recover = app.configure_task(name="operations.recover_stalled").defer(timestamp=0)
    run_jobs()

    assert job_row(recover)["status"] == "succeeded"
    assert job_row(stalled)["status"] == "succeeded"
