"""Start `python -m lexweb.launcher ...` (what `make run` runs) from tests, in a private var
folder with its own embedded PostgreSQL and port."""

import os
import queue
import secrets
import socket
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

from django.conf import settings

BASE_DIR = Path(settings.BASE_DIR)
START_TIMEOUT = 120
ADMIN_PASSWORD = "Launcher-test-password-1"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def free_port_below_ephemeral() -> int:
    """A free port chosen at random in 20000-32000, below the ephemeral range (32768 up), so that
    no outgoing connection made meanwhile (by this or any process) can take it, for instance
    while a server that listens on it is restarted."""
    start = 20_000 + secrets.randbelow(12_000)
    for offset in range(12_000):
        port = 20_000 + (start - 20_000 + offset) % 12_000
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise AssertionError("no free port in 20000-32000")


def launcher_env(var_dir: Path, port: int, **extra: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"DATABASE_URL", "XDG_RUNTIME_DIR", "LEXWEB_VAR_DIR", "REDIS_URL"}
    }
    env.update(
        LEXWEB_VAR_DIR=str(var_dir),
        LEXWEB_PORT=str(port),
        LEXWEB_ADMIN_PASSWORD=ADMIN_PASSWORD,
        PYTHONUNBUFFERED="1",
        **extra,
    )
    return env


def launch(args: list[str], env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "lexweb.launcher", *args],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def read_until(
    process: subprocess.Popen[str], *needles: str, timeout: float = START_TIMEOUT
) -> str:
    """Read the launcher's output until every needle has appeared (each on some line); fail on
    exit or timeout."""
    missing = set(needles)
    assert process.stdout is not None
    seen: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = _next_line(process, timeout=max(0.0, deadline - time.monotonic()))
        if not line:  # timed out (None) or the output ended ("")
            break
        seen.append(line)
        missing = {needle for needle in missing if needle not in line}
        if not missing:
            return "".join(seen)
    raise AssertionError(f"{sorted(missing)!r} not seen; output was:\n{''.join(seen)}")


# A line being read for a process when its read_until timed out: the next call takes it over.
_pending: "weakref.WeakKeyDictionary[subprocess.Popen[str], queue.Queue[str]]" = (
    weakref.WeakKeyDictionary()
)


def _next_line(process: subprocess.Popen[str], *, timeout: float) -> str | None:
    """The next line of the process's output, "" at its end, None if none came in time.

    A blocking readline on a thread rather than select() on the pipe: the text wrapper reads
    ahead, so lines it already holds would never make the pipe readable again, and a launcher
    that printed two lines at once would seem to have printed one.
    """
    box = _pending.pop(process, None)
    if box is None:
        box = queue.Queue(maxsize=1)
        stdout = process.stdout
        assert stdout is not None
        threading.Thread(target=lambda: box.put(stdout.readline()), daemon=True).start()
    try:
        return box.get(timeout=timeout)
    except queue.Empty:
        _pending[process] = box
        return None


def one_shot(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lexweb.launcher", *args],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
