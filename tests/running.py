"""Start `python -m lexweb.launcher ...` (what `make run` runs) from tests, in a private var
folder with its own embedded PostgreSQL and port."""

import os
import secrets
import selectors
import socket
import subprocess
import sys
import time
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
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = process.stdout.readline()
            if not line:
                break
            seen.append(line)
            missing = {needle for needle in missing if needle not in line}
            if not missing:
                return "".join(seen)
    raise AssertionError(f"{sorted(missing)!r} not seen; output was:\n{''.join(seen)}")


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
