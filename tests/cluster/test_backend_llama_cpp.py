"""Issue "Cluster", requirement 4: the llama-server client against the fake backend over real
HTTP, including every bad input (unreachable, hang, cut or garbled events, 5xx, wrong key)."""

import asyncio
import json
import socket
import ssl
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from apps.cluster.backends import (
    BackendAuthError,
    BackendProtocolError,
    BackendTimeout,
    BackendUnavailable,
    ChatRequest,
    ContextOverflow,
    Finished,
    LlamaCppClient,
    Message,
    StreamFailed,
    Timeouts,
    Token,
    client_for,
)
from apps.cluster.backends.grammar import schema_to_gbnf
from apps.cluster.backends.llama_cpp import _SseChatDecoder
from apps.cluster.backends.streams import SseSplitter
from apps.cluster.models import Backend
from lexweb_dev.fakebackend import FakeBackend, count_prompt_tokens, reply_pieces

# Ordinary streams get generous limits, so that a busy machine cannot fail them.
GENEROUS = Timeouts(connect=5.0, first_token=5.0, between_tokens=5.0, probe=5.0)
# For the tests about the limit between tokens: that one short, the first token's far longer,
# so that the time a stream takes to fail says which of the two ended it.
QUICK = Timeouts(connect=5.0, first_token=30.0, between_tokens=0.3, probe=5.0)
SECRET_PROMPT = "The client's privileged account of the merger"
MESSAGES: list[Message] = [{"role": "user", "content": SECRET_PROMPT}]


def request(max_tokens: int = 8, **fields: object) -> ChatRequest:
    return ChatRequest(model="tiny", messages=MESSAGES, max_tokens=max_tokens, **fields)


@pytest_asyncio.fixture
async def client(fake_llama: FakeBackend) -> AsyncIterator[LlamaCppClient]:
    client = LlamaCppClient(fake_llama.base_url, timeouts=GENEROUS)
    yield client
    await client.aclose()


@pytest_asyncio.fixture
async def quick_client(fake_llama: FakeBackend) -> AsyncIterator[LlamaCppClient]:
    client = LlamaCppClient(fake_llama.base_url, timeouts=QUICK)
    yield client
    await client.aclose()


async def collect(client: LlamaCppClient, chat: ChatRequest) -> list[Token | Finished]:
    async with client.stream_chat(chat) as stream:
        return [event async for event in stream]


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.asyncio
async def test_stream_yields_tokens_then_one_finished(client: LlamaCppClient) -> None:
    events = await collect(client, request(max_tokens=8))

    tokens, finished = events[:-1], events[-1]
    assert [t.text for t in tokens if isinstance(t, Token)] == reply_pieces(None, 8)[0]
    assert isinstance(finished, Finished)
    assert finished.finish_reason == "length"
    assert (finished.prompt_tokens, finished.completion_tokens) == (
        count_prompt_tokens(MESSAGES),
        8,
    )
    assert finished.decode_tokens_per_second and finished.prefill_tokens_per_second
    assert finished.prompt_ms is not None and finished.decode_ms is not None


@pytest.mark.asyncio
async def test_request_carries_limits_presets_usage_and_schema(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    schema = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}},
        "required": ["ok"],
        "additionalProperties": False,
    }
    presets = {"temperature": 0.2, "seed": 7, "stream": False}
    await collect(client, request(max_tokens=3, sampling=presets, json_schema=schema))

    method, path, body = fake_llama.requests[-1]
    assert (method, path) == ("POST", "/v1/chat/completions")
    assert isinstance(body, dict)
    assert body["stream"] is True  # a preset cannot turn streaming off
    assert body["stream_options"] == {"include_usage": True}
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (3, 0.2, 7)
    # A compact grammar written from the schema, not response_format (whose server-side grammar
    # lets whitespace fill the budget).
    assert "response_format" not in body
    assert body["grammar"] == schema_to_gbnf(schema)
    assert body["messages"] == MESSAGES


