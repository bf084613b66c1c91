"""Streaming relay through the backend clients: 20 concurrent streams from the fake backend at
2,000 tokens/s each (40,000 tokens/s in all), read through LlamaCppClient / OllamaClient.

Reports, per kind, the backend's rate as the fake counted it (tokens written over the time from
its first to its last token write), the rate at which the client handed tokens to its caller
(same span measure, same clock: time.monotonic is system-wide on Linux), their ratio (target
>= 0.99), tokens lost (must be 0) and the client's CPU seconds per 1,000 tokens. The fake runs
in a separate process, so the CPU time (time.process_time of this process) is the client's
alone. The peer in the same run reads the same streams with raw httpx line iteration and a
substring count, no parsing: the floor of what any client must spend.

Then the same on a real llama.cpp server (issue 29, Performance): llama.cpp's own server code
from the xllamacpp wheel serving the tests' tiny GGUF on 127.0.0.1, one thread, started as
tests/harness/llamacpp.py starts it (bench_token_counts does the same), REAL_STREAMS slots and
as many concurrent streams of REAL_TOKENS tokens each, at temperature 0 (the tiny model never
ends a reply by itself, so each runs to max_tokens). The backend's rate is the server's own:
each reply's final chunk carries `timings` (predicted_n tokens over predicted_ms), summed over
the concurrent streams; the client's rate is the tokens it handed to its caller over its own
first-to-last-token span, per stream, summed the same way. relay_ratio = client / server
(target >= 0.99); tokens lost = the server's predicted_n minus the tokens the client handed on
(must be 0). The peer reads the same server with raw httpx lines (json only for the final
timings chunk). The server runs as fast as its one thread allows (no pacing): a few thousand
tokens/s for one stream, about 1,500 in all for four on this machine.

Prints one JSON object. Run with `make bench` (or `python -m bench.bench_stream_relay`).
"""

import asyncio
import json
import multiprocessing
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path

import httpx

