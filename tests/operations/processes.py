"""Real `manage.py worker` processes on the test database, and ways to wait on them."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

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


def wait_until(
    check: Callable[[], T | None],
    *,
    timeout: float,
    what: str | Callable[[], str],
    every: float = 0.1,
) -> T:
    """Poll `check` until it returns something truthy; fail saying `what` (or what it returns
    then) after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:g} s waiting for {said}")
        time.sleep(every)


def holds_on(check: Callable[[], object], *, seconds: float, what: str) -> None:
    """Poll `check` for `seconds`; fail as soon as it is falsy."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert check(), f"{what}: no longer true"
        time.sleep(0.2)


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

        return wait_until(found, timeout=timeout, what=lambda: f"{text!r} in:\n{self.output()}")

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


class DatabaseLink:
    """A socket relay between worker processes and the test database that a test can cut.

    `down()` drops every open connection and refuses new ones, which is what a worker sees when
    PostgreSQL dies; `up()` serves again on the same address, as a restarted server does. The
    database itself (shared by the test run) is never touched. It listens the way the database
    does: on a Unix socket when the test database is reached through one, else on TCP.
    """

    def __init__(self, socket_dir: Path) -> None:
        conf = connection.settings_dict
        self._unix_target = conf["HOST"].startswith("/")
        if self._unix_target:
            self._target: str | tuple[str, int] = f"{conf['HOST']}/.s.PGSQL.{conf['PORT'] or 5432}"
            self.host = str(socket_dir)
            self.port = 6543
            self._address: str | tuple[str, int] = f"{socket_dir}/.s.PGSQL.{self.port}"
        else:
            self._target = (conf["HOST"] or "127.0.0.1", int(conf["PORT"] or 5432))
            probe = socket.socket()
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
            probe.close()
            self.host = "127.0.0.1"
            self._address = ("127.0.0.1", self.port)
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._listener: socket.socket | None = None
        self.up()

    def database_url(self) -> str:
        conf = connection.settings_dict
        auth = quote(conf["USER"], safe="")
        if conf["PASSWORD"]:
            auth += ":" + quote(conf["PASSWORD"], safe="")
        host = quote(self.host, safe="")
        return f"postgres://{auth}@{host}:{self.port}/{quote(conf['NAME'], safe='')}"

    def _socket(self) -> socket.socket:
        family = socket.AF_UNIX if self._unix_target else socket.AF_INET
        return socket.socket(family, socket.SOCK_STREAM)

    def up(self) -> None:
        listener = self._socket()
        if self._unix_target:
            Path(str(self._address)).unlink(missing_ok=True)
        else:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(self._address)
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            if listener is not None:
                listener.close()
            for sock in self._open:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            self._open.clear()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            upstream = self._socket()
            try:
                upstream.connect(self._target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    upstream.close()
                    return
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def upload_document(client: Any, case_id: int, name: str, data: bytes) -> int:
    """Upload one file through the real API; returns the new document's id."""
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.test.client import MULTIPART_CONTENT

    response = client.post(
        f"/api/v1/cases/{case_id}/documents",
        {"files": [SimpleUploadedFile(name, data)], "origin": "client"},
        content_type=MULTIPART_CONTENT,
    )
    assert response.status_code == 201, response.content
    results = response.json()["results"]
    assert results[0]["status"] == "created", results
    document_id: int = results[0]["document"]["id"]
    return document_id


def job_of(task_name: str, arg: str, value: int) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT id FROM procrastinate_jobs WHERE task_name = %s AND (args->>%s)::bigint = %s "
            "ORDER BY id",
            [task_name, arg, value],
        )
        rows = cursor.fetchall()
    assert len(rows) == 1, f"{len(rows)} {task_name} jobs for {arg}={value}"
    job_id: int = rows[0][0]
    return job_id
