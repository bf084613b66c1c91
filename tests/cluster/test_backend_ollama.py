"""Issue "Cluster", requirement 4: the Ollama client against the fake backend over real HTTP,
including every bad input (unreachable, hang, cut or garbled lines, 5xx, model not pulled)."""

import asyncio
import socket
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from apps.cluster.backends import (
    BackendProtocolError,
    BackendRequestError,
    BackendTimeout,
    BackendUnavailable,
    ChatRequest,
    Finished,
    Message,
    ModelNotFound,
    OllamaClient,
    StreamFailed,
    Timeouts,
    Token,
)
from apps.cluster.backends.ollama import _NdjsonChatDecoder
from lexweb_dev.fakebackend import FakeBackend, count_prompt_tokens, reply_pieces
from tests.cluster.test_fake_backend import OLLAMA, recorded

# Ordinary streams get generous limits, so that a busy machine cannot fail them.
GENEROUS = Timeouts(connect=5.0, first_token=5.0, between_tokens=5.0, probe=5.0)
# For the test about the limit between tokens: that one short, the first token's far longer,
# so that the time a stream takes to fail says which of the two ended it.
QUICK = Timeouts(connect=5.0, first_token=30.0, between_tokens=0.3, probe=5.0)
MESSAGES: list[Message] = [{"role": "user", "content": "Draft a short cover letter."}]


def request(max_tokens: int = 8, **fields: object) -> ChatRequest:
    return ChatRequest(model="tiny", messages=MESSAGES, max_tokens=max_tokens, **fields)


@pytest_asyncio.fixture
async def client(fake_ollama: FakeBackend) -> AsyncIterator[OllamaClient]:
    client = OllamaClient(fake_ollama.base_url, timeouts=GENEROUS)
    yield client
    await client.aclose()


@pytest_asyncio.fixture
async def quick_client(fake_ollama: FakeBackend) -> AsyncIterator[OllamaClient]:
    client = OllamaClient(fake_ollama.base_url, timeouts=QUICK)
    yield client
    await client.aclose()


async def collect(client: OllamaClient, chat: ChatRequest) -> list[Token | Finished]:
    async with client.stream_chat(chat) as stream:
        return [event async for event in stream]


@pytest.mark.asyncio
async def test_stream_yields_tokens_then_finished_with_counts(client: OllamaClient) -> None:
    events = await collect(client, request(max_tokens=6))

    assert [e.text for e in events if isinstance(e, Token)] == reply_pieces(None, 6)[0]
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert (finished.finish_reason, finished.completion_tokens) == ("length", 6)
    assert finished.prompt_tokens == count_prompt_tokens(MESSAGES)
    assert finished.decode_tokens_per_second and finished.decode_ms


@pytest.mark.asyncio
async def test_request_sends_num_predict_num_ctx_presets_format_keep_alive(
    client: OllamaClient, fake_ollama: FakeBackend
) -> None:
    schema = {"type": "object", "properties": {"age": {"type": "integer"}}}
    chat = request(
        max_tokens=4, sampling={"temperature": 0.1, "top_k": 20}, json_schema=schema,
        num_ctx=2048, keep_alive="10m",
    )  # fmt: skip
    await collect(client, chat)

    method, path, body = fake_ollama.requests[-1]
    assert (method, path) == ("POST", "/api/chat")
    assert isinstance(body, dict)
    assert body["stream"] is True and body["format"] == schema and body["keep_alive"] == "10m"
    assert body["options"] == {"temperature": 0.1, "top_k": 20, "num_predict": 4, "num_ctx": 2048}


@pytest.mark.asyncio
async def test_each_stream_has_a_connection_of_its_own_and_health_checks_after_it_succeed(
    client: OllamaClient, fake_ollama: FakeBackend
) -> None:
    # Ollama keeps a stream's connection (llama-server does not); the clients treat both alike.
    reports = []
    for _ in range(3):
        await collect(client, request(max_tokens=2))
        reports.append(await client.health())

    assert [r.state for r in reports] == ["ok"] * 3
    assert fake_ollama.connections_accepted == 4


