"""The health registry, against real fake backends over HTTP (and a closed port, and a server
that never answers). Time moves by passing `now`, never by sleeping."""

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.conf import settings as django_settings
from django.utils import timezone
from procrastinate.contrib.django import app as procrastinate_app
from procrastinate.contrib.django.models import ProcrastinateJob
from procrastinate.periodic import PeriodicDeferrer, PeriodicRegistry

from apps.cluster.models import Backend, BackendHealth
from apps.cluster.services import health
from apps.cluster.tasks import HEALTH_CHECK_CRON, backends_health_check_task
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.cluster.dispatch_fixtures import (
    backend_make,
    chat_requests,
    closed_port_url,
    cluster_events,
    deployment_make,
    silent_server,
)

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

State = BackendHealth.State


async def _backend(fake_or_url: FakeBackend | str, **kwargs: object) -> Backend:
    if isinstance(fake_or_url, FakeBackend):
        url, kind = fake_or_url.base_url, fake_or_url.settings.kind
        kwargs.setdefault("kind", kind)
    else:
        url = fake_or_url
    backend = await sync_to_async(backend_make)(base_url=url, **kwargs)  # type: ignore[arg-type]
    await sync_to_async(deployment_make)(backend)
    return backend


@pytest.mark.asyncio
async def test_healthy_llama_server_is_ok_and_proven_by_a_one_token_probe(
    fake_llama: FakeBackend,
) -> None:
    backend = await _backend(fake_llama, slots=2)

    row = await health.backend_health_check(backend_id=backend.pk)

    assert row.state == State.OK
    assert (row.slots_total, row.slots_busy, row.consecutive_failures) == (2, 0, 0)
    assert row.last_probe_at is not None and row.last_success_at == row.last_probe_at
    [probe] = chat_requests(fake_llama)
    assert probe["max_tokens"] == 1
    stored = await BackendHealth.objects.aget(pk=backend.pk)
    assert stored.state == State.OK


@pytest.mark.asyncio
async def test_healthy_ollama_is_ok_and_probed_with_the_deployments_num_ctx(
    fake_ollama: FakeBackend,
) -> None:
    backend = await _backend(fake_ollama, kind=Backend.Kind.OLLAMA)

    row = await health.backend_health_check(backend_id=backend.pk)

    assert row.state == State.OK
    [probe] = chat_requests(fake_ollama)
    # deployment_make: context_size 8192 over 2 slots. The same num_ctx as real calls, so the
    # probe never makes Ollama reload the model.
    assert probe["options"]["num_ctx"] == 4096


@pytest.mark.asyncio
async def test_loading_model_is_its_own_state_not_a_failure() -> None:
    async with FakeBackend(FakeSettings(kind="llama_cpp", loading_seconds=600)) as fake:
        backend = await _backend(fake)
        row = await health.backend_health_check(backend_id=backend.pk)

        assert row.state == State.LOADING
        assert row.consecutive_failures == 0
        assert row.message
        assert chat_requests(fake) == []


@pytest.mark.asyncio
async def test_unreachable_backend_is_down_with_a_message_and_its_configuration_unchanged() -> None:
    url = closed_port_url()
    backend = await _backend(url)

    row = await health.backend_health_check(backend_id=backend.pk)

    assert row.state == State.DOWN
    assert row.consecutive_failures == 1
    assert row.message and len(row.message) <= 300
    after = await Backend.objects.aget(pk=backend.pk)
    assert (after.base_url, after.enabled, after.slots) == (url, True, backend.slots)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_backend_that_never_answers_is_down_within_the_liveness_limit() -> None:
    async with silent_server() as url:
        backend = await _backend(url)
        started = timezone.now()
        row = await health.backend_health_check(backend_id=backend.pk)

    assert row.state == State.DOWN
    assert row.message
    assert timezone.now() - started < timedelta(seconds=health.LIVENESS_DEADLINE_SECONDS + 5)


@pytest.mark.asyncio
async def test_server_error_on_generation_marks_the_backend_down_with_its_message() -> None:
    settings = FakeSettings(kind="llama_cpp", status_error=500, tokens_per_second=5000)
    async with FakeBackend(settings) as fake:
        backend = await _backend(fake)
        row = await health.backend_health_check(backend_id=backend.pk)

    assert row.state == State.DOWN
    assert "probe" in row.message and "tiny" in row.message
    assert row.last_probe_at is not None and row.last_success_at is None


