"""Issue "Cluster", requirement 10: the fake backend reproduces what a client can observe in the
recordings under ../shared/protocols (framing, headers, field names, status codes, error
shapes, queueing), over real HTTP on 127.0.0.1. Compared with the recorded files themselves."""

import asyncio
import contextlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from lexweb_dev.fakebackend import (
    FakeBackend,
    FakeSettings,
    apply_template,
    count_prompt_tokens,
    count_text_tokens,
)

PROTOCOLS = Path(__file__).resolve().parents[2].parent / "shared" / "protocols"
LLAMA = "llama-server/recorded"
OLLAMA = "ollama/v0.24.0"
HELLO = [{"role": "user", "content": "Hello"}]


@dataclass
class Exchange:
    status: int
    headers: list[tuple[str, str]]
    body: bytes
    chunks: list[bytes]

    def header(self, name: str) -> str | None:
        return next((v for k, v in self.headers if k.lower() == name.lower()), None)

    def names(self) -> list[str]:
        return [name for name, _ in self.headers]

    def json(self) -> object:
        return json.loads(self.body)


def recorded(relative: str) -> Exchange:
    """The response in a recording: status, headers in order, body (de-chunked by curl)."""
    text = (PROTOCOLS / relative).read_bytes()
    head, _, rest = text[text.index(b"HTTP/1.1 ") :].partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = [(n, v) for n, _, v in (line.partition(": ") for line in lines[1:])]
    ends = [i for i in (rest.find(b"\n### "), rest.find(b"\n#### ")) if i >= 0]
    body = rest[: min(ends)] if ends else rest
    return Exchange(int(lines[0].split()[1]), headers, body, [])


def recorded_request(relative: str) -> tuple[str, str, bytes | None]:
    """The method, path and body of the request in a recording, to replay it."""
    text = (PROTOCOLS / relative).read_text()
    method, path = text.split("REQUEST: ", 1)[1].split()[:2]
    if "REQUEST BODY" not in text:
        return method, path, None
    body = text.split("REQUEST BODY", 1)[1].split("\n", 1)[1]
    return method, path, body[: body.index("\n#")].encode()


def sse_events(body: bytes) -> list[dict[str, object] | str]:
    events: list[dict[str, object] | str] = []
    for block in body.split(b"\n\n"):
        if block.startswith(b"data: "):
            data = block[6:].decode()
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def shape(value: object) -> object:
    """Field names (in order) and nesting of a JSON value, without the values."""
    if isinstance(value, dict):
        return [(key, shape(item)) for key, item in value.items()]
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return None


async def raw(
    fake: FakeBackend,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: tuple[str, ...] = (),
) -> Exchange:
    """One request on a raw socket, keeping the HTTP chunks exactly as the fake framed them."""
    reader, writer = await asyncio.open_connection("127.0.0.1", fake.port)
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *headers]
    if body is not None:
        lines += ["Content-Type: application/json", f"Content-Length: {len(body)}"]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b""))
    try:
        return await read_response(reader, head_only=method == "HEAD")
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def read_response(reader: asyncio.StreamReader, *, head_only: bool = False) -> Exchange:
    head = (await reader.readuntil(b"\r\n\r\n")).decode()
    lines = head.split("\r\n")[:-2]
    headers = [(n, v) for n, _, v in (line.partition(": ") for line in lines[1:])]
    exchange = Exchange(int(lines[0].split()[1]), headers, b"", [])
    if head_only:
        return exchange
    if exchange.header("Transfer-Encoding") == "chunked":
        while size := int((await reader.readline()).strip(), 16):
            exchange.chunks.append(await reader.readexactly(size))
            await reader.readexactly(2)
        await reader.readexactly(2)
        exchange.body = b"".join(exchange.chunks)
    else:
        exchange.body = await reader.readexactly(int(exchange.header("Content-Length") or 0))
    return exchange


def post(path: str, body: bytes) -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n\r\n"
    return head.encode() + body


def chat(**fields: object) -> bytes:
    return json.dumps({"model": "tiny", "messages": HELLO, **fields}).encode()