@pytest.mark.asyncio
async def test_silent_truncation_shows_in_prompt_tokens(client: OllamaClient) -> None:
    long: list[Message] = [{"role": "user", "content": " ".join(["word"] * 300)}]

    events = await collect(
        client, ChatRequest(model="tiny", messages=long, max_tokens=2, num_ctx=64)
    )

    # Status 200 and no error: only prompt_eval_count tells the caller the prompt was cut.
    finished = events[-1]
    assert isinstance(finished, Finished) and finished.prompt_tokens == 64
    assert count_prompt_tokens(long) == 308


@pytest.mark.asyncio
async def test_health_lists_loaded_models_and_list_models_the_pulled_ones(
    client: OllamaClient, fake_ollama: FakeBackend
) -> None:
    fake_ollama.settings.pulled_models = ["tiny", "qwen3:4b"]
    assert (await client.health()).models_loaded == ()

    await collect(client, request(max_tokens=1))
    report = await client.health()
    models = await client.list_models()

    assert (report.state, report.models_loaded, report.slots_total) == (
        "ok",
        ("tiny:latest",),
        None,
    )
    assert [m.name for m in models] == ["tiny:latest", "qwen3:4b"]
    assert models[0].size_bytes == 84050696 and models[0].context_per_slot is None


@pytest.mark.asyncio
async def test_count_tokens_is_unknown_before_the_call(client: OllamaClient) -> None:
    assert await client.count_tokens(MESSAGES) is None


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_model_not_pulled_tells_the_admin_to_pull_it(client: OllamaClient) -> None:
    with pytest.raises(ModelNotFound) as error:
        await collect(client, ChatRequest(model="llama3:70b", messages=MESSAGES, max_tokens=4))

    assert str(error.value).startswith("Model 'llama3:70b' is not on http://127.0.0.1:")
    assert "ollama pull llama3:70b" in str(error.value)


@pytest.mark.asyncio
async def test_5xx_before_streaming_is_unavailable_with_the_servers_message(
    client: OllamaClient, fake_ollama: FakeBackend
) -> None:
    fake_ollama.settings.status_error = 500

    with pytest.raises(BackendUnavailable, match="answered 500: error starting llama-server"):
        await collect(client, request())


@pytest.mark.asyncio
async def test_wrong_option_type_500_and_bad_request_400(client: OllamaClient) -> None:
    with pytest.raises(BackendUnavailable, match='answered 500: option "seed" must be of type'):
        await collect(client, request(sampling={"seed": "x"}))
    with pytest.raises(BackendRequestError, match="model is required"):
        await collect(client, ChatRequest(model="", messages=MESSAGES, max_tokens=1))


@pytest.mark.asyncio
async def test_error_line_after_streaming_began_is_stream_failed(
    client: OllamaClient, fake_ollama: FakeBackend
) -> None:
    fake_ollama.settings.fail_after_tokens = 2
    received: list[object] = []

    with pytest.raises(StreamFailed, match="error was encountered while running the model"):
        async with client.stream_chat(request(max_tokens=10)) as stream:
            async for event in stream:
                received.append(event)

    assert len(received) == 2


@pytest.mark.asyncio
async def test_line_cut_by_a_disconnect_is_protocol_error(
    client: OllamaClient, fake_ollama: FakeBackend
) -> None:
    fake_ollama.settings.disconnect_after_tokens = 3

    with pytest.raises(BackendProtocolError, match="middle of"):
        await collect(client, request(max_tokens=10))


@pytest.mark.asyncio
async def test_invalid_json_line_is_protocol_error(
    client: OllamaClient, fake_ollama: FakeBackend
) -> None:
    fake_ollama.settings.invalid_json = True

    with pytest.raises(BackendProtocolError, match="not valid JSON"):
        await collect(client, request())