@pytest.mark.asyncio
async def test_three_failed_checks_mean_a_cooldown_counted_from_the_schedule() -> None:
    settings = FakeSettings(kind="llama_cpp", status_error=503, tokens_per_second=5000)
    async with FakeBackend(settings) as fake:
        backend = await _backend(fake)
        start = health.next_check_at(timezone.now())
        states = []
        for step in range(3):
            # Each job started 20 s after its scheduled time (a busy worker): the cooldown is
            # counted from the schedule all the same.
            tick = start + timedelta(seconds=30 * step)
            row = await health.backend_health_check(
                backend_id=backend.pk, tick=tick, now=tick + timedelta(seconds=20)
            )
            states.append((row.state, row.consecutive_failures))
        assert states == [(State.DOWN, 1), (State.DOWN, 2), (State.COOLDOWN, 3)]
        assert row.cooldown_until == start + timedelta(seconds=60) + health.COOLDOWN
        assert "3 failures in a row" in row.message
        generations = len(chat_requests(fake))

        # During the cooldown the check asks liveness only: nothing is generated.
        during = await health.backend_health_check(
            backend_id=backend.pk, now=start + timedelta(seconds=90)
        )
        assert during.state == State.COOLDOWN
        assert len(chat_requests(fake)) == generations

        # The check scheduled at the cooldown's end decides, however late its job starts; the
        # backend has recovered meanwhile: one check clears it.
        fake.settings.status_error = None
        end = start + timedelta(seconds=60) + health.COOLDOWN
        after = await health.backend_health_check(
            backend_id=backend.pk, tick=end, now=end + timedelta(seconds=25)
        )
        assert after.state == State.OK
        assert (after.consecutive_failures, after.cooldown_until, after.message) == (0, None, "")


@pytest.mark.asyncio
async def test_a_failure_after_the_cooldown_starts_another_cooldown() -> None:
    settings = FakeSettings(kind="llama_cpp", status_error=500, tokens_per_second=5000)
    async with FakeBackend(settings) as fake:
        backend = await _backend(fake)
        start = health.next_check_at(timezone.now())
        for step in range(3):
            await health.backend_health_check(
                backend_id=backend.pk, now=start + timedelta(minutes=step)
            )
        later = start + timedelta(minutes=2) + health.COOLDOWN
        row = await health.backend_health_check(backend_id=backend.pk, now=later)

    assert row.state == State.COOLDOWN
    assert row.consecutive_failures == 4
    assert row.cooldown_until == later + health.COOLDOWN


@pytest.mark.asyncio
async def test_a_server_that_does_not_answer_is_down_never_cooling_and_back_at_the_next_check() -> (
    None
):
    """A server not started yet (or killed) is checked at every check, however many failed:
    started, it is routable after the next one (issue 29: not two minutes later)."""
    async with FakeBackend(FakeSettings(kind="llama_cpp", tokens_per_second=5000)) as probe:
        port = probe.port
    backend = await _backend(f"http://127.0.0.1:{port}")
    start = health.next_check_at(timezone.now())
    for step in range(5):
        row = await health.backend_health_check(
            backend_id=backend.pk, now=start + timedelta(seconds=30 * step)
        )
        assert (row.state, row.cooldown_until) == (State.DOWN, None)
    assert row.consecutive_failures == 5

    settings = FakeSettings(kind="llama_cpp", tokens_per_second=5000)
    async with FakeBackend(settings, port=port) as started:
        row = await health.backend_health_check(
            backend_id=backend.pk, now=start + timedelta(seconds=150)
        )
        assert (row.state, row.consecutive_failures) == (State.OK, 0)
        assert len(chat_requests(started)) == 1  # it generated before it was called healthy
        routed = await sync_to_async(_routable)(backend)
    assert routed


@pytest.mark.asyncio
async def test_a_restarted_server_ends_its_cooldown_at_the_next_check() -> None:
    """In cooldown, a check that finds the server gone makes it down, and the server back
    loading is `loading`: the cooldown of the process that failed does not outlive it."""
    settings = FakeSettings(kind="llama_cpp", status_error=500, tokens_per_second=5000)
    async with FakeBackend(settings) as sick:
        port = sick.port
        backend = await _backend(sick)
        start = health.next_check_at(timezone.now())
        for step in range(3):
            row = await health.backend_health_check(
                backend_id=backend.pk, now=start + timedelta(seconds=30 * step)
            )
        assert row.state == State.COOLDOWN
    gone = await health.backend_health_check(
        backend_id=backend.pk, now=start + timedelta(seconds=90)
    )
    assert (gone.state, gone.cooldown_until) == (State.DOWN, None)

    restarted = FakeSettings(kind="llama_cpp", tokens_per_second=5000)
    async with FakeBackend(restarted, port=port):
        back = await health.backend_health_check(
            backend_id=backend.pk, now=start + timedelta(seconds=120)
        )
    assert (back.state, back.consecutive_failures) == (State.OK, 0)


