"""Dispatch against real fake backends over HTTP: admission as the servers see it, the context
guard, silent truncation, telemetry, cancellation and fallback along a role's route."""

import asyncio
from collections.abc import Callable
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.utils import timezone

from apps.cluster import labels
from apps.cluster.backends.base import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    ContextOverflow,
    Message,
    Timeouts,
)
from apps.cluster.models import (
    Backend,
    BackendHealth,
    CallRecord,
    Deployment,
    Role,
    RoleRoute,
)
from apps.cluster.selectors import USABLE_DECODE_TOKENS_PER_SECOND
from apps.cluster.services import dispatch, health
from apps.cluster.services.admission import Priority, admission
from lexweb.errors import DomainError
from lexweb_dev.fakebackend import FakeBackend, FakeSettings, count_prompt_tokens
from tests.cluster.dispatch_fixtures import (
    backend_make,
    chat_requests,
    closed_port_url,
    cluster_events,
    deployment_make,
    eventually,
    route_make,
    silent_server,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True, databases="__all__")]

Outcome = CallRecord.Outcome
HELLO: list[Message] = [{"role": "user", "content": "Summarise the deposition in one line."}]


async def _deployment(
    fake_or_url: FakeBackend | str,
    *,
    board: str = "board-a",
    slots: int = 2,
    context_size: int = 8192,
    parallel_slots: int = 2,
    sampling: dict[str, object] | None = None,
) -> Deployment:
    if isinstance(fake_or_url, FakeBackend):
        url, kind = fake_or_url.base_url, fake_or_url.settings.kind
    else:
        url, kind = fake_or_url, Backend.Kind.LLAMA_CPP
    backend = await sync_to_async(backend_make)(base_url=url, kind=kind, board=board, slots=slots)
    deployment: Deployment = await sync_to_async(deployment_make)(
        backend, context_size=context_size, parallel_slots=parallel_slots, sampling=sampling
    )
    return deployment


def _waiting(backend_id: int, count: int) -> Callable[[], bool]:
    return lambda: admission.state(backend_id).waiting == count


def _words(count: int) -> list[Message]:
    return [{"role": "user", "content": " ".join(["exhibit"] * count)}]


async def _label(deployment: Deployment) -> str:
    """The deployment as messages name it (no role: these calls give none), capitalised."""
    row = await Deployment.objects.select_related("backend__board__host").aget(pk=deployment.pk)
    label = labels.deployment_label(row)
    return label[:1].upper() + label[1:]


async def _named(deployment: Deployment, raw: str) -> str:
    """What the caller is told of a failure whose call record says `raw`."""
    row = await Deployment.objects.select_related("backend__board__host").aget(pk=deployment.pk)
    return labels.deployment_message(raw, deployment=row)


async def _record(pk: int | None = None) -> CallRecord:
    if pk is not None:
        return await CallRecord.objects.aget(pk=pk)
    return await CallRecord.objects.order_by("-pk").afirst()  # type: ignore[return-value]


# --- Admission as the backend sees it ------------------------------------------------------


@pytest.mark.slow
async def test_five_calls_on_two_slots_never_put_more_than_two_on_the_backend() -> None:
    # One token a second: the first two calls stay open on the backend until released below.
    settings = FakeSettings(kind="llama_cpp", slots=8, tokens_per_second=1)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake, slots=2)
        peak = 0

        def watch(_text: str) -> None:
            nonlocal peak
            peak = max(peak, fake.generating)

        calls = [
            asyncio.create_task(
                dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=12, on_token=watch)
            )
            for _ in range(5)
        ]
        # Two generating at once, and the other three held back here although the backend
        # (eight slots of its own) would take them.
        await fake.wait_until(lambda: fake.generating == 2)
        await eventually(_waiting(deployment.backend_id, 3))
        peak = max(peak, fake.generating)
        assert fake.queued == 0
        settings.tokens_per_second = 5000
        results = await asyncio.gather(*calls)

    assert peak == 2
    assert [result.completion_tokens for result in results] == [12] * 5
    assert len(chat_requests(fake)) == 5


