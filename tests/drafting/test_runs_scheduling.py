"""Scheduling across boards with the worker `make run` starts for a GPU host (one worker serving
every board of its host, `manage.py board_queues`): a backlog on one board must not keep
another board of the same host idle while a stage for it is queued. Real worker process, real
PostgreSQL, fake llama-servers over HTTP."""

import pytest

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import Role
from apps.drafting.models import Run, Stage
from lexweb import launcher
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.cluster.dispatch_fixtures import backend_make, deployment_make, route_make
from tests.conftest import database_url_for_tests
from tests.drafting import run_fixtures as rf
from tests.operations.processes import (
    WorkerProcess,
    clean_jobs,  # noqa: F401 (a fixture)
    wait_until,
    worker_env,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("clean_jobs")]

SLOW_SUMMARY = " ".join(f"word{n}" for n in range(60))  # 12 s at 5 tokens/s


@pytest.mark.slow
def test_a_backlog_on_one_board_never_holds_a_stage_of_another_board_of_the_host(
    lawyer: User, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Board X (one slot) has two summaries queued, board Y (one slot, same host) a motion's
    gate. X can generate one summary at a time; the other waits for X's slot. The gate must
    run on Y meanwhile, not after X's first summary."""
    packet = rf.frozen_packet(case=case, user=lawyer)
    slow = FakeSettings(kind="llama_cpp", tokens_per_second=5, slots=1, reply=SLOW_SUMMARY)
    fast = FakeSettings(kind="llama_cpp", tokens_per_second=3000, slots=1, reply=rf.GATE_YES)
    with FakeBackend.in_thread(slow) as board_x, FakeBackend.in_thread(fast) as board_y:
        x = deployment_make(backend_make(base_url=board_x.base_url, board="board-x", slots=1))
        y = deployment_make(backend_make(base_url=board_y.base_url, board="board-y", slots=1))
        route_make(Role.SUMMARIZER, x)
        for role in (Role.GATE, Role.DRAFTER, Role.REASONER, Role.ADVERSARY):
            route_make(role, y)
        summaries = [rf.start(user=lawyer, case=case, packet=packet, kind="summary")]
        summaries.append(rf.start(user=lawyer, case=case, packet=packet, kind="summary"))
        motion = rf.start(user=lawyer, case=case, packet=packet)

        # The host's worker exactly as the launcher starts it.
        monkeypatch.setenv("DATABASE_URL", database_url_for_tests())
        ((_host, queues, concurrency),) = launcher._board_queues()
        argv = launcher._worker_argv(queues, concurrency)
        worker = WorkerProcess(argv[argv.index("worker") + 1 :], worker_env())
        try:
            gate = motion.stages.get(name=Stage.Name.GATE)
            wait_until(
                lambda: Stage.objects.filter(pk=gate.pk, status=Stage.Status.SUCCEEDED).exists(),
                timeout=90,
                what=lambda: f"the gate to succeed; worker output:\n{worker.output()}",
            )
            # X is still on its first summary: the gate did not wait for X's slot.
            assert board_x.stats.streams_finished == 0
            assert board_x.generating == 1 and board_x.queued == 0  # X's slot never exceeded
            first = Run.objects.get(pk=summaries[0].pk).stages.get()
            assert first.status == Stage.Status.RUNNING
        finally:
            worker.stop()


@pytest.mark.slow
def test_a_worker_takes_a_job_it_was_not_told_about_within_a_second() -> None:
    """A worker learns of new jobs from PostgreSQL notifications, and Procrastinate drops one
    that arrives while the worker is fetching (it clears its "new job" flag after each fetch):
    a stage's verification queued that way, while the `cpu` worker finished another, waited
    for the next poll, 5 s by default, in bench_scheduling. A job that becomes due later (no
    notification then) shows the poll alone: it must start within a second or so of its time,
    not at the next 5 s poll."""
    from django.db import connection

    from lexweb.jobs import job_defer

    worker = WorkerProcess(["--queues", "cluster"], worker_env(LEXWEB_LOG_LEVEL="INFO"))
    try:
        worker.wait_for_line("Starting worker on queues cluster")
        # Its notification reaches the worker now, when the job is not due yet.
        job_id = job_defer(
            "cluster.health_check", queue="cluster", schedule_in={"seconds": 1}, timestamp=0
        )

        def started_late_by() -> float | None:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT extract(epoch FROM e.at - j.scheduled_at) FROM procrastinate_jobs j"
                    " JOIN procrastinate_events e ON e.job_id = j.id AND e.type = 'started'"
                    " WHERE j.id = %s",
                    [job_id],
                )
                row = cursor.fetchone()
            return None if row is None else float(row[0]) + 1e-9

        late = wait_until(started_late_by, timeout=30, what=lambda: worker.output())
        assert late < 2.5, f"the job started {late:.1f} s after it was due"
    finally:
        worker.stop()