def _routable(backend: Backend) -> bool:
    from apps.cluster.models import RoleRoute
    from apps.cluster.services import dispatch

    deployment = backend.deployments.get()
    RoleRoute.objects.get_or_create(role="drafter", position=1, deployment=deployment)
    return [d.pk for d in dispatch.deployments_for_role("drafter")] == [deployment.pk]


@pytest.mark.asyncio
async def test_probe_runs_only_when_nothing_generated_within_the_probe_period(
    fake_llama: FakeBackend,
) -> None:
    backend = await _backend(fake_llama)
    start = timezone.now()

    await health.backend_health_check(backend_id=backend.pk, now=start)
    assert len(chat_requests(fake_llama)) == 1
    await health.backend_health_check(backend_id=backend.pk, now=start + timedelta(minutes=1))
    assert len(chat_requests(fake_llama)) == 1

    # Real traffic succeeded at +4 min: no probe at +6 min, one at +9 min.
    await sync_to_async(health.backend_call_succeeded)(
        backend_id=backend.pk, now=start + timedelta(minutes=4)
    )
    await health.backend_health_check(backend_id=backend.pk, now=start + timedelta(minutes=6))
    assert len(chat_requests(fake_llama)) == 1
    row = await health.backend_health_check(backend_id=backend.pk, now=start + timedelta(minutes=9))
    assert len(chat_requests(fake_llama)) == 2
    assert row.last_success_at == start + timedelta(minutes=9)


@pytest.mark.asyncio
async def test_api_key_never_appears_in_the_registry_message() -> None:
    secret = "sk-lexweb-correct-key-4242"
    wrong = "sk-lexweb-wrong-key-1717"
    settings = FakeSettings(kind="llama_cpp", api_key=secret, tokens_per_second=5000)
    async with FakeBackend(settings) as fake:
        refused = await _backend(fake, api_key=wrong, name="wrong key")
        accepted = await _backend(fake, api_key=secret, name="right key")
        async with cluster_events() as receive:
            bad = await health.backend_health_check(backend_id=refused.pk)
            event = await receive()
        good = await health.backend_health_check(backend_id=accepted.pk)

    assert bad.state == State.DOWN and bad.message
    assert good.state == State.OK
    for text in (bad.message, str(event)):
        assert secret not in text and wrong not in text


@pytest.mark.asyncio
async def test_a_changed_row_is_published_to_the_dashboard(fake_llama: FakeBackend) -> None:
    backend = await _backend(fake_llama)
    async with cluster_events() as receive:
        row = await health.backend_health_check(backend_id=backend.pk)
        event = await receive()

    assert event == {
        "type": "cluster.backend_health",
        "backend_id": backend.pk,
        "state": "ok",
        "message": "",
        "slots_total": 2,
        "slots_busy": 0,
        "checked_at": row.checked_at.isoformat() if row.checked_at else None,
    }


@pytest.mark.asyncio
async def test_one_failed_call_leaves_the_backend_routable_three_take_it_out(
    fake_llama: FakeBackend,
) -> None:
    backend = await _backend(fake_llama)
    await health.backend_health_check(backend_id=backend.pk)
    for failures in (1, 2):
        await sync_to_async(health.backend_call_failed)(
            backend_id=backend.pk, message="The server answered 500."
        )
        row = await BackendHealth.objects.aget(pk=backend.pk)
        assert (row.state, row.consecutive_failures) == (State.OK, failures)
        assert await sync_to_async(_routable)(backend)
    await sync_to_async(health.backend_call_failed)(
        backend_id=backend.pk, message="The server answered 500."
    )
    row = await BackendHealth.objects.aget(pk=backend.pk)
    assert (row.state, row.consecutive_failures) == (State.COOLDOWN, 3)
    assert not await sync_to_async(_routable)(backend)

    await sync_to_async(health.backend_call_succeeded)(backend_id=backend.pk)
    row = await BackendHealth.objects.aget(pk=backend.pk)
    assert (row.state, row.consecutive_failures, row.cooldown_until) == (State.OK, 0, None)


@pytest.mark.asyncio
async def test_check_all_covers_every_enabled_backend_and_skips_disabled_ones(
    fake_llama: FakeBackend, fake_ollama: FakeBackend
) -> None:
    llama = await _backend(fake_llama, board="board-a")
    ollama = await _backend(fake_ollama, board="board-b", kind=Backend.Kind.OLLAMA)
    dead = await _backend(closed_port_url(), board="board-c")
    disabled = await _backend(closed_port_url(), board="board-d")
    await Backend.objects.filter(pk=disabled.pk).aupdate(enabled=False)

    rows = await health.backends_health_check_all()

    states = {row.backend_id: row.state for row in rows}
    assert states == {llama.pk: State.OK, ollama.pk: State.OK, dead.pk: State.DOWN}
    assert not await BackendHealth.objects.filter(pk=disabled.pk).aexists()


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_hung_backend_delays_nobody_elses_row(fake_llama: FakeBackend) -> None:
    healthy = await _backend(fake_llama, board="board-a")
    async with silent_server() as url:
        hung = await _backend(url, board="board-b")
        checking = asyncio.create_task(health.backends_health_check_all())
        async with asyncio.timeout(health.LIVENESS_DEADLINE_SECONDS):
            while not await BackendHealth.objects.filter(pk=healthy.pk, state=State.OK).aexists():
                assert not checking.done()
                await asyncio.sleep(0.01)
        assert not checking.done()  # the hung backend's check is still waiting
        rows = await checking

    assert {row.backend_id: row.state for row in rows} == {
        healthy.pk: State.OK,
        hung.pk: State.DOWN,
    }