# -- the token counting rule -------------------------------------------------------------------


def test_token_rule_counts_markers_newlines_and_words() -> None:
    assert (
        apply_template(HELLO)
        == json.loads(recorded(f"{LLAMA}/25_apply_template.txt").body)["prompt"]
    )
    assert count_text_tokens("Hello world") == 2
    assert count_prompt_tokens(HELLO) == 1 + 5 + 3
    two = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "a b c"}]
    # "Be", " brief", "." (punctuation is a token of its own, as in the real vocabulary).
    assert count_prompt_tokens(two) == (3 + 5) + (3 + 5) + 3


@pytest.mark.asyncio
async def test_tokenize_of_the_template_agrees_with_the_rule(fake_llama: FakeBackend) -> None:
    messages = [{"role": "user", "content": "Tell me about the\nconstitution, please."}]
    async with httpx.AsyncClient(base_url=fake_llama.base_url) as http:
        prompt = (await http.post("/apply-template", json={"messages": messages})).json()["prompt"]
        tokens = (await http.post("/tokenize", json={"content": prompt})).json()["tokens"]

    assert len(tokens) == count_prompt_tokens(messages)
    assert all(isinstance(t, int) for t in tokens)


# -- llama-server ------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_llama_health_models_slots_match_recordings(fake_llama: FakeBackend) -> None:
    health = await raw(fake_llama, "GET", "/health")
    expected = recorded(f"{LLAMA}/02_health_ready.txt")
    assert (health.status, health.headers, health.body) == (200, expected.headers, expected.body)
    assert (await raw(fake_llama, "GET", "/v1/health")).body == expected.body

    models = await raw(fake_llama, "GET", "/v1/models")
    assert shape(models.json()) == shape(recorded(f"{LLAMA}/04_v1_models.txt").json())
    assert (await raw(fake_llama, "GET", "/models")).body == models.body

    slots = await raw(fake_llama, "GET", "/slots")
    assert shape(slots.json()) == shape(recorded(f"{LLAMA}/07_slots_idle.txt").json())
    assert [s["n_ctx"] for s in slots.json()] == [4096, 4096]  # type: ignore[index]


@pytest.mark.asyncio
async def test_llama_props_and_metrics_use_recorded_names(fake_llama: FakeBackend) -> None:
    props = (await raw(fake_llama, "GET", "/props")).json()
    real = recorded(f"{LLAMA}/06_props.txt").json()
    assert isinstance(props, dict) and isinstance(real, dict)
    assert set(props) <= set(real)
    assert props["total_slots"] == 2 and props["default_generation_settings"]["n_ctx"] == 4096

    metrics = await raw(fake_llama, "GET", "/metrics")
    assert metrics.header("Content-Type") == "text/plain; version=0.0.4"
    assert metrics.header("Process-Start-Time-Unix")
    text = metrics.body.decode()
    assert "llamacpp:requests_processing 0\n" in text and "llamacpp:requests_deferred 0\n" in text


@pytest.mark.asyncio
async def test_llama_error_shapes_match_recordings(fake_llama: FakeBackend) -> None:
    not_found = await raw(fake_llama, "GET", "/v1/nope")
    expected = recorded(f"{LLAMA}/45_err_unknown_route_get.txt")
    assert not_found.status == 404 and not_found.headers == expected.headers
    assert not_found.json() == expected.json()
    # There is no 405: a GET on a POST route is a 404 (47_).
    assert (await raw(fake_llama, "GET", "/v1/chat/completions")).status == 404

    malformed = await raw(fake_llama, "POST", "/v1/chat/completions", b'{"messages":[')
    assert malformed.status == 500 and malformed.header("Connection") == "close"
    error = malformed.json()["error"]  # type: ignore[index]
    assert error["type"] == "server_error"
    assert error["message"].startswith("[json.exception.parse_error.101]")

    missing = await raw(fake_llama, "POST", "/v1/chat/completions", b'{"model":"tiny"}')
    assert missing.json() == recorded(f"{LLAMA}/48_err_missing_messages.txt").json()
    not_array = await raw(fake_llama, "POST", "/v1/chat/completions", b'{"messages":"hi"}')
    assert not_array.json() == recorded(f"{LLAMA}/49_err_messages_not_array.txt").json()


