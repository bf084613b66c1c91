"""Issue 22 requirement 6 (last part): a stage says when it last showed progress
(`last_progress_at`: its start, its stored batches of tokens at most a second apart, its end),
and a running stage whose worker is gone or silent is announced on its run (`stage.stalled`)
by the stalled-job recovery, before its job is queued again; a stage that runs again says so
with `stage.retrying`."""

import logging
from datetime import timedelta

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Run, RunEvent, Stage
from apps.operations.services import recovery
from tests.drafting import run_fixtures as rf

pytestmark = pytest.mark.django_db(transaction=True)


def _first(run: Run) -> Stage:
    return run.stages.order_by("position").first()  # type: ignore[return-value]


def _job(job_id: int | None) -> tuple[str, int]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT status, attempts FROM procrastinate_jobs WHERE id = %s", [job_id])
        status, attempts = cursor.fetchone()
    return str(status), int(attempts)


def _running_on(stage: Stage, *, worker_id: int | None) -> None:
    """The stage as a worker leaves it while it runs: RUNNING, its job `doing` on `worker_id`
    (None: the worker's row is gone, as when its process ended)."""
    Stage.objects.filter(pk=stage.pk).update(
        status=Stage.Status.RUNNING, attempt=1, started_at=timezone.now()
    )
    Run.objects.filter(pk=stage.run_id).update(status=Run.Status.RUNNING)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE procrastinate_jobs SET status = 'doing', worker_id = %s WHERE id = %s",
            [worker_id, stage.job_id],
        )


def _silent_worker() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO procrastinate_workers (last_heartbeat) VALUES (NOW() - interval '1 hour') "
            "RETURNING id"
        )
        return int(cursor.fetchone()[0])


def test_a_stage_whose_worker_is_gone_is_announced_stalled_before_its_job_runs_again(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
    stage = _first(run)
    _running_on(stage, worker_id=None)

    outcome = recovery.jobs_recover_stalled()

    assert outcome.retried == [stage.job_id]
    assert _job(stage.job_id)[0] == "todo"
    (event,) = RunEvent.objects.filter(run=run, kind="stage.stalled")
    assert event.payload["stage_id"] == stage.pk
    assert event.payload["reason"] == "its worker stopped (the process ended)"
    assert event.payload["worker_gone"] is True
    assert event.payload["status"] == Stage.Status.RUNNING
    # Nothing of the run came after it: the announcement is the recovery's first act.
    assert not RunEvent.objects.filter(run=run, seq__gt=event.seq).exists()

    # A second recovery finds nothing stalled and says nothing again.
    recovery.jobs_recover_stalled()
    assert RunEvent.objects.filter(run=run, kind="stage.stalled").count() == 1


def test_a_silent_worker_is_named_as_silent(lawyer: User, case: Case) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
    stage = _first(run)
    worker = _silent_worker()
    _running_on(stage, worker_id=worker)

    recovery.jobs_recover_stalled(stalled_seconds=60)

    (event,) = RunEvent.objects.filter(run=run, kind="stage.stalled")
    assert event.payload["worker_gone"] is False
    assert event.payload["reason"] == (
        f"its worker stopped answering (worker {worker} silent over 60 s)"
    )


def test_a_hook_that_fails_never_stops_the_recovery(
    lawyer: User, case: Case, caplog: pytest.LogCaptureFixture
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
    stage = _first(run)
    _running_on(stage, worker_id=None)

    def broken(job: recovery.StalledJob) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1/0")  # fails inside the recovery's transaction

    recovery.STALLED_HOOKS.insert(0, broken)
    try:
        with caplog.at_level(logging.ERROR, logger="apps.operations.services.recovery"):
            outcome = recovery.jobs_recover_stalled()
    finally:
        recovery.STALLED_HOOKS.remove(broken)

    assert outcome.retried == [stage.job_id] and _job(stage.job_id)[0] == "todo"
    assert "A stalled-job hook failed for job" in caplog.text
    # The hooks after it still ran (drafting's announcement).
    assert RunEvent.objects.filter(run=run, kind="stage.stalled").count() == 1


def test_a_stalled_job_that_is_not_a_stage_is_not_announced(lawyer: User, case: Case) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
    stage = _first(run)
    # The same job row, as another task's: the hook looks at the task, not at the stage.
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE procrastinate_jobs SET task_name = 'documents.extract_text' WHERE id = %s",
            [stage.job_id],
        )
    _running_on(stage, worker_id=None)

    recovery.jobs_recover_stalled()

    assert not RunEvent.objects.filter(run=run, kind="stage.stalled").exists()


@pytest.mark.slow
def test_last_progress_moves_with_the_stored_tokens_and_ends_with_the_stage(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    # A summary of about 600 tokens at 120 tokens/s: 5 s of streaming, over which the stage's
    # progress time must be written again (at most once a second, at least every batch after).
    reply = " ".join(f"The lease term {n} is recorded [“record.pdf” p. 1]." for n in range(60))
    seen: set[object] = set()
    with rf.site_running({"summarizer": reply}, tokens_per_second=120), rf.ThreadWorker():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")

        def moved() -> bool:
            stage = _first(run)
            if stage.status == Stage.Status.RUNNING and stage.last_progress_at is not None:
                seen.add(stage.last_progress_at)
            times = sorted(seen)  # type: ignore[type-var]
            return len(times) >= 2 and times[-1] - times[0] >= timedelta(seconds=0.9)

        rf.eventually(moved, timeout=60)
        run = rf.finished(run)
    assert run.status == Run.Status.SUCCEEDED, run.error
    stage = _first(run)
    assert stage.completion_tokens > 300
    assert stage.last_progress_at == stage.finished_at
    body = lawyer_api.get(f"/api/v1/cases/{case.pk}/runs/{run.pk}").json()
    (out,) = [s for s in body["stages"] if s["id"] == stage.pk]
    assert out["last_progress_at"] is not None
    status_events = RunEvent.objects.filter(run=run, kind="stage.status")
    assert all("last_progress_at" in event.payload for event in status_events)