async def test_waiting_calls_reach_the_backend_in_priority_order() -> None:
    settings = FakeSettings(kind="llama_cpp", slots=4, tokens_per_second=5000)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake, slots=1)
        # Hold the only slot until the other calls are queued.
        async with admission.slot(deployment.backend_id, slots=1):
            calls = []
            for priority, word in [
                (Priority.BACKGROUND, "batch"),
                (Priority.NORMAL, "stage"),
                (Priority.INTERACTIVE, "person"),
            ]:
                messages: list[Message] = [{"role": "user", "content": word}]
                calls.append(
                    asyncio.create_task(
                        dispatch.chat(
                            deployment=deployment,
                            messages=messages,
                            max_tokens=2,
                            priority=priority,
                        )
                    )
                )
                await eventually(_waiting(deployment.backend_id, len(calls)))
        await asyncio.gather(*calls)

    order = [body["messages"][0]["content"] for body in chat_requests(fake)]
    assert order == ["person", "stage", "batch"]


@pytest.mark.slow
async def test_backends_on_different_boards_generate_at_the_same_time() -> None:
    # One token a second: a 20-token reply takes 19 s, longer than the wait below allows, so
    # the two can only be seen generating together if neither waits for the other.
    slow = FakeSettings(kind="llama_cpp", slots=1, tokens_per_second=1)
    async with FakeBackend(slow) as fake_a, FakeBackend(FakeSettings(**vars(slow))) as fake_b:
        on_a = await _deployment(fake_a, board="board-a", slots=1)
        on_b = await _deployment(fake_b, board="board-b", slots=1)
        both = 0

        def watch(_text: str) -> None:
            nonlocal both
            both = max(both, fake_a.generating + fake_b.generating)

        calls = asyncio.gather(
            dispatch.chat(deployment=on_a, messages=HELLO, max_tokens=20, on_token=watch),
            dispatch.chat(deployment=on_b, messages=HELLO, max_tokens=20, on_token=watch),
        )
        await eventually(lambda: fake_a.generating == fake_b.generating == 1)
        both = max(both, fake_a.generating + fake_b.generating)
        fake_a.settings.tokens_per_second = fake_b.settings.tokens_per_second = 5000
        results = await calls

    assert both == 2
    assert [result.completion_tokens for result in results] == [20, 20]


# --- Context guard ----------------------------------------------------------------------------


async def test_prompt_too_long_for_a_slot_is_refused_before_it_reaches_the_backend(
    fake_llama: FakeBackend,
) -> None:
    # 512 tokens over 2 slots: 256 per slot.
    deployment = await _deployment(fake_llama, context_size=512, parallel_slots=2)
    messages = _words(200)
    counted = count_prompt_tokens(messages)

    with pytest.raises(dispatch.PromptTooLongError) as refused:
        await dispatch.chat(deployment=deployment, messages=messages, max_tokens=100)

    refusal = (
        f"The prompt is {counted} tokens and the reply may take 100; "
        "the model's slot holds 256 tokens."
    )
    assert str(refused.value) == f"{await _label(deployment)}: {refusal}"
    assert chat_requests(fake_llama) == []
    record = await _record()
    assert (record.outcome, record.prompt_tokens, record.completion_tokens) == (
        Outcome.REFUSED,
        counted,
        0,
    )
    assert record.error == refusal


async def test_prompt_that_fits_with_its_reply_goes_through(fake_llama: FakeBackend) -> None:
    deployment = await _deployment(fake_llama, context_size=512, parallel_slots=2)
    messages = _words(200)

    result = await dispatch.chat(
        deployment=deployment, messages=messages, max_tokens=256 - count_prompt_tokens(messages)
    )

    assert result.prompt_tokens == count_prompt_tokens(messages)
    assert len(chat_requests(fake_llama)) == 1


async def test_reply_longer_than_the_slot_is_refused_for_ollama_too(
    fake_ollama: FakeBackend,
) -> None:
    deployment = await _deployment(fake_ollama, context_size=256, parallel_slots=1)

    with pytest.raises(dispatch.PromptTooLongError, match="slot holds only 256"):
        await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=256)

    assert chat_requests(fake_ollama) == []


async def test_ollama_always_gets_num_ctx_and_a_fitting_prompt_is_accepted(
    fake_ollama: FakeBackend,
) -> None:
    deployment = await _deployment(fake_ollama, context_size=2048, parallel_slots=1)

    result = await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=5)

    [body] = chat_requests(fake_ollama)
    assert body["options"]["num_ctx"] == 2048
    assert result.prompt_tokens == count_prompt_tokens(HELLO)
    assert (await _record(result.call_record_id)).outcome == Outcome.OK


