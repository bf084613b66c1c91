"""Issue 29, requirement 1: the real llama.cpp server of the test suite (tests/harness/llamacpp.py)
behaves as the tests that use it assume: its vocabulary splits like a real one, a SIGTERM ends
it at once even with a stream open, and a client sees that as a dropped connection."""

import asyncio
import signal
from pathlib import Path

import httpx
import pytest

from apps.cluster.backends import (
    BackendUnavailable,
    ChatRequest,
    LlamaCppClient,
    Timeouts,
    Token,
)
from tests.harness.llamacpp import LlamaCppServer, running_llamacpp

pytestmark = pytest.mark.llamacpp

TIMEOUTS = Timeouts(connect=5.0, first_token=30.0, between_tokens=30.0, probe=10.0)


def test_digits_are_one_token_each_and_words_a_few_pieces(llamacpp: LlamaCppServer) -> None:
    def count(text: str) -> int:
        response = httpx.post(f"{llamacpp.base_url}/tokenize", json={"content": text})
        return len(response.json()["tokens"])

    assert count("ABC000123") - count("ABC") == 6
    assert 1 <= count(" plaintiff") <= 3
    assert count(" the deposition transcript of the plaintiff") < len(
        " the deposition transcript of the plaintiff"
    )


@pytest.mark.asyncio
async def test_sigterm_ends_the_server_at_once_and_the_stream_drops(
    tiny_gguf: Path, tmp_path: Path
) -> None:
    # One slot of 16,384 tokens: the reply (to the slot's end) takes seconds, far longer than
    # the test needs to stop the server in the middle of it.
    with running_llamacpp(tiny_gguf, tmp_path / "server.log", context=16384, slots=1) as server:
        client = LlamaCppClient(server.base_url, timeouts=TIMEOUTS)
        request = ChatRequest(
            model="tiny", messages=[{"role": "user", "content": "Draft."}], max_tokens=-1
        )
        received: list[object] = []
        try:
            with pytest.raises(BackendUnavailable, match="dropped the connection") as error:
                async with client.stream_chat(request) as stream:
                    async for event in stream:
                        received.append(event)
                        if len(received) == 1:
                            server.process.send_signal(signal.SIGTERM)
            status = await asyncio.to_thread(server.process.wait, 5)
            report = await client.health()
        finally:
            await client.aclose()

    assert status == 0
    assert received and all(isinstance(event, Token) for event in received)
    assert server.base_url in str(error.value)
    assert report.state == "down"
    with pytest.raises(BackendUnavailable):
        await LlamaCppClient(server.base_url, timeouts=TIMEOUTS).list_models()