from apps.cluster.backends import (
    ChatRequest,
    Finished,
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
# The real server: fewer streams than the fake's, as many slots as streams; long enough replies
# that one token more or less in a span (the first token's own decode) moves a rate by 0.1%.
REAL_STREAMS = 4
REAL_TOKENS = 1024
REAL_SLOT_CONTEXT = REAL_TOKENS + 128  # the prompt is 29 tokens in the tiny vocabulary
REAL_SAMPLING = {"temperature": 0}


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


@dataclass
class RealStream:
    """One stream from the real server: what the client handed on, over which span of its own
    clock, and what the server says it generated (its final chunk's `timings`)."""

    tokens: int
    first_at: float
    last_at: float
    server_tokens: int
    server_ms: float

    @property
    def client_rate(self) -> float:
        return self.tokens / (self.last_at - self.first_at)

    @property
    def server_rate(self) -> float:
        return self.server_tokens / self.server_ms * 1000


async def _real_ours(client: LlamaCppClient) -> RealStream:
    request = ChatRequest(
        model="tiny", messages=MESSAGES, max_tokens=REAL_TOKENS, sampling=REAL_SAMPLING
    )
    count, first_at, finished = 0, 0.0, None
    async with client.stream_chat(request) as stream:
        async for event in stream:
            if isinstance(event, Token):
                count += 1
                if count == 1:
                    first_at = time.monotonic()
                last_at = time.monotonic()
            elif isinstance(event, Finished):
                finished = event
    assert finished is not None and finished.completion_tokens and finished.decode_ms
    return RealStream(count, first_at, last_at, finished.completion_tokens, finished.decode_ms)


async def _real_naive(http: httpx.AsyncClient) -> RealStream:
    payload = {
        **REAL_SAMPLING,
        "model": "tiny",
        "messages": MESSAGES,
        "max_tokens": REAL_TOKENS,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    count, first_at, timings = 0, 0.0, None
    mark = TOKEN_MARK["llama_cpp"].decode()
    async with http.stream("POST", "/v1/chat/completions", json=payload) as response:
        async for line in response.aiter_lines():
            if mark in line:
                count += 1
                if count == 1:
                    first_at = time.monotonic()
                last_at = time.monotonic()
            elif '"timings"' in line:
                timings = json.loads(line.removeprefix("data: "))["timings"]
    assert timings is not None
    return RealStream(
        count, first_at, last_at, int(timings["predicted_n"]), float(timings["predicted_ms"])
    )


async def _real_measure(base_url: str, name: str) -> tuple[list[RealStream], float]:
    """REAL_STREAMS concurrent streams; the streams and this process's CPU seconds."""
    if name == "ours":
        client = LlamaCppClient(base_url, timeouts=TIMEOUTS)
        try:
            cpu = time.process_time()
            streams = await asyncio.gather(*(_real_ours(client) for _ in range(REAL_STREAMS)))
            return list(streams), time.process_time() - cpu
        finally:
            await client.aclose()
    async with httpx.AsyncClient(
        base_url=base_url, timeout=60.0, limits=httpx.Limits(max_connections=None)
    ) as http:
        cpu = time.process_time()
        streams = await asyncio.gather(*(_real_naive(http) for _ in range(REAL_STREAMS)))
        return list(streams), time.process_time() - cpu


def _real_report(streams: list[RealStream], cpu_seconds: float) -> dict[str, float | int]:
    backend = sum(s.server_rate for s in streams)
    client = sum(s.client_rate for s in streams)
    received = sum(s.tokens for s in streams)
    span = max(s.last_at for s in streams) - min(s.first_at for s in streams)
    return {
        "backend_tokens_per_second": round(backend, 1),
        "client_tokens_per_second": round(client, 1),
        "relay_ratio": round(client / backend, 4),
        "min_stream_ratio": round(min(s.client_rate / s.server_rate for s in streams), 4),
        "tokens_generated": sum(s.server_tokens for s in streams),
        "tokens_received": received,
        "tokens_lost": sum(s.server_tokens for s in streams) - received,
        "client_tokens_per_second_over_all_streams_span": round(received / span, 1),
        "cpu_seconds_per_1000_tokens": round(cpu_seconds / received * 1000, 5),
    }


def _bench_real() -> dict[str, object]:
    """Ours, then the peer, against one real llama.cpp server, after a short warm-up call."""
    # The tests' harness reads Django's settings (the repository root); nothing else needs them.
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
    import django

    django.setup()
    from tests.harness.llamacpp import running_llamacpp
    from tests.harness.tiny_gguf import write_tiny_gguf

    with tempfile.TemporaryDirectory() as folder:
        model = write_tiny_gguf(Path(folder) / "tiny.gguf")
        log = Path(folder) / "server.log"
        context = REAL_SLOT_CONTEXT * REAL_STREAMS
        with running_llamacpp(model, log, context=context, slots=REAL_STREAMS) as server:
            httpx.post(
                f"{server.base_url}/v1/chat/completions",
                json={"model": "tiny", "messages": MESSAGES, "max_tokens": 16},
                timeout=60,
            ).raise_for_status()
            ours, ours_cpu = asyncio.run(_real_measure(server.base_url, "ours"))
            peer, peer_cpu = asyncio.run(_real_measure(server.base_url, "peer"))
    peer_report = _real_report(peer, peer_cpu)
    return {
        "server": "llama.cpp (xllamacpp), tiny GGUF, CPU, 1 thread, unpaced",
        "streams": REAL_STREAMS,
        "slots": REAL_STREAMS,
        "tokens_per_stream": REAL_TOKENS,
        **_real_report(ours, ours_cpu),
        "peer": "httpx aiter_lines + substring count (json only for the timings chunk)",
        **{f"peer_{key}": value for key, value in peer_report.items()},
        "cpu_ratio_to_peer": round(ours_cpu / peer_cpu, 3),
    }


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
    result["llama_cpp_real"] = _bench_real()
    result["load_average"] = os.getloadavg()[0]
    print(json.dumps(result))


if __name__ == "__main__":
    main()