async def test_ollama_silent_truncation_fails_closed(fake_ollama: FakeBackend) -> None:
    # Ollama's context is per request: num_ctx = 128 / 1 slot. The prompt is ~300 tokens; the
    # fake, like Ollama, cuts it to num_ctx and says nothing but prompt_eval_count.
    deployment = await _deployment(fake_ollama, context_size=128, parallel_slots=1)
    seen: list[str] = []

    with pytest.raises(dispatch.PromptTruncatedError) as truncated:
        await dispatch.chat(
            deployment=deployment, messages=_words(300), max_tokens=4, on_token=seen.append
        )

    assert "prompt may have been cut" in str(truncated.value)
    assert "128" in str(truncated.value)
    assert chat_requests(fake_ollama)[0]["options"]["num_ctx"] == 128
    record = await _record()
    assert (record.outcome, record.prompt_tokens) == (Outcome.TRUNCATED, 128)
    assert str(truncated.value) == await _named(deployment, record.error)


async def test_llama_server_reporting_fewer_prompt_tokens_than_counted_fails_closed() -> None:
    settings = FakeSettings(kind="llama_cpp", tokens_per_second=5000, prompt_tokens_unreported=7)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake, context_size=4096, parallel_slots=2)
        with pytest.raises(dispatch.PromptTruncatedError) as truncated:
            await dispatch.chat(deployment=deployment, messages=_words(50), max_tokens=4)

    record = await _record()
    assert record.outcome == Outcome.TRUNCATED
    assert str(truncated.value) == await _named(deployment, record.error)


async def test_server_refusing_a_prompt_our_guard_let_through_is_an_error_not_a_failure() -> None:
    # A deployment row that believes in a larger context than the server has: the guard lets
    # the prompt through, llama-server refuses it with its 400 (it never cuts a prompt). The
    # answer is recorded as an error and the backend's health is not blamed for it.
    settings = FakeSettings(kind="llama_cpp", n_ctx_per_slot=64, tokens_per_second=5000)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake, context_size=4096, parallel_slots=2)
        with pytest.raises(ContextOverflow):
            await dispatch.chat(deployment=deployment, messages=_words(100), max_tokens=4)

    record = await _record()
    assert record.outcome == Outcome.ERROR
    row = await BackendHealth.objects.filter(pk=deployment.backend_id).afirst()
    assert row is None or row.consecutive_failures == 0


# --- Sampling and telemetry -------------------------------------------------------------------


async def test_admin_sampling_presets_are_sent_on_every_call(fake_llama: FakeBackend) -> None:
    deployment = await _deployment(
        fake_llama, sampling={"temperature": 0.2, "top_p": 0.9, "seed": 7, "note": "ignored"}
    )

    await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=3)

    [body] = chat_requests(fake_llama)
    assert (body["temperature"], body["top_p"], body["seed"]) == (0.2, 0.9, 7)
    assert "note" not in body


async def test_each_call_records_telemetry_and_publishes_the_rolling_speed() -> None:
    settings = FakeSettings(kind="llama_cpp", tokens_per_second=200)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake, board="board-7")
        async with cluster_events() as receive:
            result = await dispatch.chat(
                deployment=deployment, messages=HELLO, max_tokens=20, role=Role.DRAFTER
            )
            event = await receive()
            while event["type"] != "cluster.deployment_speed":
                event = await receive()

    record = await _record(result.call_record_id)
    assert record.outcome == Outcome.OK
    assert record.deployment_id == deployment.pk
    assert record.deployment_label == f"tiny on {deployment.backend.name}"
    assert record.board_label == "gpu-host-1 / board-7"
    assert record.role == Role.DRAFTER
    assert (record.prompt_tokens, record.completion_tokens) == (count_prompt_tokens(HELLO), 20)
    assert record.time_to_first_token_ms is not None and record.time_to_first_token_ms > 0
    assert record.duration_ms >= record.time_to_first_token_ms
    assert record.prefill_tokens_per_second == pytest.approx(5000)  # the fake's timings
    assert record.decode_tokens_per_second is not None
    # Paced at 200 tokens/s; generous bounds for a busy 2-core machine.
    assert 50 < record.decode_tokens_per_second < 2000
    assert result.text and result.finish_reason == "length"
    assert event["deployment_id"] == deployment.pk
    assert event["calls"] == 1
    assert event["decode_tokens_per_second"] == pytest.approx(record.decode_tokens_per_second)
    assert event["usable"] == (record.decode_tokens_per_second >= USABLE_DECODE_TOKENS_PER_SECOND)
    health_row = await BackendHealth.objects.aget(pk=deployment.backend_id)
    assert health_row.state == BackendHealth.State.OK and health_row.last_success_at


