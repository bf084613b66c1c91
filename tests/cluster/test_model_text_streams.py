"""What a model writes reaches lexweb through a backend client's stream, where it becomes data
(lexweb.text.model_text, applied in apps/cluster/backends/streams.py) whoever reads the stream;
and a body cut at any byte, or split into chunks anywhere, decodes to the same tokens or to a
clear BackendProtocolError, never to another exception. Bodies from the fake servers over HTTP
(the fake llama-server sends tokens as the real one does: raw UTF-8, controls as escapes)."""

import math

import httpx
import pytest

from apps.cluster.backends import ChatRequest, Finished, LlamaCppClient, OllamaClient, Token
from apps.cluster.backends.base import BackendProtocolError, ChatEvent, Message
from apps.cluster.backends.llama_cpp import _SseChatDecoder
from apps.cluster.backends.ollama import _NdjsonChatDecoder
from lexweb.text import model_text
from lexweb_dev.fakebackend import FakeBackend, FakeSettings, Kind

HOSTILE = "Pay \u202eten\u202c dollars\x05 \ufffe now \x00\x1b[0m \u2066徽\u2069 💊 \x85end\uffff."
MESSAGES: list[Message] = [{"role": "user", "content": "Draft the motion."}]


def _client(kind: Kind, base_url: str) -> LlamaCppClient | OllamaClient:
    return LlamaCppClient(base_url) if kind == "llama_cpp" else OllamaClient(base_url)


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["llama_cpp", "ollama"])
async def test_every_token_a_client_yields_is_model_text(kind: Kind) -> None:
    settings = FakeSettings(kind=kind, tokens_per_second=math.inf, reply=HOSTILE)
    async with FakeBackend(settings) as fake:
        client = _client(kind, fake.base_url)
        request = ChatRequest(model="tiny", messages=MESSAGES, max_tokens=64)
        try:
            async with client.stream_chat(request) as stream:
                events = [event async for event in stream]
        finally:
            await client.aclose()

    tokens = [event.text for event in events if isinstance(event, Token)]
    assert "".join(tokens) == model_text(HOSTILE) == "Pay ten dollars  now [0m 徽 💊 end."
    assert all(model_text(token) == token for token in tokens)
    assert isinstance(events[-1], Finished) and events[-1].finish_reason == "stop"


async def _body(kind: Kind) -> bytes:
    """A whole streamed reply as the fake server sends it."""
    settings = FakeSettings(kind=kind, tokens_per_second=math.inf, reply=HOSTILE)
    async with FakeBackend(settings) as fake, httpx.AsyncClient(base_url=fake.base_url) as http:
        if kind == "llama_cpp":
            path = "/v1/chat/completions"
            body = {
                "messages": MESSAGES,
                "max_tokens": 64,
                "stream": True,
                "stream_options": {"include_usage": True},
            }
        else:
            path = "/api/chat"
            body = {"model": "tiny", "messages": MESSAGES, "options": {"num_predict": 64}}
        response = await http.post(path, json=body)
    assert response.status_code == 200
    return response.content


def _decoder(kind: Kind) -> _SseChatDecoder | _NdjsonChatDecoder:
    return _SseChatDecoder("the drafter") if kind == "llama_cpp" else _NdjsonChatDecoder("x")


def _decode(kind: Kind, *chunks: bytes) -> list[ChatEvent]:
    decoder = _decoder(kind)
    events = [event for chunk in chunks for event in decoder.feed(chunk)]
    return events + decoder.end()


def _text(events: list[ChatEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, Token))


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["llama_cpp", "ollama"])
@pytest.mark.slow
async def test_a_body_split_anywhere_decodes_to_the_same_events(kind: Kind) -> None:
    body = await _body(kind)
    whole = _decode(kind, body)
    assert model_text(_text(whole)) == model_text(HOSTILE)

    for cut in range(1, len(body)):
        assert _decode(kind, body[:cut], body[cut:]) == whole, cut


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", ["llama_cpp", "ollama"])
async def test_a_body_cut_at_any_byte_is_a_protocol_error_or_a_finished_prefix(kind: Kind) -> None:
    body = await _body(kind)
    full = _text(_decode(kind, body))
    finished = 0
    for cut in range(len(body)):
        try:
            events = _decode(kind, body[:cut])
        except BackendProtocolError:
            continue
        # Accepted only once the reply's final event had arrived: then nothing is missing.
        assert isinstance(events[-1], Finished), cut
        assert _text(events) == full, cut
        finished += 1
    assert finished < len(body) // 4  # most cuts lose something, and say so
