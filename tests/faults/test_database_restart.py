"""PostgreSQL restarted under `make run` (issue 24 req 1): one launched lexweb with the demo's
cluster (its fake backends, its GPU agent, a worker per board), its database SIGKILLed once and
started again by the launcher; then each kind of long-lived process is shown working again,
one test a kind. A process may reconnect or end and be restarted by the supervisor; either way
it must work again, and the GPU agent's reports must reach the cluster status again within two
of its intervals."""

import contextlib
import os
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from lexweb_dev import demo
from tests.faults.product import (
    FAULT_ENV,
    Outcome,
    Product,
    text_pdf,
    wait_document_ready,
    wait_for,
)
from tests.harness.ports import free_port_run
from tests.harness.product import artifacts_root, prepare_var, stop_database

pytestmark = pytest.mark.product  # launches the whole product (make run) and kills its database

AGENT_INTERVAL_SECONDS = 5  # the setting's default
# The cluster status is polled this often, so a report is seen at most this late.
POLL_SECONDS = 0.5
RUN_FINISHED = {"waiting_for_approval", "succeeded", "stopped_by_gate", "failed", "cancelled"}


@dataclass
class Restarted:
    product: Product
    back_at: datetime  # when the launcher said PostgreSQL was running again
    lawyer_token: str
    killed_pid: int
    # Seconds from `back_at` until every host's agent had reported again, as the cluster status
    # (the cluster page's source) shows it.
    first_report_seconds: float


@pytest.fixture(scope="module")
def restarted() -> Iterator[Restarted]:
    home = Path(tempfile.mkdtemp(prefix="lexweb-db-restart-"))
    home.chmod(0o755)  # the embedded PostgreSQL runs as another user (see tests/faults)
    product = Product(prepare_var(home / "var"))
    for key in ("LEXWEB_DEMO_DATA", "LEXWEB_CLUSTER_HEALTH_CRON"):
        product.env.pop(key, None)  # the product's own: the demo on, health checks on
    product.env.update(
        LEXWEB_DEMO_DATA="true",
        LEXWEB_DEMO_BACKEND_PORT=str(free_port_run(8)),
        LEXWEB_GPU_AGENT_INTERVAL_SECONDS=str(AGENT_INTERVAL_SECONDS),
        LEXWEB_CLUSTER_HEALTH_CRON="* * * * * */5",
    )
    assert FAULT_ENV["LEXWEB_DEMO_DATA"] == "false"  # what was overridden above
    try:
        product.start()
        wait_for("the demo's frozen packet", lambda: _demo_packet(product), 600, every=2)
        wait_for("every demo backend healthy", lambda: _backends_healthy(product), 180, every=2)
        wait_for("a GPU report", lambda: _agents_seen_after(product, None), 120, every=1)
        lawyer_token = product._make_token(demo.DEMO_LAWYER)
        killed = product.kill_database()  # waits for "PostgreSQL is running again"
        back_at, back = datetime.now(UTC), time.monotonic()
        wait_for(
            "every host's GPU agent reporting after the restart",
            lambda: _agents_seen_after(product, back_at),
            120,
            every=POLL_SECONDS,
        )
        first_report = time.monotonic() - back
        product.lines.append(f"test: every GPU agent reported {first_report:.1f} s after it.\n")
        yield Restarted(product, back_at, lawyer_token, killed, first_report)
    finally:
        product.close()
        stop_database(home / "var")
        kept = artifacts_root() / "products" / f"db-restart-{os.getpid()}.log"
        kept.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(OSError):
            shutil.copyfile(home / "launcher-output.log", kept)
        shutil.rmtree(home, ignore_errors=True)


def _demo_packet(product: Product) -> int | None:
    packet: int | None = product.one(
        "SELECT p.id FROM evidence_packet p JOIN cases_case c ON c.id = p.case_id"
        " WHERE c.number = %s AND p.status = 'frozen' ORDER BY p.id LIMIT 1",
        demo.DEMO_NUMBER,
    )
    return packet


def _backends_healthy(product: Product, since: datetime | None = None) -> bool:
    return bool(
        product.one(
            "SELECT count(*) > 0 AND bool_and(coalesce(h.state, '') = 'ok'"
            " AND (%s::timestamptz IS NULL OR h.checked_at > %s::timestamptz))"
            " FROM cluster_backend b LEFT JOIN cluster_backendhealth h ON h.backend_id = b.id"
            " WHERE b.enabled",
            since,
            since,
        )
    )


def _cluster_status(product: Product) -> dict[str, object] | None:
    with contextlib.suppress(httpx.TransportError), product.client(timeout=10) as client:
        answer = client.get("/cluster/status")
        if answer.status_code == 200:
            status: dict[str, object] = answer.json()
            return status
    return None


