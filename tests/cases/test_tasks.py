"""Jobs go through the database to a real Procrastinate worker."""

from collections.abc import Callable

import pytest
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases import services
from apps.cases.models import Case
from apps.cases.tasks import case_worker_check_task

pytestmark = pytest.mark.django_db(databases="__all__")


def test_service_enqueues_a_job_that_a_real_worker_completes(
    lawyer: User, case: Case, run_jobs: Callable[[], None]
) -> None:
    job_id = services.case_worker_check_request(actor=lawyer, case=case)
    job = ProcrastinateJob.objects.get(pk=job_id)
    assert (job.task_name, job.queue_name, job.status) == ("cases.worker_check", "cpu", "todo")
    assert job.args["case_id"] == case.pk

    run_jobs()

    assert ProcrastinateJob.objects.get(pk=job_id).status == "succeeded"


@pytest.mark.parametrize(
    "args",
    [
        {"case_id": "1; DROP TABLE cases_case", "requested_by": 1, "queued_at": "x"},
        {"case_id": True, "requested_by": 1, "queued_at": "x"},
        {"case_id": 1, "requested_by": None, "queued_at": "x"},
        {"case_id": 1, "requested_by": 1, "queued_at": ["not", "a", "string"]},
        {"case_id": 1},
        {"case_id": 1, "requested_by": 1, "queued_at": "x", "extra": "field"},
    ],
)
def test_malformed_job_arguments_fail_that_job_and_the_worker_carries_on(
    lawyer: User, case: Case, run_jobs: Callable[[], None], args: dict[str, object]
) -> None:
    bad = case_worker_check_task.defer(**args)
    good = services.case_worker_check_request(actor=lawyer, case=case)

    run_jobs()

    assert ProcrastinateJob.objects.get(pk=bad).status == "failed"
    assert ProcrastinateJob.objects.get(pk=good).status == "succeeded"
    assert Case.objects.filter(pk=case.pk).exists()


def test_job_for_a_case_that_no_longer_exists_is_a_quiet_no_op(
    run_jobs: Callable[[], None],
) -> None:
    job_id = case_worker_check_task.defer(
        case_id=2**62, requested_by=1, queued_at="2026-01-01T00:00:00+00:00"
    )

    run_jobs()

    assert ProcrastinateJob.objects.get(pk=job_id).status == "succeeded"


def test_job_rows_are_visible_to_admins_in_the_admin(
    admin_user: User, lawyer: User, case: Case
) -> None:
    services.case_worker_check_request(actor=lawyer, case=case)
    client = Client()
    client.force_login(admin_user)

    response = client.get("/admin/procrastinate/procrastinatejob/")

    assert response.status_code == 200
    assert "cases.worker_check" in response.content.decode()


def test_job_rows_are_not_visible_to_non_admins(lawyer: User, case: Case) -> None:
    services.case_worker_check_request(actor=lawyer, case=case)
    client = Client()
    client.force_login(lawyer)

    response = client.get("/admin/procrastinate/procrastinatejob/")

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]
