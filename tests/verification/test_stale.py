"""A verification whose job is gone for good never stays queued or running: on real
Procrastinate job rows (taken by Procrastinate's own functions, as a dying worker leaves them),
recovery, the housekeeping job and a real worker."""

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.utils import timezone
from procrastinate.contrib.django import app
from procrastinate.contrib.django import procrastinate_app as procrastinate_django

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Draft
from apps.operations.services import recovery
from apps.verification import services
from apps.verification.models import Finding, Verification
from tests.drafting.makers import draft_of, packet_of
from tests.evidence.conftest import make_document
from tests.operations.processes import clean_jobs, job_row  # noqa: F401 (a fixture)

pytestmark = [
    pytest.mark.django_db(databases="__all__"),
    pytest.mark.usefixtures("clean_jobs"),
]

TEXT = "The tenant paid $12,450.00 on March 3, 2024."


@pytest.fixture
def draft(lawyer: User, case: Case) -> Draft:
    document = make_document(case, lawyer, pages=[f"Rent ledger. {TEXT}"])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    return draft_of(case=case, user=lawyer, packet=packet, text=TEXT)


def _request(lawyer: User, draft: Draft) -> Verification:
    return services.verification_request(
        user=lawyer, case_id=draft.case_id, draft_id=draft.pk, number=1
    )


def _sql(query: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return cursor.fetchone()[0] if cursor.description else None


def _taken_by_a_worker_that_dies(verification: Verification) -> None:
    """A worker takes the job (as procrastinate_fetch_job_v2 leaves it: `doing`, its worker,
    one attempt started; set by id, since other cpu jobs such as a packet's index may be
    waiting before it), the run is claimed (running), then the worker's row goes (what
    pruning a dead worker does): the job stays `doing`."""
    worker_id = _sql("SELECT worker_id FROM procrastinate_register_worker_v1()")
    _sql(
        "UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s WHERE id = %s",
        [worker_id, verification.job_id],
    )
    Verification.objects.filter(pk=verification.pk).update(
        status=Verification.Status.RUNNING, started_at=timezone.now()
    )
    _sql("SELECT procrastinate_unregister_worker_v1(%s)", [worker_id])


def _age(verification: Verification, seconds: int) -> None:
    then = timezone.now() - timedelta(seconds=seconds)
    Verification.objects.filter(pk=verification.pk).update(created_at=then, started_at=then)


def test_a_run_whose_job_failed_for_good_is_failed_and_the_version_verified_again(
    lawyer: User, draft: Draft, settings: Any, run_jobs: Callable[[], None]
) -> None:
    settings.LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS = 1
    stuck = _request(lawyer, draft)
    _taken_by_a_worker_that_dies(stuck)
    # Recovery gives up on the job (its worker died as often as allowed): failed for good.
    assert recovery.jobs_recover_stalled().failed == [stuck.job_id]
    stuck.refresh_from_db()
    assert stuck.status == Verification.Status.RUNNING

    again = _request(lawyer, draft)

    stuck.refresh_from_db()
    assert stuck.status == Verification.Status.FAILED
    assert stuck.error == (
        f"The verification stopped: its job {stuck.job_id} ended (failed) without finishing it "
        "(the worker running it may have died). Verify the version again."
    )
    assert stuck.finished_at is not None
    assert again.pk != stuck.pk and again.status == Verification.Status.QUEUED
    assert again.job_id is not None and job_row(again.job_id)["status"] == "todo"
    run_jobs()
    again.refresh_from_db()
    assert again.status == Verification.Status.DONE, again.error
    assert Finding.objects.filter(verification=again).exists()
    assert not Finding.objects.filter(verification=stuck).exists()


def test_housekeeping_fails_a_run_whose_job_row_is_gone_once_past_the_stalled_timeout(
    lawyer: User, draft: Draft, settings: Any
) -> None:
    settings.LEXWEB_JOB_STALLED_SECONDS = 60
    verification = _request(lawyer, draft)
    _sql("DELETE FROM procrastinate_jobs WHERE id = %s", [verification.job_id])

    _age(verification, 30)
    assert services.verifications_fail_stale() == []  # not yet: within the timeout
    verification.refresh_from_db()
    assert verification.status == Verification.Status.QUEUED

    _age(verification, 90)
    assert services.verifications_fail_stale() == [verification.pk]
    verification.refresh_from_db()
    assert verification.status == Verification.Status.FAILED
    assert "its job is no longer in the job queue" in verification.error
    assert services.verifications_fail_stale() == []  # failed once, and for good


def test_a_run_whose_job_is_queued_or_running_is_left_to_its_job(
    lawyer: User, draft: Draft, settings: Any, run_jobs: Callable[[], None]
) -> None:
    settings.LEXWEB_JOB_STALLED_SECONDS = 60
    verification = _request(lawyer, draft)
    _age(verification, 3600)
    # Queued an hour ago and never taken (no worker): still its job's to run.
    assert services.verifications_fail_stale() == []
    assert _request(lawyer, draft).pk == verification.pk
    # Taken by a worker that died: recovery's (it queues the job again), not failed here.
    _taken_by_a_worker_that_dies(verification)
    _age(verification, 3600)
    assert services.verifications_fail_stale() == []
    assert _request(lawyer, draft).pk == verification.pk
    assert recovery.jobs_recover_stalled().retried == [verification.job_id]

    run_jobs()

    verification.refresh_from_db()
    assert verification.status == Verification.Status.DONE, verification.error
    assert services.verifications_fail_stale() == []


def test_a_run_queued_before_job_ids_were_kept_is_found_by_its_job_arguments(
    lawyer: User, draft: Draft
) -> None:
    verification = _request(lawyer, draft)
    job_id = verification.job_id
    Verification.objects.filter(pk=verification.pk).update(job_id=None)
    verification.refresh_from_db()
    assert services.job_gone(verification) is None  # its job is queued

    _sql("UPDATE procrastinate_jobs SET status = 'aborted' WHERE id = %s", [job_id])

    assert (
        services.job_gone(verification) == f"its job {job_id} ended (aborted) without finishing it"
    )


def test_the_housekeeping_job_is_periodic_and_fails_stale_runs(
    lawyer: User, draft: Draft, settings: Any, run_jobs: Callable[[], None]
) -> None:
    registry = procrastinate_django.current_app.periodic_registry.periodic_tasks
    periodic = [p for p in registry.values() if p.task.name == "verification.fail_stale"]
    assert [(p.cron, p.periodic_id, p.task.queue) for p in periodic] == [
        (settings.LEXWEB_JOB_RECOVERY_CRON, "verification_fail_stale", "cluster")
    ]
    verification = _request(lawyer, draft)
    _sql("UPDATE procrastinate_jobs SET status = 'failed' WHERE id = %s", [verification.job_id])
    _age(verification, settings.LEXWEB_JOB_STALLED_SECONDS + 10)
    housekeeping = app.configure_task(name="verification.fail_stale").defer(timestamp=0)

    run_jobs()

    assert job_row(housekeeping)["status"] == "succeeded"
    verification.refresh_from_db()
    assert verification.status == Verification.Status.FAILED
    assert f"its job {verification.job_id} ended (failed)" in verification.error
