"""`make run` itself (the launcher, its embedded PostgreSQL, its workers) seeds the demo case's
documents, reads them on its cpu worker and freezes their packet, without holding up the start."""

import contextlib
import secrets
import signal
import socket
from pathlib import Path

import pytest

from tests.harness.product import prepare_var
from tests.running import START_TIMEOUT, free_port, launch, launcher_env, read_until

pytestmark = pytest.mark.product  # launches the whole product (make run)


def _free_port_run(count: int) -> int:
    for base in range(20_000 + secrets.randbelow(10_000), 32_000, count):
        try:
            with contextlib.ExitStack() as probes:
                for port in range(base, base + count):
                    probe = probes.enter_context(socket.socket())
                    probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise AssertionError("no run of free ports")


def test_make_run_seeds_the_demo_documents_and_freezes_their_packet(var_dir: Path) -> None:
    prepare_var(var_dir)  # a launch, not a first start: migrated, static files collected
    env = launcher_env(var_dir, free_port(), LEXWEB_DEMO_BACKEND_PORT=str(_free_port_run(5)))
    process = launch(["run"], env)
    try:
        started = read_until(process, "Demo case: 5 documents uploaded", "running at",
                             timeout=START_TIMEOUT)  # fmt: skip
        ready = "The demo case DEMO-2026-001 is ready"
        # The cpu worker may finish the seeding before the web server says it is running.
        seeded = started if ready in started else read_until(process, ready, timeout=120)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=90)
    rest = process.stdout.read() if process.stdout else ""
    assert "Bates numbers from ACME000001 (production ACME001)" in seeded
    assert "packet “Delivery dispute: the record” frozen (6 pages)" in seeded
    assert "Traceback" not in started + seeded + rest
    assert process.returncode == 0
