"""Real `manage.py worker` processes on the test database, and ways to wait on them."""

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from django.conf import settings
from django.db import connection

from tests.conftest import database_url_for_tests

BASE_DIR = Path(settings.BASE_DIR)
T = TypeVar("T")


@pytest.fixture
def clean_jobs(transactional_db: None) -> Iterator[None]:
    """No job or worker row from another test: Procrastinate's tables are not flushed between
    transactional tests, and recovery looks at every job."""

    def clean() -> None:
        with connection.cursor() as cursor:
            cursor.execute("DELETE FROM procrastinate_jobs")
            cursor.execute("DELETE FROM procrastinate_workers")

    clean()
    yield
    clean()


def wait_until(check: Callable[[], T], *, timeout: float, what: str, every: float = 0.1) -> T:
    """Poll `check` until it returns something truthy; fail saying `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)


class WorkerProcess:
    """`manage.py worker` in a process of its own; its output lines are collected as they come."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(BASE_DIR / "manage.py"), "worker", *args],
            cwd=BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # like the launcher: a signal reaches this process only
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def pid(self) -> int:
        return self.process.pid

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_for_line(self, text: str, *, timeout: float = 90) -> str:
        def found() -> str | None:
            return next((line for line in self.lines if text in line), None)

        line = wait_until(found, timeout=timeout, what=f"{text!r} in:\n{self.output()}", every=0.1)
        return line

    def signal(self, signum: int) -> None:
        os.kill(self.process.pid, signum)

    def kill(self) -> None:
        """SIGKILL: the process dies where it stands, as on an OOM kill or a power cut."""
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def wait(self, timeout: float = 120) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"worker still running after {timeout} s; output:\n{self.output()}"
            ) from None

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=30)
        self._reader.join(timeout=10)


def worker_env(
    *, blob_root: Path | None = None, database_url: str | None = None, **extra: str
) -> dict[str, str]:
    env = {
        **os.environ,
        "DATABASE_URL": database_url or database_url_for_tests(),
        "LEXWEB_LOG_LEVEL": "WARNING",
        "PYTHONUNBUFFERED": "1",
        # Nothing periodic queued behind the tests' backs; recovery runs at start only.
        "LEXWEB_CLUSTER_HEALTH_CRON": "",
        "LEXWEB_JOB_RECOVERY_CRON": "",
        "LEXWEB_OCR_WORKERS": "1",
    }
    if blob_root is not None:
        env["LEXWEB_BLOB_ROOT"] = str(blob_root)
    env.update(extra)
    return env


def start_worker(
    *, queues: str = "cpu", env: dict[str, str], concurrency: int = 1
) -> WorkerProcess:
    return WorkerProcess(["--queues", queues, "--concurrency", str(concurrency)], env)


def job_row(job_id: int) -> dict[str, object]:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status, attempts, worker_id, lock, queueing_lock FROM procrastinate_jobs "
            "WHERE id = %s",
            [job_id],
        )
        row = cursor.fetchone()
    assert row is not None, f"no job {job_id}"
    return dict(zip(["status", "attempts", "worker_id", "lock", "queueing_lock"], row, strict=True))


def worker_silent_for(worker_id: int, seconds: float) -> bool:
    """The worker row has not beaten for `seconds` (or is gone)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM procrastinate_workers WHERE id = %s "
            "AND last_heartbeat >= NOW() - make_interval(secs => %s))",
            [worker_id, seconds],
        )
        row = cursor.fetchone()
    return bool(row and row[0])
