"""Honest readiness: /readyz reports stuck jobs, the oldest queued job per queue and late
periodic jobs, and says "degraded" (HTTP 200) when the job system is not keeping up.

Job states are made with Procrastinate's own database functions, as its workers call them
(register a worker, fetch a job, unregister the worker: what a SIGKILLed worker leaves once
pruned), and periodic runs are real jobs run by a real in-process worker.
"""

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from django.test import Client
from django.utils import timezone
from procrastinate.contrib.django import app

from apps.operations import selectors

pytestmark = pytest.mark.django_db(databases="__all__")

HOUR = 3600


@pytest.fixture(autouse=True)
def clean_jobs(transactional_db: None, settings: Any, tmp_path: Path) -> Iterator[None]:
    """Procrastinate's tables are not Django-managed, so tests' jobs outlive them: start empty."""
    settings.LEXWEB_BLOB_ROOT = tmp_path / "blobs"  # the sweep job may run in these tests
    settings.FILE_UPLOAD_TEMP_DIR = str(tmp_path / "uploads")
    _empty_job_tables()
    yield
    _empty_job_tables()


def _empty_job_tables() -> None:
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM procrastinate_periodic_defers")
        cursor.execute("DELETE FROM procrastinate_jobs")
        cursor.execute("DELETE FROM procrastinate_workers")


def _register_worker() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT procrastinate_register_worker_v1()")
        return int(cursor.fetchone()[0])


def _fetch(queue: str, worker_id: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM procrastinate_fetch_job_v2(ARRAY[%s], %s)", [queue, worker_id]
        )
        job_id = cursor.fetchone()[0]
    assert job_id is not None
    return int(job_id)


def _unregister(worker_id: int) -> None:
    with connection.cursor() as cursor:
        cursor.execute("SELECT procrastinate_unregister_worker_v1(%s)", [worker_id])


def _defer_periodic(task_name: str, periodic_id: str, at: datetime) -> int:
    """What the periodic deferrer does for the tick `at` (its own database function)."""
    task = app.tasks[task_name]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT procrastinate_defer_periodic_job_v2(%s, %s, %s, %s, %s, %s, %s, %s)",
            [
                task.queue,
                task.lock,
                task.queueing_lock,
                task.name,
                0,
                periodic_id,
                int(at.timestamp()),
                json.dumps({"timestamp": int(at.timestamp())}),
            ],
        )
        return int(cursor.fetchone()[0])


def _readyz() -> tuple[int, dict[str, Any]]:
    response = Client().get("/readyz")
    return response.status_code, response.json()


def _periodic(body: dict[str, Any], task: str) -> dict[str, Any]:
    return next(job for job in body["checks"]["periodic"]["jobs"] if job["task"] == task)


def test_readyz_keeps_status_and_checks_and_adds_jobs_queues_and_periodic() -> None:
    status, body = _readyz()

    assert status == 503 and body["status"] == "unavailable"  # no worker
    assert set(body) == {"status", "checks"}
    assert set(body["checks"]) == {
        "database",
        "worker",
        "channel_layer",
        "jobs",
        "queues",
        "periodic",
    }
    for check in body["checks"].values():
        assert isinstance(check["ok"], bool) and isinstance(check["detail"], str)
    assert body["checks"]["jobs"] == {
        "ok": True,
        "detail": "no job stuck",
        "stalled_seconds": 60,
        "stuck": [],
    }
    assert body["checks"]["queues"]["queues"]["cpu"] == {
        "queued": 0,
        "running": 0,
        "oldest_queued_seconds": None,
    }


def test_everything_fine_is_ok_with_every_periodic_job_listed() -> None:
    _register_worker()

    status, body = _readyz()

    assert (status, body["status"]) == (200, "ok"), body
    tasks = {job["task"] for job in body["checks"]["periodic"]["jobs"]}
    assert {"cluster.health_check", "operations.sweep", "operations.recover_stalled"} <= tasks


def test_a_job_whose_worker_died_is_reported_stuck_and_readiness_is_degraded() -> None:
    _register_worker()  # a live worker elsewhere
    job_id = app.configure_task(name="cases.worker_check").defer(
        case_id=1, requested_by=1, queued_at="x"
    )
    dead = _register_worker()
    assert _fetch("cpu", dead) == job_id
    _unregister(dead)  # what pruning a SIGKILLed worker leaves: `doing`, no worker

    status, body = _readyz()

    assert (status, body["status"]) == (200, "degraded")
    jobs = body["checks"]["jobs"]
    assert jobs["ok"] is False
    assert jobs["stuck"] == [
        {"id": job_id, "task": "cases.worker_check", "queue": "cpu", "worker_id": None}
    ]
    assert f"cases.worker_check[{job_id}]" in jobs["detail"]
    assert body["checks"]["queues"]["queues"]["cpu"]["running"] == 1


def test_a_job_of_a_silent_worker_is_stuck_only_past_the_stalled_timeout(settings: Any) -> None:
    _register_worker()
    app.configure_task(name="cases.worker_check").defer(case_id=1, requested_by=1, queued_at="x")
    silent = _register_worker()
    _fetch("cpu", silent)
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE procrastinate_workers SET last_heartbeat = NOW() - interval '30 seconds' "
            "WHERE id = %s",
            [silent],
        )
    settings.LEXWEB_JOB_STALLED_SECONDS = 31  # just above its silence: not stuck
    assert _readyz()[1]["checks"]["jobs"]["ok"] is True
    settings.LEXWEB_JOB_STALLED_SECONDS = 29  # just below: stuck
    assert _readyz()[1]["checks"]["jobs"]["ok"] is False