def _agents_seen_after(product: Product, moment: datetime | None) -> bool:
    """Every host of the cluster status has a fresh report (after `moment`, when given)."""
    status = _cluster_status(product)
    hosts = status.get("hosts") if status else None
    if not isinstance(hosts, list) or not hosts:
        return False
    for host in hosts:
        seen = host.get("agent_seen_at")
        if seen is None or host.get("stale"):
            return False
        if moment is not None and datetime.fromisoformat(seen) <= moment:
            return False
    return True


def test_the_database_was_really_killed_and_started_again(restarted: Restarted) -> None:
    said = "".join(restarted.product.lines)
    assert f"PostgreSQL (pid {restarted.killed_pid}) stopped unexpectedly" in said
    new_pid = restarted.product.processes().get("database", {}).get("pid")
    assert new_pid and new_pid != restarted.killed_pid


def test_the_web_server_answers_from_the_database_again(restarted: Restarted) -> None:
    product = restarted.product

    def ready() -> bool:
        with contextlib.suppress(httpx.TransportError):
            return httpx.get(f"{product.base}/readyz", timeout=10, trust_env=False).is_success
        return False

    wait_for("/readyz ok", ready, 120, every=1)
    listed = product.api("GET", "/cases")
    assert listed.status_code == 200, listed.text
    assert listed.headers["content-type"].startswith("application/json")


def test_the_cpu_worker_reads_an_upload_again(restarted: Restarted) -> None:
    product = restarted.product
    case_id = product.new_case("After the database restart")
    marker = uuid.uuid4().hex[:10]
    (document_id,) = product.upload(case_id, [("after-restart.pdf", text_pdf(2, marker))])
    outcome = Outcome()
    wait_document_ready(product, document_id, outcome)
    assert outcome.problems() == []
    assert product.document_state(document_id) == ("ready", 2, 2)


def test_the_gpu_agent_reports_reach_the_cluster_status_within_two_intervals(
    restarted: Restarted,
) -> None:
    limit = 2 * AGENT_INTERVAL_SECONDS + POLL_SECONDS
    assert restarted.first_report_seconds <= limit, restarted.first_report_seconds
    # And it goes on reporting: a later report than the first one after the restart.
    seen = datetime.now(UTC)
    wait_for(
        "the next GPU report",
        lambda: _agents_seen_after(restarted.product, seen),
        2 * AGENT_INTERVAL_SECONDS + 5,
        every=POLL_SECONDS,
    )


def test_the_cluster_worker_checks_the_demo_backends_again(restarted: Restarted) -> None:
    product = restarted.product
    wait_for(
        "a health check of every demo backend after the restart",
        lambda: _backends_healthy(product, restarted.back_at),
        120,
        every=1,
    )


def test_the_board_workers_and_demo_backends_draft_a_motion_again(restarted: Restarted) -> None:
    product = restarted.product
    wait_for("every demo backend healthy", lambda: _backends_healthy(product), 120, every=1)
    case_id = product.one("SELECT id FROM cases_case WHERE number = %s", demo.DEMO_NUMBER)
    packet_id = _demo_packet(product)
    headers = {"Authorization": f"Bearer {restarted.lawyer_token}"}
    runs = f"{product.base}/api/v1/cases/{case_id}/runs"
    body = {
        "kind": "motion",
        "packet_id": packet_id,
        "instructions": "After the database restart: the delivery dispute, from the record.",
    }
    answer = httpx.post(runs, json=body, headers=headers, timeout=60, trust_env=False)
    assert answer.status_code == 201, answer.text
    run_id = answer.json()["id"]

    def finished() -> dict[str, object] | None:
        with contextlib.suppress(httpx.TransportError):
            read = httpx.get(f"{runs}/{run_id}", headers=headers, timeout=30, trust_env=False)
            run: dict[str, object] = read.json()
            return run if run.get("status") in RUN_FINISHED else None
        return None

    run = wait_for(f"run {run_id} to finish", finished, 300, every=1)
    # The demo's motion stops for a lawyer's approval once every stage ran on its backend.
    assert run["status"] == "waiting_for_approval", run
    stages = run.get("stages")
    assert isinstance(stages, list) and stages
    assert {stage["status"] for stage in stages} <= {"succeeded", "skipped"}, stages


def test_every_process_of_the_launcher_is_running(restarted: Restarted) -> None:
    children = restarted.product.processes().get("children", {})
    expected = {"web", "cpu-worker", "cluster-worker", "demo-backends", "demo-gpu-agent"}
    assert expected <= set(children), sorted(children)
    assert any(name.startswith("host-") for name in children), sorted(children)
    for name, entry in children.items():
        pid = entry.get("pid")
        assert pid, (name, entry)
        os.kill(pid, 0)  # raises when it is gone
