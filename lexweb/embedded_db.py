"""The embedded PostgreSQL used when DATABASE_URL is unset.

`pgserver` ships PostgreSQL 16 binaries on PyPI and starts one in a data folder under `var/`,
listening only on a Unix socket. Settings only need to know where the socket is
(`socket_dir`); starting and stopping is the launcher's job (`start`, `stop`).
"""

import logging
from pathlib import Path
from typing import TYPE_CHECKING

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
    try:
        server = pgserver.get_server(pgdata, cleanup_mode="stop")
    except Exception as exc:
        log = pgdata / "log"
        raise EmbeddedDatabaseError(
            f"The embedded PostgreSQL in {pgdata} did not start ({type(exc).__name__}). "
            f"Read {log}, or set DATABASE_URL to use another PostgreSQL."
        ) from exc
    _STARTED.append(server)
    exists = server.psql(f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE_NAME}';")
    if "(1 row)" not in exists:
        server.psql(f"CREATE DATABASE {DATABASE_NAME};")
    return server.get_uri(DATABASE_NAME)


def stop() -> None:
    """Let go of every server this process started or joined."""
    while _STARTED:
        _STARTED.pop().cleanup()


_STARTED: list["PostgresServer"] = []