async def test_slow_deployment_shows_below_the_usable_line() -> None:
    settings = FakeSettings(kind="ollama", tokens_per_second=20)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake)
        async with cluster_events() as receive:
            await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=8)
            event = await receive()
            while event["type"] != "cluster.deployment_speed":
                event = await receive()

    assert event["decode_tokens_per_second"] < USABLE_DECODE_TOKENS_PER_SECOND
    assert event["usable"] is False


# --- Failures ---------------------------------------------------------------------------------


async def test_unreachable_backend_raises_a_clear_error_and_counts_a_failure() -> None:
    deployment = await _deployment(closed_port_url())

    with pytest.raises(BackendUnavailable) as failed:
        await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=3)

    record = await _record()
    assert record.outcome == Outcome.ERROR
    # The record keeps the client's message, address and all (for admins); the caller's
    # names the deployment instead (cluster.labels).
    assert deployment.backend.base_url in record.error
    assert str(failed.value) == await _named(deployment, record.error)
    assert deployment.backend.base_url not in str(failed.value)
    row = await BackendHealth.objects.aget(pk=deployment.backend_id)
    # One failed call counts, and leaves the backend routable (issue 29: never after one call).
    assert (row.state, row.consecutive_failures) == (BackendHealth.State.UNKNOWN, 1)
    assert row.message.startswith(f"Cannot connect to backend {deployment.backend.name}")


@pytest.mark.slow
async def test_a_backend_that_never_answers_times_out_and_counts_a_failure() -> None:
    async with silent_server() as url:
        deployment = await _deployment(url)
        with pytest.raises(BackendTimeout) as hung:
            await dispatch.chat(
                deployment=deployment,
                messages=HELLO,
                max_tokens=3,
                timeouts=Timeouts(connect=1.0, first_token=1.0, between_tokens=1.0),
            )

    assert "within 1 s" in str(hung.value)
    record = await _record()
    assert record.outcome == Outcome.ERROR and url in record.error
    assert str(hung.value) == await _named(deployment, record.error)
    row = await BackendHealth.objects.aget(pk=deployment.backend_id)
    assert (row.state, row.consecutive_failures) == (BackendHealth.State.UNKNOWN, 1)


async def test_server_error_is_recorded_with_its_message() -> None:
    settings = FakeSettings(kind="ollama", status_error=500, tokens_per_second=5000)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake)
        with pytest.raises(BackendError) as failed:
            await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=3)

    record = await _record()
    assert record.outcome == Outcome.ERROR and fake.base_url in record.error
    assert str(failed.value) == await _named(deployment, record.error)
    row = await BackendHealth.objects.aget(pk=deployment.backend_id)
    assert row.consecutive_failures == 1 and row.message


async def test_backend_in_cooldown_is_refused_without_being_contacted(
    fake_llama: FakeBackend,
) -> None:
    deployment = await _deployment(fake_llama)
    for _ in range(health.failures_to_leave()):
        await sync_to_async(health.backend_call_failed)(
            backend_id=deployment.backend_id, message="Connection refused."
        )

    with pytest.raises(dispatch.DeploymentUnavailableError, match="cooling down"):
        await dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=3)

    assert fake_llama.requests == []
    assert (await _record()).outcome == Outcome.REFUSED


