"""`manage.py worker` as a real process: signals, the grace period, a database that goes away.

Jobs are real OCR ingests of a scanned court order (Tesseract in the worker), so that a job is
really running when the signal comes.
"""

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import User
from apps.cases import services as case_services
from apps.cases.models import Case
from apps.documents.models import Document, Page
from tests.documents.conftest import blob_root  # noqa: F401 (a fixture)
from tests.documents.files import scanned_pdf
from tests.operations.processes import (
    BASE_DIR,
    DatabaseLink,
    clean_jobs,  # noqa: F401 (a fixture)
    holds_on,
    job_of,
    job_row,
    start_worker,
    upload_document,
    wait_until,
    worker_env,
)

pytestmark = [
    pytest.mark.product,  # starts worker processes to kill, signal or outwait them
    pytest.mark.django_db(transaction=True, databases="__all__"),
    pytest.mark.usefixtures("clean_jobs"),
]

SCAN = "azd_order_bard-ivc-mdl_15-02641.pdf"  # 5 pages


def _scan(lawyer_api: Client, case: Case, pages: int) -> int:
    return upload_document(lawyer_api, case.pk, "scan.pdf", scanned_pdf(SCAN, pages=pages))


def _pages_done(document_id: int) -> int:
    return Document.objects.get(pk=document_id).pages_done


def _assert_read_once(document_id: int, pages: int) -> None:
    document = Document.objects.get(pk=document_id)
    assert document.status == Document.Status.READY, (document.status, document.error)
    numbers = list(Page.objects.filter(document=document).values_list("number", flat=True))
    assert sorted(numbers) == list(range(1, pages + 1))
    assert all(
        text.strip()
        for text in Page.objects.filter(document=document).values_list("text", flat=True)
    )


