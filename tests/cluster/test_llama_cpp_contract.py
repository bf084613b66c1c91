"""Issue 29, requirement 1: one set of assertions about what a llama.cpp server answers, run
against the fake backend (lexweb_dev.fakebackend) and against a real llama.cpp server (the
`xllamacpp` wheel serving a tiny random-weight model, marked `llamacpp`), through the client and
on the wire. Where the two differ, the fake is changed: the real server is right.

Both serve the model as "tiny" with 2 slots of 512 tokens. Token counts differ between them
(the fake counts words, the real vocabulary splits words into pieces and digits one by one), so
the assertions compare each server with itself: the count it gives for a prompt is the count
its chat reports, the context it reports is the one it enforces.
"""

import json
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass

import httpx
import pytest
import pytest_asyncio

from apps.cluster.backends import (
    ChatRequest,
    ContextOverflow,
    Finished,
    LlamaCppClient,
    Message,
    Timeouts,
    Token,
)
from lexweb_dev.fakebackend import FakeBackend, FakeSettings, apply_template
from tests.harness.llamacpp import LlamaCppServer

CONTEXT_PER_SLOT = 512
SLOTS = 2
MODEL = "tiny"
TIMEOUTS = Timeouts(connect=5.0, first_token=30.0, between_tokens=30.0, probe=10.0)
MESSAGES: list[Message] = [
    {"role": "system", "content": "You draft motions."},
    {"role": "user", "content": "Summarise exhibit 12 of the\nplaintiff's production."},
]
# Over 512 tokens on both servers (the fake: 600 words; the real: more).
TOO_LONG: list[Message] = [{"role": "user", "content": "the deposition transcript " * 200}]
# At temperature 0, so that the real server answers the same request the same way.
GREEDY: dict[str, int] = {"temperature": 0, "seed": 1}
SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"granted": {"type": "boolean"}, "exhibit": {"type": "integer"}},
    "required": ["granted", "exhibit"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class Target:
    kind: str  # "fake" or "real"
    base_url: str


@pytest_asyncio.fixture(params=["fake", pytest.param("real", marks=pytest.mark.llamacpp)])
async def target(request: pytest.FixtureRequest) -> AsyncIterator[Target]:
    if request.param == "real":
        real: LlamaCppServer = request.getfixturevalue("llamacpp")
        assert (real.context_per_slot, real.slots, real.alias) == (CONTEXT_PER_SLOT, SLOTS, MODEL)
        yield Target("real", real.base_url)
        return
    settings = FakeSettings(
        kind="llama_cpp",
        tokens_per_second=5000.0,
        n_ctx_per_slot=CONTEXT_PER_SLOT,
        slots=SLOTS,
        model=MODEL,
    )
    async with FakeBackend(settings) as fake:
        yield Target("fake", fake.base_url)


@pytest_asyncio.fixture
async def client(target: Target) -> AsyncIterator[LlamaCppClient]:
    client = LlamaCppClient(target.base_url, timeouts=TIMEOUTS)
    yield client
    await client.aclose()


@pytest_asyncio.fixture
async def http(target: Target) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=target.base_url, timeout=30) as http:
        yield http


def chat(max_tokens: int = 8, json_schema: dict[str, object] | None = None) -> ChatRequest:
    return ChatRequest(
        model=MODEL,
        messages=MESSAGES,
        max_tokens=max_tokens,
        sampling=GREEDY,
        json_schema=json_schema,
    )


async def collect(client: LlamaCppClient, request: ChatRequest) -> tuple[str, Finished]:
    async with client.stream_chat(request) as stream:
        events = [event async for event in stream]
    finished = events[-1]
    assert isinstance(finished, Finished)
    assert all(isinstance(event, Token) for event in events[:-1])
    return "".join(e.text for e in events if isinstance(e, Token)), finished


def sse_events(body: bytes) -> list[dict[str, object] | str]:
    events: list[dict[str, object] | str] = []
    for block in body.split(b"\n\n"):
        assert block.startswith(b"data: ") or not block.strip(), block
        if block.startswith(b"data: "):
            data = block[6:].decode()
            events.append(data if data == "[DONE]" else json.loads(data))
    return events