async def test_caller_cancelling_mid_stream_closes_it_and_records_cancelled() -> None:
    settings = FakeSettings(kind="llama_cpp", hang_after_tokens=3, tokens_per_second=5000)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake)
        seen: list[str] = []
        call = asyncio.create_task(
            dispatch.chat(
                deployment=deployment, messages=HELLO, max_tokens=50, on_token=seen.append
            )
        )
        await eventually(lambda: len(seen) == 3)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        await fake.wait_until(lambda: fake.cancelled == 1)

    record = await _record()
    assert (record.outcome, record.completion_tokens) == (Outcome.CANCELLED, 3)
    assert admission.state(deployment.backend_id).in_flight == 0


async def test_a_call_cancelled_while_queued_never_reaches_the_backend() -> None:
    settings = FakeSettings(kind="llama_cpp", hang_after_tokens=1, tokens_per_second=5000)
    async with FakeBackend(settings) as fake:
        deployment = await _deployment(fake, slots=1)
        first = asyncio.create_task(
            dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=5)
        )
        await fake.wait_until(lambda: fake.tokens_sent == 1)
        queued = asyncio.create_task(
            dispatch.chat(deployment=deployment, messages=HELLO, max_tokens=5)
        )
        await eventually(_waiting(deployment.backend_id, 1))
        queued.cancel()
        with pytest.raises(asyncio.CancelledError):
            await queued
        first.cancel()
        with pytest.raises(asyncio.CancelledError):
            await first

    assert len(chat_requests(fake)) == 1
    outcomes = [r.outcome async for r in CallRecord.objects.order_by("pk")]
    assert outcomes == [Outcome.CANCELLED, Outcome.CANCELLED]


# --- Routing and fallback ---------------------------------------------------------------------


async def test_role_falls_back_to_the_next_deployment_when_the_first_is_down(
    fake_llama: FakeBackend,
) -> None:
    dead = await _deployment(closed_port_url(), board="board-a")
    alive = await _deployment(fake_llama, board="board-b")
    await sync_to_async(route_make)(Role.DRAFTER, dead, alive)

    result = await dispatch.chat_for_role(role=Role.DRAFTER, messages=HELLO, max_tokens=4)

    assert result.deployment_id == alive.pk
    outcomes = [(r.deployment_id, r.outcome) async for r in CallRecord.objects.order_by("pk")]
    assert outcomes == [(dead.pk, Outcome.ERROR), (alive.pk, Outcome.OK)]


async def test_role_falls_back_to_a_larger_context_when_the_prompt_does_not_fit(
    fake_llama: FakeBackend,
) -> None:
    small = await _deployment(fake_llama, board="board-a", context_size=256, parallel_slots=2)
    large = await _deployment(fake_llama, board="board-b", context_size=8192, parallel_slots=2)
    await sync_to_async(route_make)(Role.SUMMARIZER, small, large)

    result = await dispatch.chat_for_role(role=Role.SUMMARIZER, messages=_words(200), max_tokens=8)

    assert result.deployment_id == large.pk
    outcomes = [(r.deployment_id, r.outcome) async for r in CallRecord.objects.order_by("pk")]
    assert outcomes == [(small.pk, Outcome.REFUSED), (large.pk, Outcome.OK)]
    assert len(chat_requests(fake_llama)) == 1


async def test_role_calls_the_routing_its_caller_read_without_reading_it_again(
    fake_llama: FakeBackend,
) -> None:
    """A stage reads its role's routing once (to plan its prompt) and hands it on: a route
    changed in between does not move the call (issue 23 req 2)."""
    planned = await _deployment(fake_llama, board="board-a")
    rerouted = await _deployment(closed_port_url(), board="board-b")
    await sync_to_async(route_make)(Role.DRAFTER, planned)
    routing = await sync_to_async(dispatch.deployments_for_role)(Role.DRAFTER)
    await RoleRoute.objects.filter(role=Role.DRAFTER).adelete()
    await sync_to_async(route_make)(Role.DRAFTER, rerouted)

    result = await dispatch.chat_for_role(
        role=Role.DRAFTER, messages=HELLO, max_tokens=4, routing=routing
    )

    assert result.deployment_id == planned.pk
    calls = [r.deployment_id async for r in CallRecord.objects.order_by("pk")]
    assert calls == [planned.pk]
    # Without it, the routing is read at the call.
    with pytest.raises(dispatch.DeploymentUnavailableError):
        await dispatch.chat_for_role(role=Role.DRAFTER, messages=HELLO, max_tokens=4)