def test_periodic_job_as_a_worker_defers_it_runs_and_writes_the_registry(
    run_jobs: Callable[[], None],
) -> None:
    # The schedule as a worker's periodic deferrer reads it, on a private registry so that
    # no other test's worker starts deferring health checks.
    registry = PeriodicRegistry()
    registry.register_task(
        task=backends_health_check_task,
        cron="* * * * * */30",
        periodic_id="test",
        configure_kwargs={},
    )
    deferrer = PeriodicDeferrer(registry=registry)

    with FakeBackend.in_thread(FakeSettings(kind="llama_cpp", tokens_per_second=5000)) as fake:
        backend = backend_make(base_url=fake.base_url)
        deployment_make(backend)
        dead = backend_make(base_url=closed_port_url(), board="board-b")

        async def defer_like_a_worker() -> None:
            async with procrastinate_app.open_async():
                await deferrer.defer_jobs(deferrer.get_previous_tasks(at=time.time()))

        with procrastinate_app.replace_connector(
            procrastinate_app.connector.get_worker_connector()
        ):
            asyncio.run(defer_like_a_worker())
        [job] = ProcrastinateJob.objects.filter(task_name="cluster.health_check")
        assert (job.queue_name, job.status) == ("cluster", "todo")
        run_jobs()

    job.refresh_from_db()
    assert job.status == "succeeded"
    assert BackendHealth.objects.get(pk=backend.pk).state == State.OK
    assert BackendHealth.objects.get(pk=dead.pk).state == State.DOWN


def test_the_worker_schedule_follows_the_setting() -> None:
    # The default schedule, read from settings (no environment override in tests).
    assert HEALTH_CHECK_CRON == django_settings.LEXWEB_CLUSTER_HEALTH_CRON == "* * * * * */30"
    scheduled = {
        (periodic.task.name, periodic.cron)
        for periodic in procrastinate_app.periodic_registry.periodic_tasks.values()
    }
    expected = {("cluster.health_check", HEALTH_CHECK_CRON)} if HEALTH_CHECK_CRON else set()
    assert {entry for entry in scheduled if entry[0] == "cluster.health_check"} == expected


_NO_ARGUMENT = object()


@pytest.mark.parametrize(
    "timestamp",
    ["yesterday", _NO_ARGUMENT, True, None, 1.5],
    ids=["string", "missing", "true", "none", "float"],
)
def test_a_malformed_job_argument_fails_that_job_only(
    run_jobs_worker: Callable[[], None], caplog: pytest.LogCaptureFixture, timestamp: object
) -> None:
    """A real worker's: its log of the failed job and its carrying on."""
    with FakeBackend.in_thread(FakeSettings(kind="llama_cpp", tokens_per_second=5000)) as fake:
        backend = backend_make(base_url=fake.base_url)
        deployment_make(backend)
        arguments = {} if timestamp is _NO_ARGUMENT else {"timestamp": timestamp}
        bad_id = backends_health_check_task.defer(**arguments)  # type: ignore[arg-type]
        # A valid job queued beside it (its own queueing lock, so that both can wait at once);
        # the task's lock runs them one after the other, the bad one first.
        good_id = backends_health_check_task.configure(queueing_lock="test-valid").defer(
            timestamp=int(time.time())
        )
        with caplog.at_level(logging.ERROR, logger="procrastinate"):
            run_jobs_worker()

    assert ProcrastinateJob.objects.get(pk=bad_id).status == "failed"
    assert ProcrastinateJob.objects.get(pk=good_id).status == "succeeded"
    assert BackendHealth.objects.get(pk=backend.pk).state == State.OK
    [failure] = [
        record
        for record in caplog.records
        if getattr(record, "action", None) == "job_error" and record.job["id"] == bad_id
    ]
    assert failure.exc_info is not None
    assert "timestamp" in str(failure.exc_info[1])
    assert not [
        record
        for record in caplog.records
        if getattr(record, "action", None) == "job_error" and record.job["id"] == good_id
    ]
