"""A real llama.cpp server for the tests: llama.cpp's own server code from the `xllamacpp` wheel
(lexweb_dev/llamacpp.py, the process the demo's real servers run too), serving the tiny GGUF of
`tiny_gguf` on 127.0.0.1, on the CPU, in a process of its own.

`llamacpp` is a session fixture (one server per test session, per xdist worker); a test that
needs other settings, or stops the server, starts its own with `running_llamacpp(...)`. Tests
that use either are marked `llamacpp`. The server is deterministic at temperature 0 only for
calls made one at a time (concurrent ones share batches).
"""

import contextlib
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from django.conf import settings

from lexweb_dev.llamacpp import SERVER_ENV, server_command
from tests.harness.ports import free_port_below_ephemeral
from tests.harness.tiny_gguf import write_tiny_gguf
from tests.harness.waiting import wait_until

BASE_DIR = Path(settings.BASE_DIR)
# What the session's server is started with: 2 slots of 512 tokens each.
CONTEXT = 1024
SLOTS = 2
ALIAS = "tiny"
START_TIMEOUT = 60
STOP_TIMEOUT = 10


@dataclass(frozen=True)
class LlamaCppServer:
    """A running server: its address, the settings it was started with, and its log."""

    base_url: str
    model: Path
    context_per_slot: int
    slots: int
    alias: str
    log: Path
    process: subprocess.Popen[bytes]

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _ready(server: LlamaCppServer) -> bool:
    if server.process.poll() is not None:
        raise AssertionError(
            f"the llama.cpp server exited ({server.process.returncode}) before it was ready; "
            f"its output was:\n{server.output()[-6000:]}"
        )
    try:
        return httpx.get(f"{server.base_url}/health", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def stop_llamacpp(server: LlamaCppServer) -> None:
    """SIGTERM (the server process exits at once, open requests or not), SIGKILL if it did not."""
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


@contextlib.contextmanager
def running_llamacpp(
    model: Path,
    log: Path,
    *,
    context: int = CONTEXT,
    slots: int = SLOTS,
    alias: str = ALIAS,
    port: int | None = None,
) -> Iterator[LlamaCppServer]:
    """Serve `model` on `port`, or a free port (below the ephemeral range, so that a test may
    restart it on the same port), until the block ends; ready (/health 200) when the block
    starts."""
    port = port or free_port_below_ephemeral()
    command = server_command(model=model, port=port, context=context, slots=slots, alias=alias)
    env = {**os.environ, **SERVER_ENV}
    with log.open("ab") as output:
        process = subprocess.Popen(
            command, cwd=BASE_DIR, env=env, stdout=output, stderr=subprocess.STDOUT
        )
    server = LlamaCppServer(
        base_url=f"http://127.0.0.1:{port}",
        model=model,
        context_per_slot=context // slots,
        slots=slots,
        alias=alias,
        log=log,
        process=process,
    )
    try:
        wait_until(lambda: _ready(server), START_TIMEOUT, "the llama.cpp server's /health")
        yield server
    finally:
        stop_llamacpp(server)


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model, written once per session."""
    return write_tiny_gguf(tmp_path_factory.mktemp("llamacpp") / "tiny.gguf")


@pytest.fixture(scope="session")
def llamacpp(tiny_gguf: Path) -> Iterator[LlamaCppServer]:
    """The session's real llama.cpp server: the tiny model as "tiny", 2 slots of 512 tokens."""
    with running_llamacpp(tiny_gguf, tiny_gguf.with_name("server.log")) as server:
        yield server