def test_help_lists_the_queues_and_concurrency_flags() -> None:
    result = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "worker", "--help"],
        cwd=BASE_DIR,
        env=worker_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "--queues QUEUES" in result.stdout
    assert "--concurrency CONCURRENCY" in result.stdout


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        (
            "LEXWEB_JOB_STALLED_SECONDS",
            "4",
            "LEXWEB_JOB_STALLED_SECONDS must be at least 5, not 4.",
        ),
        ("LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS", "-1", "must be at least 0, not -1."),
        ("LEXWEB_JOB_RECOVERY_MAX_ATTEMPTS", "0", "must be at least 1, not 0."),
        ("LEXWEB_JOB_RECOVERY_CRON", "every minute", "must be a cron line such as '* * * * *'"),
    ],
)
def test_a_bad_job_setting_stops_the_worker_with_one_clear_line(
    name: str, value: str, message: str
) -> None:
    result = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "worker", "--help"],
        cwd=BASE_DIR,
        env=worker_env(**{name: value}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode != 0
    assert message in result.stderr


@pytest.mark.parametrize("value", ["5", "6", "60"])
def test_the_lowest_stalled_timeout_and_above_are_accepted(value: str) -> None:
    result = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "worker", "--help"],
        cwd=BASE_DIR,
        env=worker_env(LEXWEB_JOB_STALLED_SECONDS=value, LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS="0"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_sigterm_lets_the_running_job_finish_and_a_second_signal_does_not_kill_it(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,  # noqa: F811
) -> None:
    document_id = _scan(lawyer_api, case, pages=3)
    worker = start_worker(
        env=worker_env(blob_root=blob_root, LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS="600")
    )
    try:
        wait_until(lambda: _pages_done(document_id) >= 1, timeout=180, what="the first OCR page")

        worker.signal(signal.SIGTERM)
        worker.wait_for_line("SIGTERM: taking no new jobs; waiting up to 600 s for 1 running job")
        worker.signal(signal.SIGTERM)
        worker.wait_for_line("SIGTERM again: still waiting")
        worker.signal(signal.SIGINT)
        worker.wait_for_line("SIGINT again: still waiting")

        assert worker.wait(timeout=300) == 0
    finally:
        worker.stop()
    _assert_read_once(document_id, 3)
    row = job_row(job_of("documents.extract_text", "document_id", document_id))
    assert (row["status"], row["attempts"]) == ("succeeded", 1)
    assert "stopped" in worker.lines[-1]


def test_an_idle_worker_stops_at_once_on_sigint(blob_root: Path) -> None:  # noqa: F811
    worker = start_worker(env=worker_env(blob_root=blob_root))
    try:
        wait_until(_a_worker_is_registered, timeout=120, what="the worker to register")
        worker.signal(signal.SIGINT)
        assert worker.wait(timeout=60) == 0
    finally:
        worker.stop()
    assert "waiting up to 30 s for no running job" in worker.output()
    assert not _a_worker_is_registered(), "a clean stop removes its worker row"


def test_a_job_still_running_after_the_grace_period_is_retried_at_the_next_start(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,  # noqa: F811
) -> None:
    document_id = _scan(lawyer_api, case, pages=5)
    env = worker_env(blob_root=blob_root, LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS="1")
    first = start_worker(env=env)
    try:
        wait_until(lambda: _pages_done(document_id) >= 1, timeout=180, what="the first OCR page")
        first.signal(signal.SIGTERM)
        assert first.wait(timeout=120) == 0
    finally:
        first.stop()
    assert "still running after 1 s; leaving them to be retried" in first.output()
    job_id = job_of("documents.extract_text", "document_id", document_id)
    row = job_row(job_id)
    assert (row["status"], row["worker_id"]) == ("doing", None)
    assert Document.objects.get(pk=document_id).status == Document.Status.PROCESSING

    # The default stalled timeout (60 s) is not waited for: the job has no worker any more.
    second = start_worker(env=worker_env(blob_root=blob_root))
    try:
        wait_until(
            lambda: Document.objects.get(pk=document_id).status == Document.Status.READY,
            timeout=300,
            what="the document read by the next worker",
        )
    finally:
        second.signal(signal.SIGTERM)
        second.wait()
        second.stop()
    _assert_read_once(document_id, 5)
    assert job_row(job_id)["status"] == "succeeded"


def _a_worker_is_registered() -> bool:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM procrastinate_workers")
        return bool(cursor.fetchone()[0])


def test_a_worker_waits_for_a_database_that_went_away_and_carries_on_when_it_is_back(
    lawyer: User,
    lawyer_api: Client,
    case: Case,
    blob_root: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    link = DatabaseLink(tmp_path)
    document_id = _scan(lawyer_api, case, pages=4)
    worker = start_worker(
        env=worker_env(
            blob_root=blob_root, database_url=link.database_url(), LEXWEB_JOB_STALLED_SECONDS="5"
        )
    )
    try:
        wait_until(lambda: _pages_done(document_id) >= 1, timeout=180, what="the first OCR page")
        link.down()  # mid-job
        worker.wait_for_line("lost the database", timeout=60)
        # It waits rather than exit, however long the database stays away: past Procrastinate's
        # own teardown, which ends its worker, and through tries of the database after it
        # (backoff 1, 2, 4 s: three failed tries in 8 s).
        worker.wait_for_line("its jobs stopped", timeout=60)
        holds_on(lambda: worker.process.poll() is None, seconds=8, what="the worker to wait")
        link.up()
        worker.wait_for_line("the database is back", timeout=120)

        # The interrupted ingest is retried from the start, and new jobs run.
        wait_until(
            lambda: Document.objects.get(pk=document_id).status == Document.Status.READY,
            timeout=300,
            what=lambda: f"the interrupted document to be read; worker said:\n{worker.output()}",
        )
        check = case_services.case_worker_check_request(actor=lawyer, case=case)
        wait_until(
            lambda: job_row(check)["status"] == "succeeded", timeout=120, what="a new job to run"
        )
        assert worker.process.poll() is None
        worker.signal(signal.SIGTERM)
        assert worker.wait(timeout=120) == 0
    finally:
        worker.stop()
        link.down()
    _assert_read_once(document_id, 4)
    lost = [line for line in worker.lines if "lost" in line]
    assert len(lost) == 1, worker.output()


def test_a_worker_started_while_the_database_is_away_waits_for_it(
    lawyer: User, case: Case, tmp_path: Path, settings: Any
) -> None:
    link = DatabaseLink(tmp_path)
    link.down()
    worker = start_worker(env=worker_env(database_url=link.database_url()))
    try:
        worker.wait_for_line("the database does not answer; waiting for it")
        assert worker.process.poll() is None
        link.up()
        check = case_services.case_worker_check_request(actor=lawyer, case=case)
        wait_until(
            lambda: job_row(check)["status"] == "succeeded", timeout=180, what="the job to run"
        )
        worker.wait_for_line("the database is back")
        worker.signal(signal.SIGTERM)
        assert worker.wait(timeout=120) == 0
    finally:
        worker.stop()
        link.down()


def test_a_worker_waiting_for_the_database_stops_at_once_on_sigterm(tmp_path: Path) -> None:
    link = DatabaseLink(tmp_path)
    link.down()
    worker = start_worker(env=worker_env(database_url=link.database_url()))
    try:
        worker.wait_for_line("the database does not answer; waiting for it")
        worker.signal(signal.SIGTERM)
        assert worker.wait(timeout=60) == 0
    finally:
        worker.stop()
    assert worker.lines[-1].endswith("stopped")
