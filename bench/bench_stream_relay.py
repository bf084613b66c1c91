"""Streaming relay through the backend clients: 20 concurrent streams from the fake backend at
2,000 tokens/s each (40,000 tokens/s in all), read through LlamaCppClient / OllamaClient.

Reports, per kind, the backend's rate as the fake counted it (tokens written over the time from
its first to its last token write), the rate at which the client handed tokens to its caller
(same span measure, same clock: time.monotonic is system-wide on Linux), their ratio (target
>= 0.99), tokens lost (must be 0) and the client's CPU seconds per 1,000 tokens. The fake runs
in a separate process, so the CPU time (time.process_time of this process) is the client's
alone. The peer in the same run reads the same streams with raw httpx line iteration and a
substring count, no parsing: the floor of what any client must spend.

Prints one JSON object. Run with `make bench` (or `python -m bench.bench_stream_relay`).
"""

import asyncio
import json
import multiprocessing
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection

import httpx

from apps.cluster.backends import (
    ChatRequest,
    LlamaCppClient,
    Message,
    OllamaClient,
    Timeouts,
    Token,
)
from apps.cluster.backends.base import BackendClient
from lexweb_dev.fakebackend import FakeBackend, FakeSettings, Kind, Stats

STREAMS = 20
RATE = 2000.0
TOKENS = 6000  # per stream: 3 s at 2,000 tokens/s
TIMEOUTS = Timeouts(connect=10.0, first_token=60.0, between_tokens=30.0)
MESSAGES: list[Message] = [{"role": "user", "content": "Write the whole brief."}]
KINDS: tuple[Kind, ...] = ("llama_cpp", "ollama")
# Substrings that mark a token event, for the peer that does not parse.
TOKEN_MARK = {"llama_cpp": b'"delta":{"content":"', "ollama": b'"done":false'}


def _serve_fake(kind: Kind, conn: Connection) -> None:
    """In the child process: one fake backend; answers "stats" (and resets them) until "stop"."""
    settings = FakeSettings(
        kind=kind, tokens_per_second=RATE, slots=STREAMS, n_ctx_per_slot=TOKENS + 1000
    )
    with FakeBackend.in_thread(settings) as fake:
        conn.send(fake.port)
        while (command := conn.recv()) != "stop":
            if command == "stats":
                conn.send((asdict(fake.stats), time.process_time()))
                fake.stats = Stats()


@dataclass
class Run:
    tokens: int
    first_at: float
    last_at: float
    cpu_seconds: float

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / (self.last_at - self.first_at)


async def _ours(client: BackendClient, marks: list[float]) -> int:
    request = ChatRequest(model="tiny", messages=MESSAGES, max_tokens=TOKENS)
    count = 0
    async with client.stream_chat(request) as stream:
        async for event in stream:
            if isinstance(event, Token):
                count += 1
                if count == 1:
                    marks.append(time.monotonic())
    marks.append(time.monotonic())
    return count


async def _naive(http: httpx.AsyncClient, kind: Kind, marks: list[float]) -> int:
    path: str = "/v1/chat/completions"
    body: dict[str, object] = {"stream": True, "max_tokens": TOKENS}
    if kind == "ollama":
        path, body = ("/api/chat", {"stream": True, "options": {"num_predict": TOKENS}})
    count = 0
    mark = TOKEN_MARK[kind].decode()
    payload: dict[str, object] = {"model": "tiny", "messages": MESSAGES, **body}
    async with http.stream("POST", path, json=payload) as response:
        async for line in response.aiter_lines():
            if mark in line:
                count += 1
                if count == 1:
                    marks.append(time.monotonic())
    marks.append(time.monotonic())
    return count


async def _measure(stream: Callable[[list[float]], Awaitable[int]]) -> Run:
    marks: list[float] = []
    cpu = time.process_time()
    counts = await asyncio.gather(*(stream(marks) for _ in range(STREAMS)))
    return Run(sum(counts), min(marks), max(marks), time.process_time() - cpu)


def _report(run: Run, backend_rate: float) -> dict[str, float | int]:
    return {
        "client_tokens_per_second": round(run.tokens_per_second, 1),
        "ratio_to_backend": round(run.tokens_per_second / backend_rate, 4),
        "tokens_lost": STREAMS * TOKENS - run.tokens,
        "cpu_seconds_per_1000_tokens": round(run.cpu_seconds / run.tokens * 1000, 5),
    }


def _bench_kind(kind: Kind) -> dict[str, object]:
    """Ours, then the peer, each against a fake whose counters were just reset."""
    context = multiprocessing.get_context("spawn")
    control, child_end = context.Pipe()
    child = context.Process(target=_serve_fake, args=(kind, child_end), daemon=True)
    child.start()
    runs: dict[str, tuple[Run, float]] = {}
    try:
        base_url = f"http://127.0.0.1:{control.recv()}"
        for name in ("ours", "peer"):
            control.send("stats")  # resets the fake's counters
            control.recv()
            run = asyncio.run(_one(kind, base_url, name))
            control.send("stats")
            stats, _fake_cpu = control.recv()
            span = stats["last_token_at"] - stats["first_token_at"]
            runs[name] = (run, stats["tokens_sent"] / span)
    finally:
        control.send("stop")
        child.join(10)
    (ours, backend), (peer, peer_backend) = runs["ours"], runs["peer"]
    return {
        "backend_tokens_per_second": round(backend, 1),
        **_report(ours, backend),
        "peer": "httpx aiter_lines + substring count (no parsing)",
        "peer_backend_tokens_per_second": round(peer_backend, 1),
        **{f"peer_{key}": value for key, value in _report(peer, peer_backend).items()},
        "cpu_ratio_to_peer": round(ours.cpu_seconds / peer.cpu_seconds, 3),
    }


async def _one(kind: Kind, base_url: str, name: str) -> Run:
    if name == "ours":
        cls = LlamaCppClient if kind == "llama_cpp" else OllamaClient
        client = cls(base_url, timeouts=TIMEOUTS)
        try:
            return await _measure(lambda marks: _ours(client, marks))
        finally:
            await client.aclose()
    async with httpx.AsyncClient(
        base_url=base_url, timeout=60.0, limits=httpx.Limits(max_connections=None)
    ) as http:
        return await _measure(lambda marks: _naive(http, kind, marks))


def main() -> None:
    result: dict[str, object] = {
        "benchmark": "stream_relay_through_backend_client",
        "streams": STREAMS,
        "tokens_per_stream": TOKENS,
        "backend_nominal_tokens_per_second": STREAMS * RATE,
        "target_ratio": 0.99,
    }
    for kind in KINDS:
        result[kind] = _bench_kind(kind)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
