"""A stage whose job failed without recording why (the database was away for every attempt, so
the stage could not even be claimed; or its worker died on every attempt) is queued again by the
stalled-job recovery; after runs.STRANDED_MAX_JOBS such jobs its run fails with the reason.
The reason is what is known: the worker died, the database restarted while the job ran, or the
job recorded none; never "the database was unreachable" as a guess. Nothing else is touched."""

import pytest
from django.conf import settings
from django.db import connection

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Run, RunEvent, Stage
from apps.drafting.services import runs
from apps.operations.tasks import jobs_recover_stalled_task
from tests.drafting import run_fixtures as rf

pytestmark = pytest.mark.django_db(transaction=True)


def _fail_job(job_id: int | None) -> None:
    """What Procrastinate leaves after the job's last attempt raised OperationalError."""
    with connection.cursor() as cursor:
        for status in ("doing", "failed"):  # Procrastinate's triggers record both as events
            cursor.execute(
                "UPDATE procrastinate_jobs SET status = %s WHERE id = %s", [status, job_id]
            )


def _job_status(job_id: int | None) -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT status FROM procrastinate_jobs WHERE id = %s", [job_id])
        return str(cursor.fetchone()[0])


def _first(run: Run) -> Stage:
    return run.stages.order_by("position").first()  # type: ignore[return-value]


@pytest.mark.slow
def test_a_stranded_stage_is_queued_again_and_its_run_finishes_with_nothing_lost(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        stage = _first(run)
        old_job = stage.job_id
        _fail_job(old_job)

        jobs_recover_stalled_task(timestamp=0)  # the periodic recovery job's body

        stage.refresh_from_db()
        assert stage.job_id not in (None, old_job) and _job_status(stage.job_id) == "todo"
        assert stage.status == Stage.Status.QUEUED
        assert "queued again (1)" in stage.error
        assert RunEvent.objects.filter(run=run, kind="stage.retrying").count() == 1
        # Twice changes nothing: the new job is waiting.
        assert runs.stages_stranded_recover() == runs.StrandedOutcome(requeued=[], failed=[])

        with rf.ThreadWorker():
            run = rf.finished(run)
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.draft.versions.count() == 1


def test_after_too_many_failed_jobs_the_run_fails_with_the_reason(lawyer: User, case: Case) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        for n in range(1, runs.STRANDED_MAX_JOBS):
            _fail_job(_first(run).job_id)
            assert runs.stages_stranded_recover().requeued == [_first(run).pk], n
        _fail_job(_first(run).job_id)

        outcome = runs.stages_stranded_recover()

    stage = _first(run)
    run.refresh_from_db()
    assert outcome.failed == [stage.pk] and outcome.requeued == []
    assert stage.status == Stage.Status.FAILED
    assert f"failed {runs.STRANDED_MAX_JOBS} times" in stage.error
    assert run.status == Run.Status.FAILED and "recorded no reason" in run.error
    assert "database" not in run.error  # nothing says it was
    assert runs.stages_stranded_recover() == runs.StrandedOutcome(requeued=[], failed=[])


def test_live_jobs_finished_runs_and_cancelled_runs_are_left_alone(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        waiting = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        cancelled = rf.start(user=lawyer, case=case, packet=packet, kind="summary", key="c")
        runs.run_cancel(user=lawyer, case_id=case.pk, run_id=cancelled.pk)
        _fail_job(_first(cancelled).job_id)
        before = {
            stage.pk: (stage.status, stage.job_id)
            for stage in Stage.objects.filter(run__in=[waiting, cancelled])
        }

        outcome = runs.stages_stranded_recover()

    assert outcome == runs.StrandedOutcome(requeued=[], failed=[])
    assert {
        stage.pk: (stage.status, stage.job_id)
        for stage in Stage.objects.filter(run__in=[waiting, cancelled])
    } == before


def test_a_job_that_failed_while_the_database_restarted_says_so(lawyer: User, case: Case) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        stage = _first(run)
        # The job started before the database server's last start and failed after it.
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO procrastinate_events (job_id, type, at) "
                "VALUES (%s, 'started', pg_postmaster_start_time() - interval '1 minute')",
                [stage.job_id],
            )
        _fail_job(stage.job_id)

        runs.stages_stranded_recover()

    stage.refresh_from_db()
    assert stage.error == "Its job failed: the database restarted while it ran; queued again (1)."


def test_a_stage_whose_worker_died_on_every_attempt_says_so(lawyer: User, case: Case) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    attempts = settings.LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS
    with rf.site_running():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        stage = _first(run)
        old_job = stage.job_id
        # What a worker killed during the job's last allowed attempt leaves: `doing`, no worker.
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE procrastinate_jobs SET status = 'doing', worker_id = NULL, attempts = %s "
                "WHERE id = %s",
                [attempts - 1, old_job],
            )

        jobs_recover_stalled_task(timestamp=0)  # the periodic recovery job's body

    stage.refresh_from_db()
    assert _job_status(old_job) == "failed" and stage.job_id != old_job
    assert stage.error == (
        f"Its job failed: its worker stopped while running it on each of {attempts} attempts "
        "(the process was killed, crashed or stopped answering); queued again (1)."
    )