def chat_body(max_tokens: int, **fields: object) -> dict[str, object]:
    return {"model": MODEL, "messages": MESSAGES, "max_tokens": max_tokens, **GREEDY, **fields}


# -- health, props, slots, models ----------------------------------------------------------------


@pytest.mark.asyncio
async def test_health_is_ok_with_every_slot_idle(
    client: LlamaCppClient, http: httpx.AsyncClient
) -> None:
    raw = await http.get("/health")
    report = await client.health()

    assert (raw.status_code, raw.json()) == (200, {"status": "ok"})
    assert (report.state, report.slots_total, report.slots_busy) == ("ok", SLOTS, 0)
    assert report.models_loaded == (MODEL,)


@pytest.mark.asyncio
async def test_props_slots_and_models_report_the_context_of_one_slot(
    client: LlamaCppClient,
) -> None:
    props = await client.props()
    slots = await client.slots()
    [model] = await client.list_models()

    settings = props["default_generation_settings"]
    assert isinstance(settings, dict) and settings["n_ctx"] == CONTEXT_PER_SLOT
    assert (props["total_slots"], props["model_alias"]) == (SLOTS, MODEL)
    assert "<|im_start|>" in str(props["chat_template"])
    assert props["endpoint_slots"] is True and props["endpoint_metrics"] is True
    assert slots is not None
    assert [(s["id"], s["n_ctx"], s["is_processing"]) for s in slots] == [
        (0, CONTEXT_PER_SLOT, False),
        (1, CONTEXT_PER_SLOT, False),
    ]
    assert (model.name, model.context_per_slot) == (MODEL, CONTEXT_PER_SLOT)


@pytest.mark.asyncio
async def test_metrics_count_prompt_and_predicted_tokens(client: LlamaCppClient) -> None:
    before = await client.metrics()
    _, finished = await collect(client, chat(max_tokens=5))
    after = await client.metrics()

    assert before is not None and after is not None
    assert after["tokens_predicted_total"] - before["tokens_predicted_total"] == 5
    assert after["requests_processing"] == after["requests_deferred"] == 0
    assert finished.completion_tokens == 5


# -- template and tokenizer ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_apply_template_writes_chatml(http: httpx.AsyncClient) -> None:
    response = await http.post("/apply-template", json={"messages": MESSAGES})

    assert response.status_code == 200
    assert response.json() == {"prompt": apply_template(MESSAGES)}


@pytest.mark.asyncio
async def test_tokenize_reads_each_chat_marker_as_one_token(http: httpx.AsyncClient) -> None:
    markers = await http.post("/tokenize", json={"content": "<|im_start|><|im_end|>"})
    text = await http.post("/tokenize", json={"content": "Exhibit 12"})

    assert markers.status_code == text.status_code == 200
    assert len(markers.json()["tokens"]) == 2
    tokens = text.json()["tokens"]
    assert tokens and all(isinstance(token, int) for token in tokens)


@pytest.mark.asyncio
async def test_counted_prompt_is_what_the_chat_reports(
    client: LlamaCppClient, http: httpx.AsyncClient
) -> None:
    counted = await client.count_tokens(MESSAGES)
    _, streamed = await collect(client, chat(max_tokens=2))
    whole = (await http.post("/v1/chat/completions", json=chat_body(2))).json()

    assert counted is not None and counted > len(MESSAGES) * 5
    assert streamed.prompt_tokens == whole["usage"]["prompt_tokens"] == counted


# -- chat: streamed and whole ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_stream_cut_at_max_tokens_finishes_with_length(client: LlamaCppClient) -> None:
    text, finished = await collect(client, chat(max_tokens=8))

    assert text
    assert (finished.finish_reason, finished.completion_tokens) == ("length", 8)
    assert finished.decode_tokens_per_second and finished.prefill_tokens_per_second
    assert finished.prompt_ms is not None and finished.decode_ms is not None