async def test_role_where_every_deployment_is_down_names_each_failure() -> None:
    first = await _deployment(closed_port_url(), board="board-a")
    second = await _deployment(closed_port_url(), board="board-b")
    await sync_to_async(route_make)(Role.ADVERSARY, first, second)

    with pytest.raises(dispatch.DeploymentUnavailableError) as failed:
        await dispatch.chat_for_role(role=Role.ADVERSARY, messages=HELLO, max_tokens=2)

    message = str(failed.value)
    assert message.startswith("Every deployment for the Adversarial reviewer role failed.")
    assert first.backend.name in message and second.backend.name in message


async def test_routing_skips_backends_the_registry_marks_down_or_cooling(
    fake_llama: FakeBackend,
) -> None:
    cooling = await _deployment(closed_port_url(), board="board-a")
    loading = await _deployment(closed_port_url(), board="board-b")
    unchecked = await _deployment(fake_llama, board="board-c")
    await sync_to_async(route_make)(Role.GATE, cooling, loading, unchecked)
    now = timezone.now()
    await BackendHealth.objects.acreate(
        backend_id=cooling.backend_id,
        state=BackendHealth.State.COOLDOWN,
        cooldown_until=now + timedelta(minutes=1),
    )
    await BackendHealth.objects.acreate(
        backend_id=loading.backend_id, state=BackendHealth.State.LOADING
    )

    routed = await sync_to_async(dispatch.deployments_for_role)(Role.GATE, now=now)
    assert [d.pk for d in routed] == [unchecked.pk]
    # Once the cooldown is over the backend is tried again (the next call or check decides).
    later = await sync_to_async(dispatch.deployments_for_role)(
        Role.GATE, now=now + timedelta(minutes=2)
    )
    assert [d.pk for d in later] == [cooling.pk, unchecked.pk]

    result = await dispatch.chat_for_role(role=Role.GATE, messages=HELLO, max_tokens=2)
    assert result.deployment_id == unchecked.pk


async def test_routing_says_which_deployments_ahead_of_the_first_routable_it_left_out_and_why(
    fake_llama: FakeBackend,
) -> None:
    down = await _deployment(closed_port_url(), board="board-a")
    loading = await _deployment(closed_port_url(), board="board-b")
    answering = await _deployment(fake_llama, board="board-c")
    behind = await _deployment(closed_port_url(), board="board-d")
    await sync_to_async(route_make)(Role.GATE, down, loading, answering, behind)
    await BackendHealth.objects.acreate(backend_id=down.backend_id, state=BackendHealth.State.DOWN)
    for late in (loading, behind):
        await BackendHealth.objects.acreate(
            backend_id=late.backend_id, state=BackendHealth.State.LOADING
        )

    routed, passed = await sync_to_async(dispatch.routing_for_role)(Role.GATE)

    assert [d.pk for d in routed] == [answering.pk]
    # Only those that would have been tried before the one that answers: not `behind`.
    assert [(p.deployment.pk, p.reason) for p in passed] == [
        (down.pk, "its backend is down"),
        (loading.pk, "its backend is still loading its model"),
    ]


async def test_no_fallback_once_tokens_have_been_streamed(fake_ollama: FakeBackend) -> None:
    settings = FakeSettings(kind="llama_cpp", hang_after_tokens=2, tokens_per_second=5000)
    async with FakeBackend(settings) as stalls:
        first = await _deployment(stalls, board="board-a")
        second = await _deployment(fake_ollama, board="board-b")
        await sync_to_async(route_make)(Role.REASONER, first, second)
        seen: list[str] = []

        with pytest.raises(BackendUnavailable):
            await dispatch.chat_for_role(
                role=Role.REASONER,
                messages=HELLO,
                max_tokens=10,
                on_token=seen.append,
                timeouts=Timeouts(between_tokens=0.5),
            )

    assert len(seen) == 2
    assert chat_requests(fake_ollama) == []


async def test_role_with_nothing_available_says_so() -> None:
    with pytest.raises(dispatch.DeploymentUnavailableError, match="No deployment for the"):
        await dispatch.chat_for_role(role=Role.SUMMARIZER, messages=HELLO, max_tokens=2)
    with pytest.raises(DomainError, match="Unknown role"):
        await dispatch.chat_for_role(role="astrologer", messages=HELLO, max_tokens=2)
