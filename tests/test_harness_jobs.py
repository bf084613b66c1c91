"""tests/harness/jobs.py: queued jobs run in the test's own transaction, as a worker would run
them (succeeded, failed, queued again by the task's retry strategy, unknown task), and what
they wrote is rolled back with the test."""

from collections.abc import Callable, Iterator

import pytest
from django.db import connection
from procrastinate import RetryStrategy
from procrastinate.contrib.django import app
from procrastinate.contrib.django import procrastinate_app as procrastinate_django
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.cases.models import Case
from tests.factories import CaseFactory
from tests.harness.jobs import JobRan

pytestmark = pytest.mark.django_db

_CALLS: list[dict[str, object]] = []
_TASKS = "tests.harness.rename", "tests.harness.flaky", "tests.harness.broken"


class _Flaky(Exception):
    pass


def _rename(*, case_id: int, name: str, then: str = "") -> None:
    _CALLS.append({"case_id": case_id, "name": name})
    Case.objects.filter(pk=case_id).update(title=name)
    if then:
        app.configure_task(name="tests.harness.rename").defer(case_id=case_id, name=then)


def _flaky(*, why: str) -> None:
    raise _Flaky(why)


def _broken(*, why: str) -> None:
    raise ValueError(why)


@pytest.fixture(autouse=True)
def _tasks() -> Iterator[None]:
    """The test's tasks, registered for the test only (the product's list of tasks is checked
    elsewhere: every task has words for the job pages)."""
    real_app = procrastinate_django.current_app
    real_app.task(name=_TASKS[0], queue="cpu")(_rename)
    real_app.task(name=_TASKS[1], queue="cpu", retry=RetryStrategy(max_attempts=2, wait=60))(_flaky)
    real_app.task(name=_TASKS[2], queue="cpu")(_broken)
    _CALLS.clear()
    yield
    for name in _TASKS:
        real_app.tasks.pop(name, None)


def _defer(task: str, queue: str = "cpu", **kwargs: object) -> int:
    return int(app.configure_task(name=f"tests.harness.{task}", queue=queue).defer(**kwargs))


def test_jobs_run_inside_the_tests_transaction_and_queue_more(
    run_jobs: Callable[[], list[JobRan]],
) -> None:
    assert connection.in_atomic_block  # the test's transaction: nothing commits
    case = CaseFactory(title="before")
    first = _defer("rename", case_id=case.pk, name="first", then="second")

    ran = run_jobs()

    assert [(job.task_name, job.status) for job in ran] == [
        ("tests.harness.rename", "succeeded"),
        ("tests.harness.rename", "succeeded"),
    ]
    assert ran[0].job_id == first
    assert [call["name"] for call in _CALLS] == ["first", "second"]
    case.refresh_from_db()
    assert case.title == "second"  # the uncommitted case was seen and written by both jobs
    assert set(ProcrastinateJob.objects.values_list("status", flat=True)) == {"succeeded"}
    assert run_jobs() == []  # nothing is left


def test_a_failing_job_fails_alone_and_the_next_one_runs(
    run_jobs: Callable[[], list[JobRan]],
) -> None:
    case = CaseFactory()
    bad = _defer("broken", why="no such thing")
    good = _defer("rename", case_id=case.pk, name="after")

    ran = run_jobs()

    assert [(job.job_id, job.status, job.error) for job in ran] == [
        (bad, "failed", "no such thing"),
        (good, "succeeded", ""),
    ]
    assert ProcrastinateJob.objects.get(pk=bad).status == "failed"
    assert ProcrastinateJob.objects.get(pk=good).status == "succeeded"


def test_a_job_its_retry_strategy_takes_back_waits_queued_and_is_not_run_again_now(
    run_jobs: Callable[[], list[JobRan]],
) -> None:
    job_id = _defer("flaky", why="the disk was full")

    [ran] = run_jobs()

    assert (ran.status, ran.error) == ("todo", "the disk was full")
    job = ProcrastinateJob.objects.get(pk=job_id)
    assert job.status == "todo" and job.attempts == 1
    assert job.scheduled_at is not None  # a minute from now: not due, so not run again here
    assert run_jobs() == []


def test_a_job_of_an_unknown_task_fails_with_its_name(
    run_jobs: Callable[[], list[JobRan]],
) -> None:
    configured = app.configure_task(name="tests.harness.nobody", allow_unknown=True, queue="cpu")
    job_id = configured.defer()

    [ran] = run_jobs()

    assert (ran.job_id, ran.status) == (job_id, "failed")
    assert "tests.harness.nobody" in ran.error and "not found" in ran.error


def test_the_queues_asked_for_are_the_only_ones_run() -> None:
    from tests.harness.jobs import jobs_run_here

    case = CaseFactory()
    on_cpu = _defer("rename", case_id=case.pk, name="cpu")
    elsewhere = _defer("rename", queue="cluster", case_id=case.pk, name="cluster")

    assert [job.job_id for job in jobs_run_here(["cluster"])] == [elsewhere]
    assert ProcrastinateJob.objects.get(pk=on_cpu).status == "todo"