@pytest.mark.asyncio
async def test_sse_stream_frames_role_tokens_finish_usage_then_done(
    http: httpx.AsyncClient,
) -> None:
    body = chat_body(4, stream=True, stream_options={"include_usage": True})
    response = await http.post("/v1/chat/completions", json=body)
    events = sse_events(response.content)

    assert response.headers["content-type"] == "text/event-stream"
    first, *tokens, finish, usage, done = events
    assert isinstance(first, dict) and isinstance(finish, dict) and isinstance(usage, dict)
    assert first["choices"] == [
        {"finish_reason": None, "index": 0, "delta": {"role": "assistant", "content": None}}
    ]
    assert tokens and all(isinstance(t, dict) and t["object"] == "chat.completion.chunk"
                          for t in tokens)  # fmt: skip
    assert finish["choices"] == [{"finish_reason": "length", "index": 0, "delta": {}}]
    assert usage["choices"] == [] and "timings" in usage
    assert isinstance(usage["usage"], dict) and usage["usage"]["completion_tokens"] == 4
    assert done == "[DONE]"


@pytest.mark.asyncio
async def test_sse_stream_without_usage_puts_timings_on_the_finish(
    http: httpx.AsyncClient,
) -> None:
    response = await http.post("/v1/chat/completions", json=chat_body(3, stream=True))
    *_, finish, done = sse_events(response.content)

    assert isinstance(finish, dict) and done == "[DONE]"
    assert finish["choices"] == [{"finish_reason": "length", "index": 0, "delta": {}}]
    assert "usage" not in finish
    assert isinstance(finish["timings"], dict) and finish["timings"]["predicted_n"] == 3


@pytest.mark.asyncio
async def test_whole_reply_is_the_streamed_reply_with_usage(
    client: LlamaCppClient, http: httpx.AsyncClient
) -> None:
    streamed, _ = await collect(client, chat(max_tokens=8))
    response = await http.post("/v1/chat/completions", json=chat_body(8))
    body = response.json()

    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert (body["object"], body["model"]) == ("chat.completion", MODEL)
    assert re.fullmatch(r"chatcmpl-[A-Za-z0-9]{32}", body["id"])
    [choice] = body["choices"]
    assert choice["finish_reason"] == "length"
    assert choice["message"] == {"role": "assistant", "content": streamed}
    usage = body["usage"]
    assert usage["completion_tokens"] == 8
    assert usage["total_tokens"] == usage["prompt_tokens"] + 8
    assert body["timings"]["predicted_n"] == 8


@pytest.mark.asyncio
async def test_max_tokens_beyond_the_slot_stops_when_the_slot_is_full(
    client: LlamaCppClient,
) -> None:
    _, finished = await collect(client, chat(max_tokens=4 * CONTEXT_PER_SLOT))

    assert finished.finish_reason == "length"
    assert finished.prompt_tokens is not None and finished.completion_tokens is not None
    assert finished.prompt_tokens + finished.completion_tokens == CONTEXT_PER_SLOT


# -- structured output -------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_json_schema_reply_is_valid_json_and_ends_with_stop(client: LlamaCppClient) -> None:
    text, finished = await collect(client, chat(max_tokens=200, json_schema=SCHEMA))
    value = json.loads(text)

    assert finished.finish_reason == "stop"
    assert set(value) == {"granted", "exhibit"}
    assert isinstance(value["granted"], bool) and type(value["exhibit"]) is int


# -- context overflow --------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_prompt_over_the_slot_is_context_overflow_with_both_counts(
    client: LlamaCppClient,
) -> None:
    counted = await client.count_tokens(TOO_LONG)

    with pytest.raises(ContextOverflow) as error:
        await collect(client, ChatRequest(model=MODEL, messages=TOO_LONG, max_tokens=8))

    assert counted is not None and counted > CONTEXT_PER_SLOT
    assert (error.value.prompt_tokens, error.value.context) == (counted, CONTEXT_PER_SLOT)
    assert "deposition" not in str(error.value)