@pytest.mark.asyncio
async def test_llama_prompt_over_slot_context_is_400_with_counts(fake_llama: FakeBackend) -> None:
    fake_llama.settings.n_ctx_per_slot = 256
    words = " ".join(["hello world"] * 400)
    reply = await raw(
        fake_llama,
        "POST",
        "/v1/chat/completions",
        chat(messages=[{"role": "user", "content": words}], stream=True),
    )

    expected = recorded(f"{LLAMA}/42_err_prompt_too_long_chat_stream.txt")
    assert (reply.status, reply.names()) == (400, expected.names())
    assert shape(reply.json()) == shape(expected.json())
    error = reply.json()["error"]  # type: ignore[index]
    assert error["n_ctx"] == 256 and error["n_prompt_tokens"] == 800 + 8
    assert error["message"] == (
        "request (808 tokens) exceeds the available context size (256 tokens), try increasing it"
    )


@pytest.mark.asyncio
async def test_llama_api_key_guards_everything_but_health(fake_llama: FakeBackend) -> None:
    fake_llama.settings.api_key = "sekret"

    assert (await raw(fake_llama, "GET", "/health")).status == 200
    no_key = await raw(fake_llama, "GET", "/v1/models")
    expected = recorded(f"{LLAMA}/81_apikey_models_no_key.txt")
    assert (no_key.status, no_key.headers, no_key.json()) == (
        401,
        expected.headers,
        expected.json(),
    )
    wrong = await raw(
        fake_llama, "POST", "/v1/chat/completions", chat(), ("Authorization: Bearer wrong",)
    )
    assert wrong.status == 401
    right = await raw(
        fake_llama,
        "POST",
        "/v1/chat/completions",
        chat(max_tokens=2),
        ("Authorization: Bearer sekret",),
    )
    assert right.status == 200


@pytest.mark.asyncio
async def test_llama_loading_answers_503_everywhere(fake_llama: FakeBackend) -> None:
    fake_llama.settings.loading_seconds = 3600

    health = await raw(fake_llama, "GET", "/health")
    expected = recorded(f"{LLAMA}/01_health_loading.txt")
    assert (health.status, health.headers, health.body) == (503, expected.headers, expected.body)
    assert (await raw(fake_llama, "POST", "/v1/chat/completions", chat())).status == 503

    fake_llama.settings.loading_seconds = 0
    assert (await raw(fake_llama, "GET", "/health")).status == 200


@pytest.mark.asyncio
async def test_llama_stream_matches_recorded_events_and_headers(fake_llama: FakeBackend) -> None:
    reply = await raw(
        fake_llama, "POST", "/v1/chat/completions",
        chat(max_tokens=6, stream=True, stream_options={"include_usage": True}),
    )  # fmt: skip

    expected = recorded(f"{LLAMA}/11_chat_stream_usage.txt")
    assert (reply.status, reply.names()) == (200, expected.names())
    ours, theirs = sse_events(reply.body), sse_events(expected.body)
    assert len(ours) == len(theirs) == 10
    assert [shape(e) for e in ours] == [shape(e) for e in theirs]
    assert ours[-1] == "[DONE]"
    usage = ours[-2]["usage"]  # type: ignore[index]
    assert usage["completion_tokens"] == 6 and usage["prompt_tokens"] == count_prompt_tokens(HELLO)


@pytest.mark.asyncio
async def test_llama_stream_without_usage_puts_timings_on_finish(fake_llama: FakeBackend) -> None:
    reply = await raw(fake_llama, "POST", "/v1/chat/completions", chat(max_tokens=4, stream=True))

    expected = recorded(f"{LLAMA}/12_chat_stream_no_usage.txt")
    assert [shape(e) for e in sse_events(reply.body)] == [
        shape(e) for e in sse_events(expected.body)
    ]


