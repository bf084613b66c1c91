"""The embedded PostgreSQL used when DATABASE_URL is unset.

`pgserver` ships PostgreSQL 16 binaries on PyPI and starts one in a data folder under `var/`,
listening only on a Unix socket. Settings only need to know where the socket is
(`socket_dir`); starting and stopping is the launcher's job (`start`, `stop`).
"""

import logging
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from pgserver import PostgresServer

logger = logging.getLogger(__name__)

DATABASE_NAME = "lexweb"
SUPERUSER = "postgres"


class EmbeddedDatabaseError(RuntimeError):
    """The embedded PostgreSQL could not be started; the message says what to do."""


def socket_dir(pgdata: Path) -> Path:
    """Where the running server's socket is (line 5 of postmaster.pid), else where it will be."""
    pid_file = pgdata / "postmaster.pid"
    try:
        lines = pid_file.read_text(encoding="utf-8").splitlines()
    except OSError:
        return pgdata
    if len(lines) >= 5 and lines[4].strip():
        return Path(lines[4].strip())
    return pgdata


def start(pgdata: Path) -> str:
    """Start (or join) the server for `pgdata`, create the lexweb database, return its URI.

    Idempotent: a server already running on `pgdata` is joined, and pgserver stops it only when
    the last process holding it lets go.
    """
    import pgserver  # imported here: settings import this module and need no binaries

    pgdata.parent.mkdir(parents=True, exist_ok=True)
    # pgserver logs whole command outputs on failure; keep them for the one-line reason instead
    # of letting them scroll past on stderr.
    collected = _Collector()
    pg_logger = logging.getLogger("pgserver")
    pg_logger.addHandler(collected)
    pg_logger.propagate = False
    try:
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:
        reason = collected.reason(pgdata / "log") or type(exc).__name__
        raise EmbeddedDatabaseError(
            f"The embedded PostgreSQL in {pgdata} did not start: {reason}. Fix that, or set "
            "DATABASE_URL to use another PostgreSQL."
        ) from exc
    finally:
        pg_logger.removeHandler(collected)
    _STARTED.append(server)
    ensure_database(DATABASE_NAME)
    return server.get_uri(DATABASE_NAME)


def ensure_database(name: str) -> str:
    """Create database `name` on the started server if missing; return a DATABASE_URL for it."""
    if not name.replace("_", "").isalnum():
        raise ValueError(f"unsafe database name {name!r}")
    server = _STARTED[-1]
    # `name` is checked above to be letters, digits and underscores.
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{name}';")  # noqa: S608
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {name};")
    host = quote(str(socket_dir(server.pgdata)), safe="")
    return f"postgres://{SUPERUSER}@{host}/{name}"


class _Collector(logging.Handler):
    """Keeps pgserver's error records so that their telling line can be shown."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.text: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.text.append(record.getMessage())

    def reason(self, server_log: Path) -> str:
        lines = "\n".join(self.text).splitlines()
        if server_log.is_file():
            lines += server_log.read_text(encoding="utf-8", errors="replace").splitlines()
        telling = [ln.strip() for ln in lines if "error:" in ln or "FATAL:" in ln]
        return telling[-1] if telling else ""


def postmaster_pid(pgdata: Path) -> int | None:
    """The pid of the PostgreSQL serving `pgdata` while it runs; None once it is gone (a zombie,
    or a pid since reused by another program, is gone too)."""
    import psutil

    try:
        pid = int((pgdata / "postmaster.pid").read_text(encoding="utf-8").splitlines()[0])
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE or process.name() != "postgres":
            return None
    except (OSError, ValueError, IndexError, psutil.Error):
        return None
    return pid


def _ready(pgdata: Path) -> bool:
    try:
        lines = (pgdata / "postmaster.pid").read_text(encoding="utf-8").splitlines()
    except OSError:
        return False
    return len(lines) >= 8 and lines[7].strip() == "ready"


def restart(timeout: float = 60) -> int:
    """Start the server this process started again, after it died; return its new pid.

    Raises EmbeddedDatabaseError with PostgreSQL's own reason when it does not come up (orphaned
    backends of the dead server still holding its shared memory, a full disk...).
    """
    import time

    server = _STARTED[-1]
    pgdata = Path(server.pgdata)
    pid_file = pgdata / "postmaster.pid"
    if postmaster_pid(pgdata) is None:
        # The dead server's lock files: their pid may be a zombie not yet reaped, which
        # PostgreSQL takes for a live server. The shared memory interlock still guards the data.
        sockets = socket_dir(pgdata)  # read from the pid file, so before it goes
        for lock in [*sockets.glob(".s.PGSQL.*.lock"), pid_file]:
            lock.unlink(missing_ok=True)
    collected = _Collector()
    pg_logger = logging.getLogger("pgserver")
    pg_logger.addHandler(collected)
    pg_logger.propagate = False
    failure = ""
    try:
        with server._lock:  # pgserver's own inter-process lock
            server.ensure_postgres_running()
    except Exception as exc:  # pg_ctl may give up while recovery runs
        failure = collected.reason(pgdata / "log") or type(exc).__name__
    finally:
        pg_logger.removeHandler(collected)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = postmaster_pid(pgdata)
        if pid is not None and _ready(pgdata):
            return pid
        if pid is None and failure:
            break
        time.sleep(0.5)
    raise EmbeddedDatabaseError(failure or f"not ready within {timeout:.0f} s")


def stop() -> None:
    """Let go of every server this process started or joined."""
    while _STARTED:
        _STARTED.pop().cleanup()


_STARTED: list["PostgresServer"] = []