@pytest.mark.asyncio
@pytest.mark.parametrize("stream", [False, True])
async def test_context_overflow_is_a_400_before_any_stream(
    http: httpx.AsyncClient, stream: bool
) -> None:
    body = {"messages": TOO_LONG, "max_tokens": 8, "stream": stream}
    response = await http.post("/v1/chat/completions", json=body)
    error = response.json()["error"]

    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json; charset=utf-8"
    assert response.headers["connection"] == "close"
    assert (error["code"], error["type"], error["n_ctx"]) == (
        400,
        "exceed_context_size_error",
        CONTEXT_PER_SLOT,
    )
    assert error["message"] == (
        f"request ({error['n_prompt_tokens']} tokens) exceeds the available context size "
        f"({CONTEXT_PER_SLOT} tokens), try increasing it"
    )


# -- the reply's limit -------------------------------------------------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        ({"max_tokens": 3, "max_completion_tokens": 5}, 5),
        ({"n_predict": 2, "max_completion_tokens": 5, "max_tokens": 4}, 2),
        ({"max_tokens": 0}, 1),
        ({"max_tokens": 2.5}, 2),
        ({"max_tokens": -1}, None),
    ],
)
async def test_limit_fields_in_the_servers_order(
    http: httpx.AsyncClient, limits: dict[str, object], expected: int | None
) -> None:
    """n_predict, then max_completion_tokens, then max_tokens; -1 runs until the slot is full."""
    body = {"model": MODEL, "messages": MESSAGES, **GREEDY, **limits}
    response = await http.post("/v1/chat/completions", json=body)
    reply = response.json()

    usage = reply["usage"]
    assert reply["choices"][0]["finish_reason"] == "length"
    if expected is None:
        assert usage["prompt_tokens"] + usage["completion_tokens"] == CONTEXT_PER_SLOT
    else:
        assert usage["completion_tokens"] == expected


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("limit", "message"),
    [
        (-5, "Field 'max_tokens': Value must be between -1 <= value <= 2147483647, but got -5"),
        ("7", "Field 'max_tokens': [json.exception.type_error.302] type must be number, but is "
              "string"),
    ],
)  # fmt: skip
async def test_a_bad_limit_is_refused_before_the_prompt_is_counted(
    http: httpx.AsyncClient, limit: object, message: str
) -> None:
    response = await http.post(
        "/v1/chat/completions", json={"messages": TOO_LONG, "max_tokens": limit}
    )

    assert response.status_code == 400
    assert response.json() == {
        "error": {"code": 400, "message": message, "type": "invalid_request_error"}
    }


# -- continuing a reply (assistant prefill) ---------------------------------------------------

CONTINUED: list[Message] = [*MESSAGES, {"role": "assistant", "content": "The motion"}]


@pytest.mark.asyncio
async def test_a_last_assistant_message_is_continued_and_only_new_tokens_stream(
    client: LlamaCppClient, http: httpx.AsyncClient
) -> None:
    """What drafting's continuation of a reply cut at its limit relies on
    (apps/drafting/pipeline/endings.py): the template leaves the assistant message open, the
    prompt counts it, the stream sends only the new tokens, the whole reply repeats it."""
    template = await http.post("/apply-template", json={"messages": CONTINUED})
    counted = await client.count_tokens(CONTINUED)
    request = ChatRequest(model=MODEL, messages=CONTINUED, max_tokens=4, sampling=GREEDY)
    streamed, finished = await collect(client, request)
    body = {"model": MODEL, "messages": CONTINUED, "max_tokens": 4, **GREEDY}
    whole = (await http.post("/v1/chat/completions", json=body)).json()

    assert template.json() == {"prompt": apply_template(CONTINUED)}
    assert template.json()["prompt"].endswith("<|im_start|>assistant\nThe motion")
    assert counted is not None and finished.prompt_tokens == counted
    assert (finished.finish_reason, finished.completion_tokens) == ("length", 4)
    assert whole["choices"][0]["message"]["content"] == "The motion" + streamed