def test_the_oldest_queued_job_per_queue_is_reported_with_its_age() -> None:
    _register_worker()
    ten_minutes_ago = timezone.now() - timedelta(minutes=10)
    app.configure_task(name="cases.worker_check", schedule_at=ten_minutes_ago).defer(
        case_id=1, requested_by=1, queued_at="x"
    )
    app.configure_task(name="cases.worker_check").defer(case_id=1, requested_by=1, queued_at="x")
    # Scheduled for later: not waiting yet, so not counted.
    app.configure_task(
        name="cases.worker_check", schedule_at=timezone.now() + timedelta(hours=1)
    ).defer(case_id=1, requested_by=1, queued_at="x")

    status, body = _readyz()

    cpu = body["checks"]["queues"]["queues"]["cpu"]
    assert cpu["queued"] == 2
    assert 600 <= cpu["oldest_queued_seconds"] < 600 + 120
    assert "cpu: 2 queued, oldest 10 min" in body["checks"]["queues"]["detail"]
    assert body["checks"]["queues"]["queues"]["cluster"]["queued"] == 0
    assert (status, body["status"]) == (200, "ok")  # waiting is reported, not an outage


def test_a_periodic_job_missed_for_hours_is_late_until_it_runs_again(
    run_jobs: Callable[[], None],
) -> None:
    _register_worker()
    # The deferrer queued the sweep five hours ago, then the machine slept: nothing ran since.
    five_hours_ago = timezone.now() - timedelta(hours=5)
    _defer_periodic("operations.sweep", "sweep", five_hours_ago)

    status, body = _readyz()

    sweep = _periodic(body, "operations.sweep")
    assert (status, body["status"]) == (200, "degraded")
    assert sweep["ok"] is False and sweep["last_status"] == "todo"
    # Due at the first quarter hour after it was queued, plus a minute's grace.
    assert 5 * HOUR - 16 * 60 < sweep["late_seconds"] < 5 * HOUR - 60 + 5
    assert body["checks"]["periodic"]["ok"] is False
    # Said in hours (4.7 to 5.0, by where the quarter hour fell), as late as the figure says.
    hours = f"{sweep['late_seconds'] / 3600:.1f}"
    assert hours in {"4.7", "4.8", "4.9", "5.0"}
    detail = body["checks"]["periodic"]["detail"]
    assert f"operations.sweep is {hours} h late (due every 15 min)" in detail

    run_jobs()  # the worker wakes up and runs it

    status, body = _readyz()
    sweep = _periodic(body, "operations.sweep")
    assert (status, body["status"]) == (200, "ok"), body
    assert sweep["ok"] is True and sweep["late_seconds"] == 0
    assert sweep["last_status"] == "succeeded"
    last_run = datetime.fromisoformat(sweep["last_run"])
    assert abs((timezone.now() - last_run).total_seconds()) < 120


def test_a_periodic_job_that_ran_then_nothing_for_hours_is_late_with_how_long(
    run_jobs: Callable[[], None],
) -> None:
    _defer_periodic("operations.sweep", "sweep", timezone.now() - timedelta(minutes=1))
    run_jobs()
    on_time = {p.task: p for p in selectors.periodic_state()}["operations.sweep"]
    assert on_time.ok and on_time.last_status == "succeeded"

    # The same rows, read five hours later (the machine slept; no deferrer ran meanwhile).
    later = timezone.now() + timedelta(hours=5)
    slept = {p.task: p for p in selectors.periodic_state(now=later)}["operations.sweep"]

    assert not slept.ok
    assert 5 * HOUR - 16 * 60 < slept.late_seconds < 5 * HOUR


def test_a_periodic_job_dead_with_its_queueing_lock_shows_late_not_ok() -> None:
    # The case: the health-check job killed holding its lock and queueing lock, so no
    # later health check could be queued, while /readyz said ok.
    _register_worker()
    job_id = _defer_periodic("cluster.health_check", "health", timezone.now())
    dead = _register_worker()
    assert _fetch("cluster", dead) == job_id
    _unregister(dead)

    status, body = _readyz()

    assert (status, body["status"]) == (200, "degraded")
    assert body["checks"]["jobs"]["stuck"][0]["id"] == job_id
    # Ten minutes on, with nothing queued behind it (its queueing lock refuses new ones).
    later = timezone.now() + timedelta(minutes=10)
    health = {p.task: p for p in selectors.periodic_state(now=later)}["cluster.health_check"]
    assert not health.ok and health.last_status == "doing"
    assert 10 * 60 - 30 - 60 - 5 < health.late_seconds <= 10 * 60 - 60


def test_a_periodic_job_never_run_yet_is_not_late() -> None:
    states = {p.task: p for p in selectors.periodic_state()}

    assert states["operations.sweep"].last_run is None
    assert states["operations.sweep"].ok


def test_periodic_grace_is_the_setting(settings: Any, run_jobs: Callable[[], None]) -> None:
    # Health checks every 30 s: the run at t is due again at t+30 plus the grace.
    _defer_periodic("cluster.health_check", "health", timezone.now() - timedelta(seconds=1))
    run_jobs()
    ran = {p.task: p for p in selectors.periodic_state()}["cluster.health_check"]
    assert ran.last_run is not None and ran.due is not None
    settings.LEXWEB_PERIODIC_GRACE_SECONDS = 600
    due = {p.task: p for p in selectors.periodic_state()}["cluster.health_check"].due
    assert due is not None
    assert (due - ran.due).total_seconds() == 600 - 60
    just_before = due - timedelta(seconds=1)
    just_after = due + timedelta(seconds=1)
    state = {p.task: p for p in selectors.periodic_state(now=just_before)}["cluster.health_check"]
    assert state.ok
    state = {p.task: p for p in selectors.periodic_state(now=just_after)}["cluster.health_check"]
    assert not state.ok and state.late_seconds == 1.0