@pytest.mark.asyncio
async def test_llama_due_events_share_one_http_chunk(fake_llama: FakeBackend) -> None:
    fake_llama.settings.tokens_per_second = math.inf
    reply = await raw(fake_llama, "POST", "/v1/chat/completions", chat(max_tokens=3, stream=True))

    # Role chunk and every token in the first HTTP chunk, as in 13_: split on blank lines.
    assert reply.chunks[0].count(b"data: ") == 4
    assert reply.chunks[-1] == b"data: [DONE]\n\n"


@pytest.mark.asyncio
async def test_llama_nonstream_matches_recorded_fields(fake_llama: FakeBackend) -> None:
    reply = await raw(fake_llama, "POST", "/v1/chat/completions", chat(max_tokens=12))

    expected = recorded(f"{LLAMA}/10_chat_nonstream.txt")
    assert (reply.status, reply.names()) == (200, expected.names())
    assert shape(reply.json()) == shape(expected.json())


async def read_to_the_end(reader: asyncio.StreamReader) -> bytes:
    """What the server sends until it closes the connection (a reset reads as nothing)."""
    try:
        async with asyncio.timeout(10):
            return await reader.read()
    except ConnectionResetError:
        return b""


@pytest.mark.asyncio
async def test_llama_closes_the_connection_after_a_stream_though_its_headers_say_keep_alive(
    fake_llama: FakeBackend,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", fake_llama.port)
    # A non-streamed reply keeps the connection: the stream below is sent on it.
    writer.write(post("/v1/chat/completions", chat(max_tokens=2)))
    assert (await read_response(reader)).status == 200
    writer.write(post("/v1/chat/completions", chat(max_tokens=2, stream=True)))
    streamed = await read_response(reader)
    writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")

    # The next request on it reads nothing: the server closed the socket after the last chunk.
    assert await read_to_the_end(reader) == b""
    writer.close()
    expected = recorded(f"{LLAMA}/13_chat_stream_raw_chunked.txt")
    assert streamed.names() == expected.names()
    assert streamed.header("Keep-Alive") == "timeout=5, max=100"
    assert sse_events(streamed.body)[-1] == "[DONE]"
    assert [path for _, path, _ in fake_llama.requests] == ["/v1/chat/completions"] * 2
    assert fake_llama.connections_accepted == 1


@pytest.mark.asyncio
async def test_llama_closes_the_connection_after_a_stream_that_failed_under_200(
    fake_llama: FakeBackend,
) -> None:
    fake_llama.settings.fail_after_tokens = 1
    reader, writer = await asyncio.open_connection("127.0.0.1", fake_llama.port)
    writer.write(post("/v1/chat/completions", chat(max_tokens=4, stream=True)))
    failed = await read_response(reader)
    writer.write(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")

    assert await read_to_the_end(reader) == b""
    writer.close()
    assert failed.status == 200 and b'"error"' in failed.body


@pytest.mark.asyncio
async def test_ollama_keeps_the_connection_after_a_stream(fake_ollama: FakeBackend) -> None:
    # Ollama's HTTP server (Go net/http) keeps a finished chunked reply's connection; its
    # recordings show no `Connection: close` on a stream.
    reader, writer = await asyncio.open_connection("127.0.0.1", fake_ollama.port)
    writer.write(post("/api/chat", chat(options={"num_predict": 2})))
    streamed = await read_response(reader)
    writer.write(b"GET /api/version HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    version = await read_response(reader)
    writer.close()

    assert streamed.status == 200 and streamed.header("Connection") is None
    assert (version.status, version.json()) == (200, {"version": "0.24.0"})
    assert fake_ollama.connections_accepted == 1


@pytest.mark.asyncio
async def test_llama_generation_stops_when_the_slot_is_full(fake_llama: FakeBackend) -> None:
    fake_llama.settings.n_ctx_per_slot = 20
    body = (await raw(fake_llama, "POST", "/v1/chat/completions", chat(max_tokens=500))).json()

    assert isinstance(body, dict)
    assert body["usage"]["completion_tokens"] == 20 - count_prompt_tokens(HELLO)
    assert body["choices"][0]["finish_reason"] == "length"


@pytest.mark.asyncio
async def test_third_stream_gets_headers_only_when_a_slot_frees(fake_llama: FakeBackend) -> None:
    fake_llama.settings.tokens_per_second = 200
    body = chat(max_tokens=30, stream=True)
    first = [
        asyncio.create_task(raw(fake_llama, "POST", "/v1/chat/completions", body)) for _ in range(2)
    ]
    await fake_llama.wait_until(lambda: fake_llama.generating == 2)
    reader, writer = await asyncio.open_connection("127.0.0.1", fake_llama.port)
    writer.write(post("/v1/chat/completions", chat(max_tokens=3, stream=True)))
    await fake_llama.wait_until(lambda: fake_llama.queued == 1)
    metrics = (await raw(fake_llama, "GET", "/metrics")).body.decode()
    assert "llamacpp:requests_processing 2\n" in metrics
    assert "llamacpp:requests_deferred 1\n" in metrics
    assert (await raw(fake_llama, "GET", "/slots?fail_on_no_slot=1")).status == 503

    head = asyncio.create_task(reader.readuntil(b"\r\n\r\n"))
    await fake_llama.wait_until(lambda: fake_llama.tokens_sent >= 20)
    assert not head.done()  # both slots busy: not even the status line yet

    done = await asyncio.gather(*first)
    assert (await head).startswith(b"HTTP/1.1 200 OK")
    assert fake_llama.queued == 0
    assert all(sse_events(d.body)[-1] == "[DONE]" for d in done)
    writer.close()


@pytest.mark.asyncio
async def test_queued_stream_with_pings_gets_headers_with_the_first_ping(
    fake_llama: FakeBackend,
) -> None:
    fake_llama.settings.slots = 1
    fake_llama.settings.ping_interval = 0.05
    fake_llama.settings.hang_after_tokens = 1
    request = post("/v1/chat/completions", chat(max_tokens=3, stream=True))
    _, writer1 = await asyncio.open_connection("127.0.0.1", fake_llama.port)
    writer1.write(request)
    await fake_llama.wait_until(lambda: fake_llama.generating == 1)

    queued = await raw_head_and_first_chunk(fake_llama, request)

    head, _, first_chunk = queued.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK") and b"text/event-stream" in head
    assert first_chunk == b"3\r\n:\n\n\r\n"
    assert fake_llama.queued == 1
    writer1.close()


async def raw_head_and_first_chunk(fake: FakeBackend, request: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", fake.port)
    writer.write(request)
    data = await reader.readuntil(b"\r\n\r\n")
    data += await reader.readuntil(b"\n\n\r\n")
    writer.close()
    return data


@pytest.mark.asyncio
async def test_client_disconnect_cancels_generation(fake_llama: FakeBackend) -> None:
    fake_llama.settings.tokens_per_second = 100
    _, writer = await asyncio.open_connection("127.0.0.1", fake_llama.port)
    writer.write(post("/v1/chat/completions", chat(max_tokens=1000, stream=True)))
    await fake_llama.wait_until(lambda: fake_llama.tokens_sent >= 3)
    writer.close()

    await fake_llama.wait_until(lambda: fake_llama.cancelled == 1)
    assert fake_llama.generating == 0 and fake_llama.tokens_sent < 1000


@pytest.mark.asyncio
@pytest.mark.slow
async def test_pacing_follows_the_configured_rate(fake_llama: FakeBackend) -> None:
    fake_llama.settings.tokens_per_second = 50
    loop = asyncio.get_running_loop()
    started = loop.time()
    await raw(fake_llama, "POST", "/v1/chat/completions", chat(max_tokens=41, stream=True))
    elapsed = loop.time() - started

    # Token n is due at n/50 s: the 41st at 0.8 s. The upper bound (5x) leaves a busy machine
    # room and still tells the configured rate from a fifth of it.
    assert 0.79 <= elapsed < 4.0


# -- Ollama ------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_ollama_read_endpoints_match_recordings(fake_ollama: FakeBackend) -> None:
    root = await raw(fake_ollama, "GET", "/")
    expected = recorded(f"{OLLAMA}/01_root_get.txt")
    assert (root.status, root.names(), root.body) == (200, expected.names(), expected.body)
    head = await raw(fake_ollama, "HEAD", "/")
    assert head.header("Content-Length") == "17"

    version = await raw(fake_ollama, "GET", "/api/version")
    assert version.body == recorded(f"{OLLAMA}/02_version.txt").body
    tags = await raw(fake_ollama, "GET", "/api/tags")
    assert shape(tags.json()) == shape(recorded(f"{OLLAMA}/03_tags.txt").json())
    assert (await raw(fake_ollama, "GET", "/api/ps")).body == recorded(
        f"{OLLAMA}/04_ps_before.txt"
    ).body
    show = await raw(fake_ollama, "POST", "/api/show", b'{"model":"tiny"}')
    real_show = recorded(f"{OLLAMA}/05_show.txt").json()
    assert isinstance(real_show, dict) and set(show.json()) == set(real_show)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "recording",
    [
        "20_err_chat_unknown_model.txt",
        "20b_err_chat_unknown_model_nostream.txt",
        "20c_err_generate_unknown_model.txt",
        "20d_err_show_unknown_model.txt",
        "21_err_chat_malformed_json.txt",
        "21b_err_generate_malformed_json.txt",
        "21d_err_chat_missing_model.txt",
        "21e_err_chat_empty_body.txt",
        "21f_err_chat_bad_role_type.txt",
        "21g_err_chat_bad_option_type.txt",
        "22_err_unknown_route_get.txt",
        "22b_err_unknown_route_post.txt",
        "22c_err_wrong_method.txt",
    ],
)
@pytest.mark.asyncio
async def test_ollama_errors_match_recordings(fake_ollama: FakeBackend, recording: str) -> None:
    method, path, body = recorded_request(f"{OLLAMA}/{recording}")
    reply = await raw(fake_ollama, method, path, body)

    expected = recorded(f"{OLLAMA}/{recording}")
    assert (reply.status, reply.names(), reply.body) == (
        expected.status,
        expected.names(),
        expected.body,
    )
    assert reply.header("Content-Type") == expected.header("Content-Type")


@pytest.mark.asyncio
async def test_ollama_stream_is_one_line_per_chunk_with_recorded_fields(
    fake_ollama: FakeBackend,
) -> None:
    fake_ollama.settings.tokens_per_second = math.inf
    reply = await raw(fake_ollama, "POST", "/api/chat", chat(options={"num_predict": 8}))

    expected = recorded(f"{OLLAMA}/06_chat_stream.txt")
    assert (reply.status, reply.names()) == (200, expected.names())
    assert all(c.endswith(b"\n") and c.count(b"\n") == 1 for c in reply.chunks)
    ours = [json.loads(c) for c in reply.chunks]
    theirs = [json.loads(line) for line in expected.body.splitlines()]
    assert [shape(f) for f in ours] == [shape(f) for f in theirs]
    assert ours[-1]["prompt_eval_count"] == count_prompt_tokens(HELLO)


@pytest.mark.asyncio
async def test_ollama_truncates_silently_at_num_ctx_and_ps_shows_it(
    fake_ollama: FakeBackend,
) -> None:
    words = " ".join(f"word{n}" for n in range(700))
    messages = [{"role": "user", "content": words}]
    reply = await raw(
        fake_ollama, "POST", "/api/chat",
        chat(messages=messages, stream=False, options={"num_ctx": 64, "num_predict": 8}),
    )  # fmt: skip

    expected = recorded(f"{OLLAMA}/10_chat_numctx64_long.txt")
    assert (reply.status, shape(reply.json())) == (200, shape(expected.json()))
    assert reply.json()["prompt_eval_count"] == 64  # type: ignore[index]
    # 8 for the template; the real tokenizer splits the digits: 2 tokens for word0-word9, 3 for
    # word10-word99, 4 for the rest (Ollama reported 698 for the first 200 words, 10e_).
    assert count_prompt_tokens(messages) == 8 + 10 * 2 + 90 * 3 + 600 * 4
    models = (await raw(fake_ollama, "GET", "/api/ps")).json()["models"]  # type: ignore[index]
    assert shape(models) == shape(recorded(f"{OLLAMA}/07_ps_after.txt").json()["models"])  # type: ignore[index]
    assert models[0]["context_length"] == 64


@pytest.mark.asyncio
async def test_ollama_keep_alive_zero_unloads_after_the_reply(fake_ollama: FakeBackend) -> None:
    await raw(fake_ollama, "POST", "/api/chat", chat(stream=False, keep_alive="10m"))
    assert len((await raw(fake_ollama, "GET", "/api/ps")).json()["models"]) == 1  # type: ignore[index]

    await raw(fake_ollama, "POST", "/api/chat", chat(stream=False, keep_alive=0))

    assert (await raw(fake_ollama, "GET", "/api/ps")).json() == {"models": []}


@pytest.mark.asyncio
async def test_ollama_error_mid_stream_is_one_line_under_200(fake_ollama: FakeBackend) -> None:
    fake_ollama.settings.fail_after_tokens = 2
    reply = await raw(fake_ollama, "POST", "/api/generate", b'{"model":"tiny","prompt":"Tell me"}')

    lines = reply.body.splitlines()
    assert reply.status == 200 and len(lines) == 3
    assert json.loads(lines[-1]) == json.loads(
        recorded(f"{OLLAMA}/31_runner_killed_mid_stream.txt").body.splitlines()[2]
    )


@pytest.mark.asyncio
async def test_ollama_500_status_error_before_any_byte(fake_ollama: FakeBackend) -> None:
    fake_ollama.settings.status_error = 500
    reply = await raw(fake_ollama, "POST", "/api/chat", chat())

    expected = recorded("ollama/v0.33.0-rc2-no-runner/06_chat_stream_no_llama_server.txt")
    assert (reply.status, reply.names()) == (500, expected.names())
    assert reply.json()["error"].startswith("error starting llama-server")  # type: ignore[index]


# -- running it from sync code -----------------------------------------------------------------


def test_in_thread_serves_sync_callers() -> None:
    with FakeBackend.in_thread(FakeSettings(kind="ollama", tokens_per_second=math.inf)) as fake:
        reply = httpx.post(f"{fake.base_url}/api/chat", json={"model": "tiny", "messages": HELLO})
        fake.wait_until_sync(lambda: fake.stats.streams_finished == 1)

    frames = [json.loads(line) for line in reply.text.splitlines()]
    assert frames[-1]["done"] is True and frames[-1]["eval_count"] == 128
    assert fake.requests[0][:2] == ("POST", "/api/chat")


def test_demo_fakes_keep_a_bounded_record_of_requests() -> None:
    """A demo fake serves for days: after many requests over HTTP it keeps only the last
    DEMO_KEPT_REQUESTS (each with its prompt), not every prompt ever sent (issue 24 req 6: the
    kept prompts grew demo-backends by 12% in ten minutes of load)."""
    from lexweb_dev.management.commands.demo_backends import DEMO_KEPT_REQUESTS

    settings = FakeSettings(kind="llama_cpp", tokens_per_second=math.inf)
    sent = DEMO_KEPT_REQUESTS * 3
    with (
        FakeBackend.in_thread(settings, keep_requests=DEMO_KEPT_REQUESTS) as fake,
        httpx.Client() as client,
    ):
        for n in range(sent):
            client.post(f"{fake.base_url}/tokenize", json={"content": f"prompt {n} " + "x" * 4000})

    assert len(fake.requests) == DEMO_KEPT_REQUESTS < sent
    kept = [body["content"].split()[1] for _, _, body in fake.requests]  # type: ignore[index]
    assert kept == [str(n) for n in range(sent - DEMO_KEPT_REQUESTS, sent)]
