"""A worker process that ends is seen at once on its own host (issue 24 req 2): the launcher,
which sees its child end, calls `worker_process_gone(pid)`; the worker rows that process
registered go, the job it was running is queued again at that moment (not after
LEXWEB_JOB_STALLED_SECONDS of silence), and /readyz and the job queues page count only the
workers still alive. The real kill under `make run` is in tests/faults/test_process_kills.py."""

from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from apps.accounts.models import User
from apps.cases import services as case_services
from apps.cases.models import Case
from apps.cluster import selectors as cluster_selectors
from apps.operations.services import worker_pids
from lexweb import health
from tests.operations.processes import clean_jobs, job_row

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

__all__ = ["clean_jobs"]  # a fixture

DEAD_PID = 999_999_999  # the pid of the process that ended, as the launcher saw it


def _sql(query: str, params: list[Any] | None = None) -> Any:
    with connection.cursor() as cursor:
        cursor.execute(query, params or [])
        return cursor.fetchone()[0] if cursor.description else None


def _register_worker() -> int:
    worker_id: int = _sql("SELECT worker_id FROM procrastinate_register_worker_v1()")
    return worker_id


@pytest.fixture
def var_dir(settings: Any, tmp_path: Path) -> Path:
    settings.VAR_DIR = tmp_path / "var"
    return Path(settings.VAR_DIR)


def test_a_worker_process_that_ended_has_its_job_queued_again_and_is_no_longer_counted(
    clean_jobs: None, var_dir: Path, lawyer: User, case: Case, admin_user: User
) -> None:
    dead, alive = _register_worker(), _register_worker()
    # What the dead process wrote while it lived (worker_process_started, worker_registered),
    # under its own pid; written here for that pid.
    record = var_dir / "run" / "workers" / str(DEAD_PID)
    record.parent.mkdir(parents=True)
    record.write_text(f"{dead}\n")
    job_id = case_services.case_worker_check_request(actor=lawyer, case=case)
    fetched = _sql("SELECT id FROM procrastinate_fetch_job_v2(%s::varchar[], %s)", [["cpu"], dead])
    assert fetched == job_id
    # Both beat just now: by heartbeat alone the dead one counts as alive for a minute.
    assert health._check_worker()["detail"] == "2 worker(s) alive"
    assert worker_pids.worker_ids_of(DEAD_PID) == [dead]

    outcome = worker_pids.worker_process_gone(pid=DEAD_PID)

    assert outcome is not None and outcome.retried == [job_id]
    assert job_row(job_id)["status"] == "todo"
    assert _sql("SELECT array_agg(id) FROM procrastinate_workers") == [alive]
    assert health._check_worker() == {"ok": True, "detail": "1 worker(s) alive"}
    overview = cluster_selectors.jobs_overview_get(actor=admin_user, audited=False)
    assert [(w.id, w.alive) for w in overview.workers] == [(alive, True)]
    assert overview.workers_total == 1
    assert not record.exists()  # a later process with that pid starts with no workers of it


def test_a_process_that_registered_no_worker_changes_nothing(
    clean_jobs: None, var_dir: Path
) -> None:
    alive = _register_worker()

    assert worker_pids.worker_process_gone(pid=DEAD_PID) is None

    assert _sql("SELECT array_agg(id) FROM procrastinate_workers") == [alive]