@pytest.mark.asyncio
async def test_hang_after_first_token_times_out(
    quick_client: OllamaClient, fake_ollama: FakeBackend
) -> None:
    fake_ollama.settings.hang_after_tokens = 1
    loop = asyncio.get_running_loop()
    started = loop.time()

    with pytest.raises(BackendTimeout, match=r"stopped sending tokens: nothing for 0\.3 s"):
        await collect(quick_client, request(max_tokens=10))

    # The limit between tokens ended it, long before the first token's 30 s would have.
    assert loop.time() - started < 10.0
    await fake_ollama.wait_until(lambda: fake_ollama.cancelled == 1)


@pytest.mark.asyncio
async def test_model_load_counts_against_the_first_token_limit(fake_ollama: FakeBackend) -> None:
    fake_ollama.settings.loading_seconds = 5
    client = OllamaClient(fake_ollama.base_url, timeouts=Timeouts(first_token=0.2))
    try:
        with pytest.raises(BackendTimeout, match="no first token"):
            await collect(client, request())
    finally:
        await client.aclose()


@pytest.mark.asyncio
async def test_unreachable_backend_is_unavailable_and_health_down() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    client = OllamaClient(url, timeouts=GENEROUS)
    try:
        with pytest.raises(BackendUnavailable, match="Cannot connect"):
            await collect(client, request())
        report = await client.health()
    finally:
        await client.aclose()

    assert report.state == "down" and url in report.message


@pytest.mark.asyncio
async def test_cancel_closes_the_stream_and_the_server_stops(
    client: OllamaClient, fake_ollama: FakeBackend
) -> None:
    fake_ollama.settings.tokens_per_second = 100
    async with client.stream_chat(request(max_tokens=1000)) as stream:
        async for _event in stream:
            await stream.cancel()

    await fake_ollama.wait_until(lambda: fake_ollama.cancelled == 1)
    assert fake_ollama.generating == 0 and fake_ollama.tokens_sent < 1000


# -- recorded bodies, decoded without a server -------------------------------------------------


def test_recorded_stream_gives_rates_from_nanoseconds() -> None:
    body = recorded(f"{OLLAMA}/06_chat_stream.txt").body + b"\n"
    decoder = _NdjsonChatDecoder("http://backend")
    events = [e for n in range(0, len(body), 37) for e in decoder.feed(body[n : n + 37])]

    assert len([e for e in events if isinstance(e, Token)]) == 8
    assert events[-1] == Finished(
        finish_reason="length",
        prompt_tokens=15,
        completion_tokens=8,
        prefill_tokens_per_second=15 / 89773522 * 1e9,
        decode_tokens_per_second=8 / 1337972173 * 1e9,
        prompt_ms=89.773522,
        decode_ms=1337.972173,
    )
    assert decoder.end() == []


def test_missing_metrics_are_omitted_zeros_not_errors() -> None:
    decoder = _NdjsonChatDecoder("http://backend")
    # A final frame with no metrics at all (omitempty), as the load/unload replies have (11d).
    [finished] = decoder.feed(recorded(f"{OLLAMA}/11d_unload_request_only.txt").body + b"\n")

    assert finished == Finished(
        finish_reason="unload",
        prompt_tokens=None,
        completion_tokens=0,
        prefill_tokens_per_second=None,
        decode_tokens_per_second=None,
    )


def test_error_line_after_recorded_tokens_is_stream_failed() -> None:
    frames = recorded(f"{OLLAMA}/06_chat_stream.txt").body.splitlines()[:2]
    crash = recorded(f"{OLLAMA}/31_runner_killed_mid_stream.txt").body.splitlines()[2]
    decoder = _NdjsonChatDecoder("http://backend")

    assert decoder.feed(b"\n".join(frames) + b"\n") == [Token("_OK"), Token(" handleChange")]
    with pytest.raises(StreamFailed, match="http://backend failed while generating: an error"):
        decoder.feed(crash + b"\n")
