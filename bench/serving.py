"""A web process served for a benchmark, as `make run` starts it: a free port, the process, and
its end (bench_api_clients.py, bench_sse_streams.py)."""

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator

from django.conf import settings


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def served(argv: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    """`argv` started in the project's folder, yielded once it accepts connections on `port`
    (at most 60 s), terminated (then killed) at the end."""
    process = subprocess.Popen(argv, cwd=settings.BASE_DIR)
    try:
        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the server exited ({process.returncode}): {argv}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline:
                raise SystemExit("the server did not start")
            time.sleep(0.2)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