@pytest.mark.asyncio
async def test_reply_shorter_than_limit_finishes_with_stop(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.reply = "Objection sustained."
    events = await collect(client, request(max_tokens=50))

    assert "".join(e.text for e in events if isinstance(e, Token)) == "Objection sustained."
    assert isinstance(events[-1], Finished) and events[-1].finish_reason == "stop"


@pytest.mark.asyncio
@pytest.mark.slow
async def test_health_checks_right_after_streams_on_one_pooled_client_all_succeed(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    # llama-server closes a stream's connection after its last chunk (the fake does the same):
    # a pooled client that sent its next request on it read nothing, and 13 of 40 health
    # checks right after a stream said the backend was down.
    reports = []
    for _ in range(40):
        events = await collect(client, request(max_tokens=2))
        assert isinstance(events[-1], Finished)
        reports.append(await client.health())
        assert await client.count_tokens(MESSAGES) == count_prompt_tokens(MESSAGES)

    assert [(r.state, r.message) for r in reports] == [("ok", "")] * 40


@pytest.mark.asyncio
async def test_each_stream_has_a_connection_of_its_own_and_other_calls_share_one(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    for _ in range(3):
        await collect(client, request(max_tokens=2))
    for _ in range(3):
        await client.list_models()

    assert fake_llama.connections_accepted == 4


@pytest.mark.asyncio
async def test_count_tokens_uses_the_servers_template_and_tokenizer(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    messages: list[Message] = [
        {"role": "system", "content": "You draft motions."},
        {"role": "user", "content": "Summarise the\nexhibit list."},
    ]

    assert await client.count_tokens(messages) == count_prompt_tokens(messages)
    assert [p for _, p, _ in fake_llama.requests] == ["/apply-template", "/tokenize"]


@pytest.mark.asyncio
async def test_list_models_reports_context_per_slot(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.n_ctx_per_slot = 16384

    [model] = await client.list_models()

    assert (model.name, model.context_per_slot) == ("tiny", 16384)


@pytest.mark.asyncio
async def test_health_counts_slots_and_busy_ones(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.tokens_per_second = 50
    async with client.stream_chat(request(max_tokens=100)) as stream:
        await anext(aiter(stream))
        report = await client.health()

    assert (report.state, report.slots_total, report.slots_busy) == ("ok", 2, 1)
    assert report.models_loaded == ("tiny",)


@pytest.mark.asyncio
async def test_health_says_loading_while_the_model_loads(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.loading_seconds = 3600

    report = await client.health()

    assert report.state == "loading"
    assert fake_llama.base_url in report.message
    with pytest.raises(BackendUnavailable, match="loading"):
        await collect(client, request())


@pytest.mark.asyncio
async def test_metrics_and_slots_helpers(client: LlamaCppClient, fake_llama: FakeBackend) -> None:
    metrics = await client.metrics()
    slots = await client.slots()
    props = await client.props()

    assert metrics is not None and metrics["requests_processing"] == 0
    assert metrics["requests_deferred"] == 0
    assert slots is not None and [s["id"] for s in slots] == [0, 1]
    assert props["total_slots"] == 2


# -- bad input ---------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_unreachable_backend_is_unavailable_and_health_down() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    client = LlamaCppClient(url, timeouts=GENEROUS)
    try:
        with pytest.raises(BackendUnavailable, match=f"Cannot connect to {url}"):
            await collect(client, request())
        report = await client.health()
    finally:
        await client.aclose()

    assert report.state == "down" and url in report.message


@pytest.mark.asyncio
async def test_hang_after_first_token_times_out_within_between_tokens(
    quick_client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.hang_after_tokens = 1
    loop = asyncio.get_running_loop()
    received: list[object] = []

    with pytest.raises(
        BackendTimeout, match=r"stopped sending tokens: nothing for 0\.3 s"
    ) as error:
        async with quick_client.stream_chat(request(max_tokens=20)) as stream:
            started = loop.time()
            async for event in stream:
                received.append(event)

    # The limit between tokens ended it, long before the first token's 30 s would have.
    assert 0.3 <= loop.time() - started < 10.0
    assert len(received) == 1 and fake_llama.base_url in str(error.value)
    await fake_llama.wait_until(lambda: fake_llama.cancelled == 1)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_stream_longer_than_the_limit_between_tokens_is_not_cut(
    quick_client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    """The stream's one timer follows the deadline as tokens come; it never fires at the first
    deadline of a stream that kept on sending (10 tokens/s for 0.8 s against 0.3 s)."""
    fake_llama.settings.tokens_per_second = 10

    events = await collect(quick_client, request(max_tokens=8))

    assert len(events) == 9 and isinstance(events[-1], Finished)


@pytest.mark.asyncio
@pytest.mark.slow
async def test_the_callers_own_time_between_tokens_does_not_count(
    quick_client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    """The limit is the backend's silence, not the caller's work: a caller that spends longer
    than the limit on each token (0.5 s against 0.3 s) still reads the whole reply."""
    received: list[object] = []
    async with quick_client.stream_chat(request(max_tokens=3)) as stream:
        async for event in stream:
            received.append(event)
            await asyncio.sleep(0.5)

    assert len(received) == 4 and isinstance(received[-1], Finished)


@pytest.mark.asyncio
async def test_cancelling_the_reader_is_a_cancel_not_a_timeout(
    quick_client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    """A task cancelled while it waits for the next token ends cancelled (the caller's cancel
    wins), and a later deadline does not fire into anything."""
    fake_llama.settings.hang_after_tokens = 1
    reading = asyncio.Event()

    async def read() -> None:
        async with quick_client.stream_chat(request(max_tokens=20)) as stream:
            async for _event in stream:
                reading.set()

    task = asyncio.create_task(read())
    await reading.wait()
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.4)  # past the 0.3 s deadline: nothing left to fire
    assert task.cancelled()


@pytest.mark.asyncio
async def test_pings_do_not_keep_a_silent_stream_alive(
    quick_client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.hang_after_tokens = 2
    fake_llama.settings.ping_interval = 0.05

    with pytest.raises(BackendTimeout, match=r"nothing for 0\.3 s"):
        await collect(quick_client, request(max_tokens=20))


@pytest.mark.asyncio
async def test_first_token_limit_covers_the_queue_wait(fake_llama: FakeBackend) -> None:
    fake_llama.settings.slots = 1
    fake_llama.settings.tokens_per_second = 20
    impatient = LlamaCppClient(fake_llama.base_url, timeouts=Timeouts(first_token=0.3))
    holder = LlamaCppClient(fake_llama.base_url, timeouts=GENEROUS)
    try:
        async with holder.stream_chat(request(max_tokens=1000)) as busy:
            await anext(aiter(busy))
            with pytest.raises(BackendTimeout, match=r"no first token within 0\.3 s"):
                await collect(impatient, request())
    finally:
        await impatient.aclose()
        await holder.aclose()


@pytest.mark.asyncio
async def test_third_stream_waits_for_a_slot_then_completes(fake_llama: FakeBackend) -> None:
    fake_llama.settings.tokens_per_second = 200
    client = LlamaCppClient(fake_llama.base_url, timeouts=GENEROUS)
    try:
        first = [asyncio.create_task(collect(client, request(max_tokens=20))) for _ in range(2)]
        await fake_llama.wait_until(lambda: fake_llama.generating == 2)
        third = asyncio.create_task(collect(client, request(max_tokens=5)))
        await fake_llama.wait_until(lambda: fake_llama.queued == 1)
        await fake_llama.wait_until(lambda: fake_llama.tokens_sent >= 10)
        assert not third.done()

        results = await asyncio.gather(*first, third)
    finally:
        await client.aclose()

    assert [len(r) for r in results] == [21, 21, 6]
    assert all(isinstance(r[-1], Finished) for r in results)


@pytest.mark.asyncio
async def test_event_cut_by_a_disconnect_is_protocol_error(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.disconnect_after_tokens = 2
    received: list[object] = []

    with pytest.raises(BackendProtocolError, match="middle of an event"):
        async with client.stream_chat(request(max_tokens=10)) as stream:
            async for event in stream:
                received.append(event)

    assert len(received) == 2


@pytest.mark.asyncio
async def test_invalid_json_event_is_protocol_error(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.invalid_json = True

    with pytest.raises(BackendProtocolError, match="not valid JSON"):
        await collect(client, request())


@pytest.mark.asyncio
async def test_error_event_after_streaming_began_is_stream_failed(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.fail_after_tokens = 3
    received: list[object] = []

    with pytest.raises(StreamFailed, match="failed while generating: an error occurred"):
        async with client.stream_chat(request(max_tokens=10)) as stream:
            async for event in stream:
                received.append(event)

    assert len(received) == 3


@pytest.mark.asyncio
async def test_5xx_before_streaming_is_unavailable_with_the_servers_message(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.status_error = 500

    with pytest.raises(BackendUnavailable, match="answered 500: an internal error occurred"):
        await collect(client, request())


@pytest.mark.asyncio
async def test_prompt_over_the_slot_context_is_context_overflow(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.n_ctx_per_slot = 8

    with pytest.raises(ContextOverflow) as error:
        await collect(client, request())

    expected = count_prompt_tokens(MESSAGES)
    assert (error.value.prompt_tokens, error.value.context) == (expected, 8)
    assert SECRET_PROMPT not in str(error.value)


@pytest.mark.asyncio
async def test_wrong_api_key_is_auth_error_without_the_key(fake_llama: FakeBackend) -> None:
    fake_llama.settings.api_key = "right-key"
    wrong = LlamaCppClient(fake_llama.base_url, api_key="wrong-key-123", timeouts=GENEROUS)
    right = LlamaCppClient(fake_llama.base_url, api_key="right-key", timeouts=GENEROUS)
    try:
        with pytest.raises(BackendAuthError) as error:
            await collect(wrong, request())
        report = await wrong.health()
        events = await collect(right, request(max_tokens=2))
    finally:
        await wrong.aclose()
        await right.aclose()

    assert "wrong-key-123" not in str(error.value) and fake_llama.base_url in str(error.value)
    # /health is public, so only the follow-up calls show the wrong key.
    assert report.state == "down" and "API key" in report.message
    assert isinstance(events[-1], Finished)


@pytest.mark.asyncio
async def test_cancel_closes_the_stream_and_the_server_stops(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.tokens_per_second = 100
    received: list[object] = []
    async with client.stream_chat(request(max_tokens=1000)) as stream:
        async for event in stream:
            received.append(event)
            if len(received) == 2:
                await stream.cancel()

    await fake_llama.wait_until(lambda: fake_llama.cancelled == 1)
    assert len(received) == 2
    assert fake_llama.generating == 0 and fake_llama.tokens_sent < 1000


@pytest.mark.asyncio
async def test_no_event_of_a_chunk_already_read_is_handed_out_after_cancel(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    # A server that writes tokens faster than they are read (here: all at once, unpaced): one
    # chunk of the body holds many events.
    fake_llama.settings.tokens_per_second = 0
    received: list[object] = []
    async with client.stream_chat(request(max_tokens=1000)) as stream:
        async for event in stream:
            received.append(event)
            if len(received) == 2:
                await stream.cancel()

    assert len(received) == 2


@pytest.mark.asyncio
async def test_cancel_from_another_task_ends_the_iteration_quietly(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.tokens_per_second = 20
    async with client.stream_chat(request(max_tokens=1000)) as stream:
        received: list[object] = []

        async def consume() -> None:
            async for event in stream:
                received.append(event)

        consumer = asyncio.create_task(consume())
        await fake_llama.wait_until(lambda: fake_llama.tokens_sent >= 1)
        await stream.cancel()
        # Quietly: the consumer's loop ends without an exception (wait_for would raise it).
        await asyncio.wait_for(consumer, 10)

    await fake_llama.wait_until(lambda: fake_llama.cancelled == 1)
    # Cut short: tokens only, never the reply's end, and the server stopped generating before
    # the 1000 tokens (50 s at this rate) were sent.
    assert all(isinstance(event, Token) for event in received)
    assert len(received) <= fake_llama.tokens_sent < 1000
    assert fake_llama.generating == 0


@pytest.mark.asyncio
async def test_leaving_async_with_early_cancels_generation(
    client: LlamaCppClient, fake_llama: FakeBackend
) -> None:
    fake_llama.settings.tokens_per_second = 100
    async with client.stream_chat(request(max_tokens=1000)) as stream:
        async for _event in stream:
            break

    await fake_llama.wait_until(lambda: fake_llama.cancelled == 1)
    assert fake_llama.generating == 0


# -- framing, without a server -----------------------------------------------------------------


def test_sse_events_split_across_any_chunk_boundary() -> None:
    body = (
        b': ping\n\ndata: {"a":1}\n\ndata: {"b":"\xe5\xbe\xbd"}\r\n\r\n:\n\n'
        b'event: x\ndata: {"c":\ndata: 3}\n\ndata: [DONE]\n\n'
    )
    expected = [b'{"a":1}', b'{"b":"\xe5\xbe\xbd"}', b'{"c":\n3}', b"[DONE]"]
    for size in (1, 2, 3, 7, len(body)):
        splitter = SseSplitter()
        payloads = [p for n in range(0, len(body), size) for p in splitter.feed(body[n : n + size])]
        assert payloads == expected
        assert not splitter.partial


def test_recorded_stream_decodes_to_tokens_and_usage() -> None:
    from tests.cluster.test_fake_backend import LLAMA, recorded

    body = recorded(f"{LLAMA}/11_chat_stream_usage.txt").body
    decoder = _SseChatDecoder("http://backend")
    events = [e for n in range(0, len(body), 50) for e in decoder.feed(body[n : n + 50])]

    assert "".join(e.text for e in events if isinstance(e, Token)) == (" vant徽ucketsump💊 Sebast")
    assert events[-1] == Finished(
        finish_reason="length",
        prompt_tokens=10,
        completion_tokens=6,
        prefill_tokens_per_second=3300.3300330033007,
        decode_tokens_per_second=490.86982132338505,
        prompt_ms=3.03,
        decode_ms=10.186,
    )
    assert decoder.end() == []


def test_body_that_ends_before_the_finish_is_protocol_error() -> None:
    decoder = _SseChatDecoder("http://backend")
    event = {"choices": [{"finish_reason": None, "index": 0, "delta": {"content": "x"}}]}
    decoder.feed(b"data: " + json.dumps(event).encode() + b"\n\n")

    with pytest.raises(BackendProtocolError, match="before the reply was done"):
        decoder.end()


def test_client_for_picks_the_client_by_kind() -> None:
    llama = client_for(Backend(name="a", kind="llama_cpp", base_url="http://h:1", api_key="k"))
    ollama = client_for(Backend(name="b", kind="ollama", base_url="http://h:2"))

    assert isinstance(llama, LlamaCppClient) and llama.kind == "llama_cpp"
    assert ollama.kind == "ollama"
    with pytest.raises(ValueError, match="unknown kind"):
        client_for(Backend(name="c", kind="vllm", base_url="http://h:3"))


def test_messages_name_the_backend_without_credentials() -> None:
    client = LlamaCppClient("http://admin:pw@10.0.0.5:8080/", timeouts=GENEROUS)

    assert client.name == "http://10.0.0.5:8080"


@pytest.mark.asyncio
@pytest.mark.parametrize("tail", ["/?key=s3cr3t", "#part"])
async def test_a_base_url_with_a_query_or_fragment_sends_nothing_and_says_why(
    fake_llama: FakeBackend, tail: str
) -> None:
    # A row stored before the admin form and the site file refused such URLs: httpx would put
    # the paths inside the query ("/?key=s3cr3t/health").
    client = LlamaCppClient(fake_llama.base_url + tail, timeouts=GENEROUS)
    try:
        health = await client.health()
        with pytest.raises(BackendUnavailable, match="takes no query string"):
            await client.list_models()
        with pytest.raises(BackendUnavailable, match="takes no query string"):
            async with client.stream_chat(request()):
                pass
    finally:
        await client.aclose()

    assert health.state == "down" and "takes no query string" in health.message
    assert "s3cr3t" not in health.message


def test_every_backend_client_shares_one_tls_context() -> None:
    """The TLS context (certifi's bundle, hostnames checked) is made once per process, not by
    each new client: building one costs tens of milliseconds on the worker's shared thread."""
    from apps.cluster.backends.streams import tls_context

    first, second = LlamaCppClient("https://a.example:8081"), LlamaCppClient("https://b.example")
    contexts = [
        client.http._transport._pool._ssl_context  # type: ignore[attr-defined]
        for client in (first, second)
    ]
    assert contexts[0] is contexts[1] is tls_context()
    assert tls_context().check_hostname and tls_context().verify_mode == ssl.CERT_REQUIRED
