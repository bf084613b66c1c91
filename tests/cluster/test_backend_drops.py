"""Issue 29, requirement 7: a backend that dropped a stream, or was away for a moment, stays in
routing (it leaves only after LEXWEB_BACKEND_FAILURES_TO_LEAVE failures in a row), so the stage
runs again on the same deployment once the server is back, or on a fallback."""

import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from django.utils import timezone

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.backends.base import BackendUnavailable, Message
from apps.cluster.models import BackendHealth, CallRecord, Role
from apps.cluster.services import dispatch, health
from apps.drafting.models import Run
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.cluster.dispatch_fixtures import backend_make, deployment_make, route_make
from tests.conftest import BASE_DIR
from tests.drafting import run_fixtures as rf
from tests.harness.ports import free_port_below_ephemeral
from tests.harness.waiting import wait_until

HELLO: list[Message] = [{"role": "user", "content": "Hello there."}]


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_stage_whose_stream_dropped_runs_again_on_the_same_deployment_once_it_is_back(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running() as site:
        drafter = site.fakes["drafter"]
        # The server drops the drafter's stream after 3 tokens, once, and serves again.
        drafter.settings.disconnect_after_tokens = 3
        drafter.settings.fault_streams = 1
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    stage = run.stages.get(name="drafter")
    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    assert stage.attempt == 2 and stage.deployment == site.deployments["drafter"]
    assert stage.error.startswith("Attempt 1 failed:")
    outcomes = list(
        CallRecord.objects.filter(stage=stage).order_by("pk").values_list("outcome", flat=True)
    )
    assert outcomes == [CallRecord.Outcome.ERROR, CallRecord.Outcome.OK]
    row = BackendHealth.objects.get(pk=site.deployments["drafter"].backend_id)
    assert (row.state, row.consecutive_failures) == (BackendHealth.State.OK, 0)


@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.asyncio
async def test_a_server_away_for_a_moment_is_called_again_when_it_is_back() -> None:
    settings = FakeSettings(kind="llama_cpp", tokens_per_second=5000.0)
    async with FakeBackend(settings) as first:
        port = first.port
        backend = await sync_to_async(backend_make)(base_url=first.base_url)
        deployment = await sync_to_async(deployment_make)(backend)
        await sync_to_async(route_make)(Role.GATE, deployment)
        await dispatch.chat_for_role(role=Role.GATE, messages=HELLO, max_tokens=2)

    # Stopped (killed, restarting): the call fails, and the backend stays routable.
    with pytest.raises(BackendUnavailable):
        await dispatch.chat_for_role(role=Role.GATE, messages=HELLO, max_tokens=2)
    row = await BackendHealth.objects.aget(pk=backend.pk)
    assert (row.state, row.consecutive_failures) == (BackendHealth.State.OK, 1)

    async with FakeBackend(settings, port=port) as back:
        result = await dispatch.chat_for_role(role=Role.GATE, messages=HELLO, max_tokens=2)
        assert result.deployment_id == deployment.pk and back.stats.streams_finished == 1
    row = await BackendHealth.objects.aget(pk=backend.pk)
    assert (row.state, row.consecutive_failures) == (BackendHealth.State.OK, 0)


@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.asyncio
async def test_three_refused_connections_take_it_out_until_a_check_finds_it_back() -> None:
    settings = FakeSettings(kind="llama_cpp", tokens_per_second=5000.0)
    async with FakeBackend(settings) as first:
        port = first.port
        backend = await sync_to_async(backend_make)(base_url=first.base_url)
        deployment = await sync_to_async(deployment_make)(backend)
        await sync_to_async(route_make)(Role.GATE, deployment)

    for _ in range(3):
        with pytest.raises(BackendUnavailable):
            await dispatch.chat(deployment=deployment.pk, messages=HELLO, max_tokens=2)
    row = await BackendHealth.objects.aget(pk=backend.pk)
    # No answer at all: down (not a cooldown), out of routing.
    assert (row.state, row.cooldown_until) == (BackendHealth.State.DOWN, None)
    assert await sync_to_async(dispatch.deployments_for_role)(Role.GATE) == []

    async with FakeBackend(settings, port=port):
        await health.backend_health_check(backend_id=backend.pk)
        routed = await sync_to_async(dispatch.deployments_for_role)(Role.GATE)
    assert [d.pk for d in routed] == [deployment.pk]


# --- A real llama.cpp server, stopped and started again on its port -----------------------------


def _serve(model: Path, port: int, log: Path) -> "subprocess.Popen[bytes]":
    """The real server (tests/harness/llamacpp_server.py) on `port`, once /health answers 200."""
    command = [
        sys.executable, "-m", "tests.harness.llamacpp_server", "--model", str(model),
        "--port", str(port), "--ctx", "512", "--parallel", "2", "--alias", "tiny",
    ]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OMP_WAIT_POLICY": "PASSIVE"}
    with log.open("ab") as output:
        process = subprocess.Popen(command, cwd=BASE_DIR, env=env, stdout=output, stderr=output)

    def ready() -> bool:
        assert process.poll() is None, log.read_text(errors="replace")[-3000:]
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    wait_until(ready, 60, "the llama.cpp server's /health")
    return process


@pytest.mark.llamacpp
@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.slow
def test_a_real_server_killed_and_started_again_is_routed_again_at_the_next_check(
    tiny_gguf: Path,
) -> None:
    port = free_port_below_ephemeral()
    log = tiny_gguf.with_name(f"restart-{port}.log")
    backend = backend_make(base_url=f"http://127.0.0.1:{port}")
    deployment = deployment_make(backend, model="tiny")
    route_make(Role.GATE, deployment)
    check = async_to_sync(health.backend_health_check)
    call = async_to_sync(dispatch.chat_for_role)
    start = health.next_check_at(timezone.now())

    first = _serve(tiny_gguf, port, log)
    try:
        assert check(backend_id=backend.pk, now=start).state == BackendHealth.State.OK
    finally:
        first.send_signal(signal.SIGTERM)
        first.wait(10)
    # Killed: the call that finds it gone leaves it routable; the next check takes it out,
    # as down (not cooling: nothing answered).
    with pytest.raises(BackendUnavailable):
        call(role=Role.GATE, messages=HELLO, max_tokens=2)
    assert dispatch.deployments_for_role(Role.GATE) == [deployment]
    gone = check(backend_id=backend.pk, now=start + timedelta(seconds=30))
    assert (gone.state, gone.cooldown_until) == (BackendHealth.State.DOWN, None)
    assert dispatch.deployments_for_role(Role.GATE) == []

    again = _serve(tiny_gguf, port, log)
    try:
        back = check(backend_id=backend.pk, now=start + timedelta(seconds=60))
        assert (back.state, back.consecutive_failures) == (BackendHealth.State.OK, 0)
        result = call(role=Role.GATE, messages=HELLO, max_tokens=2)
    finally:
        again.send_signal(signal.SIGTERM)
        again.wait(10)
    assert (result.deployment_id, result.completion_tokens) == (deployment.pk, 2)
