"""Live relay of drafting runs (issue 12, Performance): 20 runs streaming at 120 tokens/s each
through the product's path, against a raw relay in the same run.

Ours: 20 summary runs (one summarizer stage each) on a bench site whose summarizer is one
llama-server with 20 slots, played by the fake backend in a process of its own at 120 tok/s.
The stages run in a real Procrastinate worker started exactly as `make run` starts it
(lexweb.launcher: one worker per GPU host, its boards' queues, `manage.py board_queues`), next
to the `cpu` and `cluster` workers. Tokens go fake -> worker (TokenBatcher: stored as numbered
run events, published through the PostgreSQL channel layer, lexweb.channel_layer) -> the real
ASGI server (uvicorn, as `make run` starts it) -> 20 real websocket clients on
`ws/cases/<id>/runs/<id>/events/`, each a member of the case (Bearer token).

Peer in the same run: a raw relay in its own process (httpx streams from the same fake, each
token sent at once to a websocket client: no database, no channel layer), 20 clients, the same
rate and tokens.

Measured, for both: every token received exactly once and in order (the text the client got,
by offset, against the fake's reply; for ours also every event number once, in order); the
added latency of each token = the client's receive time - the time the fake wrote it
(wall clock of one machine: the fake records its writes by a tag each prompt carries, a hook of
this bench's subclass, off in the product's fake), p50/p95/p99 (target p99 < 100 ms); the CPU
seconds per 1,000 tokens of the stage worker (and of the web server), against the raw relay's.
Every stream is held at the fake until all 20 clients are connected and all 20 generations
have reached it, so the latency measured is the live path's (not a catch-up's, nor a stage's
set-up: choosing its evidence and counting its prompt come before its first token). The load
average is printed with the figures: the development machine has 2 cores and is shared.

Then the same path on a real llama.cpp server (issue 29, Performance): llama.cpp's own server
code (xllamacpp) serving the tests' tiny GGUF on the CPU (tests/harness/llamacpp.py, one thread,
REAL_STREAMS slots of REAL_SLOT_TOKENS, unpaced) routed as the summarizer of a second bench
site; REAL_STREAMS summary runs, their websocket clients connected before the stage worker
starts, so every token goes out live. The server's rate is its own (`timings`, kept on each
call record as decode_tokens_per_second); the client's is the tokens the stage counted over the
span between the first and the last token event the client received. relay_ratio = client /
server, summed over the streams (target >= 0.99); the text the client received must be the
stage's stored text, whole. The batcher stores at most every LEXWEB_RUN_TOKEN_FLUSH_MS, so each
end of the client's span may sit up to one interval off the server's (~2% of a 3 s stream).
Peer in the same run: the raw relay above, against the same real server.

Prints one JSON object. Run with `make bench` (or `python -m bench.bench_run_relay` with
DATABASE_URL set to a migrated database of its own; it writes cluster rows, a case and runs).
"""

import asyncio
import bisect
import contextlib
import contextvars
import functools
import io
import json
import multiprocessing
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from multiprocessing.connection import Connection
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

import httpx  # noqa: E402
import psutil  # noqa: E402
import pymupdf  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from websockets.asyncio.client import connect  # noqa: E402
from websockets.asyncio.server import ServerConnection, serve  # noqa: E402

from apps.accounts import services as account_services  # noqa: E402
from apps.accounts.models import User  # noqa: E402
from apps.cases.models import Case, Membership  # noqa: E402
from apps.cluster.models import Backend, BackendHealth, Board  # noqa: E402
from apps.cluster.services import site  # noqa: E402
from apps.documents import services as document_services  # noqa: E402
from apps.drafting.models import Run  # noqa: E402
from apps.drafting.services import runs  # noqa: E402
from apps.evidence.services import packets as packet_services  # noqa: E402
from lexweb import launcher  # noqa: E402
from lexweb_dev.fakebackend import FakeBackend, FakeSettings, reply_pieces  # noqa: E402
from lexweb_dev.fakebackend.server import App, Exchange, Reply  # noqa: E402

STREAMS = 20
RATE = 120.0
TOKENS = 960  # per stream: 8 s at 120 tok/s (the summarizer asks for at most 1,024)
TARGET_P99_MS = 100.0
STREAM_TIMEOUT_SECONDS = 180
CASE_NUMBER = "BENCH-RUN-RELAY"
HOST = "relay-bench"
BACKEND = "relay-bench-llama"
MODEL = "qwen3-4b"


def _word(n: int) -> str:
    """A distinct lower-case word for each n, one token in the fake's tokenizer (digits would be
    a token each)."""
    letters = ""
    while True:
        n, digit = divmod(n, 26)
        letters = chr(ord("a") + digit) + letters
        if n == 0:
            return "w" + letters


REPLY = " ".join(_word(n) for n in range(TOKENS))
PIECES = reply_pieces(REPLY, TOKENS)[0]
assert len(PIECES) == TOKENS and "".join(PIECES) == REPLY, "one token a word"
_TAG = re.compile(r"relay-[0-9a-f]{8}-[a-z]+-\d+")

# One host, one board, one llama-server with 20 slots serving the summarizer.
SITE = f"""
hosts:
  - name: {HOST}
    description: bench_run_relay (a fake llama-server on 127.0.0.1)
    gpus:
      - {{index: 0, name: Tesla V100-SXM2-32GB, memory_bytes: 34_359_738_368,
         compute_capability: "7.0"}}
    boards:
      - {{name: relay, gpus: [0]}}
backends:
  - {{name: {BACKEND}, kind: llama_cpp, url: "http://127.0.0.1:{{port}}", host: {HOST},
     board: relay, slots: {STREAMS}}}
deployments:
  - backend: {BACKEND}
    model: {MODEL}
    architecture: qwen3
    total_params: 4_020_000_000
    active_params: 4_020_000_000
    quantization: Q8_0
    file_size_bytes: 4_280_000_000
    weights_bytes: 4_270_000_000
    n_layers: 36
    n_kv_heads: 8
    head_dim_k: 128
    head_dim_v: 128
    context_size: {STREAMS * 4096}
    kv_cache_type: q4_0
    flash_attention: true
    parallel_slots: {STREAMS}
    sampling: {{temperature: 0.0}}
roles:
  summarizer: [{BACKEND}/{MODEL}]
"""
REAL_STREAMS = 4
REAL_SLOT_TOKENS = 4096
REAL_HOST = "relay-bench-real"
REAL_BACKEND = "relay-bench-real-llama"
REAL_MODEL = "tiny"  # the alias the real server serves under (tests/harness/llamacpp.py)
REAL_SITE = f"""
hosts:
  - name: {REAL_HOST}
    description: bench_run_relay (a real llama.cpp server on 127.0.0.1, on the CPU)
    gpus:
      - {{index: 0, name: Tesla V100-SXM2-32GB, memory_bytes: 34_359_738_368,
         compute_capability: "7.0"}}
    boards:
      - {{name: relay-real, gpus: [0]}}
backends:
  - {{name: {REAL_BACKEND}, kind: llama_cpp, url: "http://127.0.0.1:{{port}}", host: {REAL_HOST},
     board: relay-real, slots: {REAL_STREAMS}}}
deployments:
  - backend: {REAL_BACKEND}
    model: {REAL_MODEL}
    architecture: llama
    total_params: 1_000_000
    active_params: 1_000_000
    quantization: F32
    file_size_bytes: 10_000_000
    weights_bytes: 10_000_000
    n_layers: 2
    n_kv_heads: 2
    head_dim_k: 16
    head_dim_v: 16
    context_size: {REAL_STREAMS * REAL_SLOT_TOKENS}
    kv_cache_type: f16
    flash_attention: false
    parallel_slots: {REAL_STREAMS}
    sampling: {{temperature: 0.0}}
roles:
  summarizer: [{REAL_BACKEND}/{REAL_MODEL}]
"""
PAGE = (
    "Lease agreement between Acme Ltd and Widget LLC for the warehouse at 12 Dock Road. The "
    "lessee shall pay the rent on the first day of each month."
)


# --- The fake, in a process of its own ---------------------------------------------------------

_STREAM_TAG: contextvars.ContextVar[str] = contextvars.ContextVar("stream_tag", default="")


class _Tagging:
    """The fake's app, with each request's bench tag (found in its prompt) put in context for
    the generation it starts."""

    def __init__(self, inner: App) -> None:
        self.inner = inner

    async def handle(self, exchange: Exchange) -> Reply | None:
        match = _TAG.search(exchange.request.body.decode("utf-8", "replace"))
        _STREAM_TAG.set(match.group(0) if match else "")
        return await self.inner.handle(exchange)


class TimedFake(FakeBackend):
    """Bench only: records when each token of a tagged stream was written (time.time(), one
    list per generation of that tag), and holds tagged generations until released. The wire
    format is the fake's own."""

    def __init__(self, fake_settings: FakeSettings) -> None:
        super().__init__(fake_settings)
        self.sent: dict[str, list[list[float]]] = {}
        self.released = asyncio.Event()
        self.waiting = 0  # tagged generations held now

    async def start(self) -> None:
        await super().start()
        if self._app is not None:
            self._app = _Tagging(self._app)

    async def pace(self, count: int, send: Callable[[int, int], Awaitable[None]]) -> None:
        tag = _STREAM_TAG.get()
        if not tag:
            await super().pace(count, send)
            return
        self.waiting += 1
        try:
            await self.released.wait()
        finally:
            self.waiting -= 1
        times: list[float] = []
        self.sent.setdefault(tag, []).append(times)

        async def timed(first: int, stop: int) -> None:
            await send(first, stop)
            now = time.time()
            times.extend(now for _ in range(first, stop))

        await super().pace(count, timed)


def _serve_fake(conn: Connection) -> None:
    """In the child process: the fake; answers "hold", "release", "waiting" (how many tagged
    generations it holds) and "times" until "stop"."""
    fake_settings = FakeSettings(
        kind="llama_cpp",
        model=MODEL,
        tokens_per_second=RATE,
        slots=STREAMS * 2,
        n_ctx_per_slot=4096,
        reply=REPLY,
    )

    async def main() -> None:
        fake = TimedFake(fake_settings)
        await fake.start()
        conn.send(fake.port)
        loop = asyncio.get_running_loop()
        while (command := await loop.run_in_executor(None, conn.recv)) != "stop":
            if command == "hold":
                fake.released.clear()
            elif command == "release":
                fake.released.set()
            elif command == "times":
                conn.send(fake.sent)
                fake.sent = {}
            elif command == "waiting":
                conn.send(fake.waiting)
            conn.send("ok") if command not in ("times", "waiting") else None
        await fake.stop()

    asyncio.run(main())


# --- The peer: a raw relay, in a process of its own ---------------------------------------------


def _serve_relay(
    fake_url: str, conn: Connection, model: str = MODEL, max_tokens: int = TOKENS
) -> None:
    """In the child process: a websocket server that, for each client (path /<tag>), streams a
    chat from the backend with httpx and sends each token to the client as it is read; the last
    message carries the server's `timings` when it sent them."""

    async def main() -> None:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=None)
        async with httpx.AsyncClient(base_url=fake_url, timeout=60.0, limits=limits) as http:

            async def relay(ws: ServerConnection) -> None:
                tag = (ws.request.path if ws.request else "/").strip("/")
                body = {
                    "model": model,
                    "stream": True,
                    "max_tokens": max_tokens,
                    "stream_options": {"include_usage": True},
                    "messages": [{"role": "user", "content": f"Summarise ({tag})."}],
                }
                offset, timings = 0, None
                async with http.stream("POST", "/v1/chat/completions", json=body) as response:
                    async for line in response.aiter_lines():
                        if not line.startswith("data: ") or line == "data: [DONE]":
                            continue
                        chunk = json.loads(line[6:])
                        timings = chunk.get("timings") or timings
                        choices = chunk.get("choices") or [{}]
                        text = (choices[0].get("delta") or {}).get("content")
                        if text:
                            await ws.send(json.dumps({"offset": offset, "text": text}))
                            offset += len(text)
                await ws.send(json.dumps({"done": True, "timings": timings}))

            async with serve(relay, "127.0.0.1", 0, max_size=None) as server:
                port = next(iter(server.sockets)).getsockname()[1]
                conn.send(port)
                await asyncio.get_running_loop().run_in_executor(None, conn.recv)

    asyncio.run(main())


# --- The site, the case, the web server and the workers ----------------------------------------


def site_prepare(fake_port: int) -> str:
    """The bench site (idempotent); returns its board's queue."""
    site.site_write(
        site=site.site_parse(SITE.replace("{port}", str(fake_port))), actor=None, label="bench"
    )
    Backend.objects.filter(name=BACKEND).update(enabled=True)
    BackendHealth.objects.filter(backend__name=BACKEND).delete()  # stale: an earlier port
    board = Board.objects.get(host__name=HOST, name="relay")
    return f"board.{board.pk}"


def case_prepare() -> tuple[User, Case, int, str]:
    """The bench's lawyer (and a Bearer token of theirs), case and frozen one-page packet."""
    case = Case.objects.filter(number=CASE_NUMBER).first()
    packet_id = None
    if case is not None:
        user = case.created_by
        packet_id = (
            case.packets.filter(status="frozen").order_by("-pk").values_list("pk", flat=True)
        ).first()
    if case is None or packet_id is None:
        user = User.objects.create_user(
            f"relay{time.time_ns()}@bench.test", None, full_name="Bench Lawyer", role="lawyer"
        )
        case = Case.objects.create(
            title="Run relay bench", number=CASE_NUMBER, client="Acme Ltd", created_by=user
        )
        Membership.objects.create(case=case, user=user, role="lawyer")
        with pymupdf.open() as pdf:
            page = pdf.new_page()
            page.insert_textbox(pymupdf.Rect(72, 72, 520, 720), PAGE, fontsize=11)
            data = pdf.tobytes()
        outcome = document_services.document_upload(
            case=case, uploaded_by=user, filename="lease.pdf", source=io.BytesIO(data),
            origin="client",
        )  # fmt: skip
        if outcome.document is None:
            raise SystemExit(f"bench document refused: {outcome.error}")
        document_services.document_extract_text(document_id=outcome.document.pk)
        packet = packet_services.packet_create(user=user, case_id=case.pk, title="Lease")
        packet_services.packet_items_add(
            user=user,
            case_id=case.pk,
            packet_id=packet.pk,
            selections=[packet_services.Selection(document_id=outcome.document.pk, reason="R")],
        )
        packet_id = packet_services.packet_freeze(
            user=user, case_id=case.pk, packet_id=packet.pk
        ).pk
    name = f"relay bench {secrets.token_hex(4)}"
    secret = account_services.token_create(user=user, name=name).secret
    return user, case, packet_id, secret


def _stale_jobs_remove() -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM procrastinate_jobs WHERE status = 'todo' AND task_name = "
            "'drafting.run_stage'"
        )
    Run.objects.filter(case__number=CASE_NUMBER, status__in=["queued", "running"]).update(
        status=Run.Status.CANCELLED
    )


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@dataclass
class Processes:
    """The web server and the workers `make run` starts (lexweb.launcher.run)."""

    log_dir: Path
    started: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def start(
        self,
        board_queue: str,
        web_port: int,
        names: tuple[str, ...] = ("web", "cpu", "cluster", "stage"),
    ) -> None:
        web = launcher._web_argv("127.0.0.1", web_port, settings.LEXWEB_TRUSTED_PROXIES)
        argvs = {
            "web": web,
            "cpu": launcher._worker_argv("cpu"),
            "cluster": launcher._worker_argv("cluster", launcher._cluster_worker_concurrency()),
        }
        for _host, queues, slots in launcher._board_queues():
            if board_queue in queues.split(","):
                argvs["stage"] = launcher._worker_argv(queues, slots)
        if "stage" in names and "stage" not in argvs:
            raise SystemExit(f"manage.py board_queues lists no worker for {board_queue}")
        nice = {"cpu": launcher._cpu_nice()}  # as `make run` lowers the batch worker
        for name, argv in argvs.items():
            if name not in names:
                continue
            log = (self.log_dir / f"{name}.log").open("ab")
            self.started[name] = subprocess.Popen(
                argv, cwd=settings.BASE_DIR, stdout=log, stderr=subprocess.STDOUT,
                preexec_fn=functools.partial(os.nice, nice.get(name, 0)),
            )  # fmt: skip

    def check(self) -> None:
        for name, process in self.started.items():
            if process.poll() is not None:
                raise SystemExit(f"the {name} process exited ({process.returncode})")

    def cpu_seconds(self, name: str) -> float:
        """User + system CPU of the process and its children so far."""
        process = psutil.Process(self.started[name].pid)
        total = 0.0
        for each in [process, *process.children(recursive=True)]:
            with contextlib.suppress(psutil.NoSuchProcess):
                times = each.cpu_times()
                total += times.user + times.system
        return total

    def stop(self) -> None:
        for process in self.started.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.started.values():
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def logs(self) -> Iterator[str]:
        for path in sorted(self.log_dir.glob("*.log")):
            yield f"--- {path.name}\n{path.read_text(errors='replace')[-3000:]}"


def _web_wait(port: int, processes: Processes) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        processes.check()
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
            return
        time.sleep(0.2)
    raise SystemExit("the web server did not start")


# --- Clients and what they received ------------------------------------------------------------


@dataclass
class Received:
    """What one client got: (receive time, offset, text) per token message, event numbers,
    and for ours when each event was stored (its `at`)."""

    tag: str
    pieces: list[tuple[float, int, str]] = field(default_factory=list)
    stored_at: list[float] = field(default_factory=list)
    seqs: list[int] = field(default_factory=list)
    attempts: set[int] = field(default_factory=set)
    finished: bool = False
    timings: dict[str, float] | None = None  # the peer's: the server's own, when it sent them


async def _ours_client(
    url: str, secret: str, received: Received, ready: asyncio.Queue[None]
) -> None:
    headers = {"Authorization": f"Bearer {secret}", "Origin": "http://127.0.0.1"}
    async with connect(url, additional_headers=headers, max_size=None, open_timeout=30) as ws:
        await ready.put(None)
        latest = 0
        async for raw in ws:
            now = time.time()
            message = json.loads(raw)
            received.seqs.append(message["seq"])
            payload = message["payload"]
            if message["kind"] == "stage.tokens":
                attempt = int(payload["attempt"])
                received.attempts.add(attempt)
                if attempt > latest:  # a re-run starts the text again
                    latest, received.pieces, received.stored_at = attempt, [], []
                received.pieces.append((now, payload["offset"], payload["text"]))
                received.stored_at.append(datetime.fromisoformat(message["at"]).timestamp())
            elif message["kind"] == "run.status" and payload["status"] in Run.FINISHED:
                received.finished = payload["status"] != Run.Status.FAILED
                return


async def _peer_client(url: str, received: Received, ready: asyncio.Queue[None]) -> None:
    async with connect(url, max_size=None, open_timeout=30) as ws:
        await ready.put(None)
        async for raw in ws:
            now = time.time()
            message = json.loads(raw)
            if message.get("done"):
                received.finished = True
                received.timings = message.get("timings")
                return
            received.pieces.append((now, message["offset"], message["text"]))


Client = Callable[[asyncio.Queue[None]], Awaitable[None]]


async def _stream_all(
    clients: list[Client], fake: Connection, cpu: Callable[[], float]
) -> tuple[float, float]:
    """Connect every client, wait until every stream has reached the fake (its stage set up:
    evidence chosen, prompt counted and sent), then release the fake; (CPU seconds, wall
    seconds) of the streaming."""
    ready: asyncio.Queue[None] = asyncio.Queue()
    tasks = [asyncio.ensure_future(client(ready)) for client in clients]
    for task in tasks:
        task.add_done_callback(lambda _t: ready.put_nowait(None))
    for _ in tasks:
        await asyncio.wait_for(ready.get(), 60)
    failed = [t for t in tasks if t.done() and t.exception() is not None]
    if failed:
        raise SystemExit(f"a client could not connect: {failed[0].exception()!r}")
    deadline = time.monotonic() + 60
    while True:
        fake.send("waiting")
        if fake.recv() >= len(clients):
            break
        if time.monotonic() > deadline:
            raise SystemExit("the streams did not all reach the fake within 60 s")
        await asyncio.sleep(0.05)
    cpu_before, started = cpu(), time.monotonic()
    fake.send("release")
    fake.recv()
    await asyncio.wait_for(asyncio.gather(*tasks), STREAM_TIMEOUT_SECONDS)
    return cpu() - cpu_before, time.monotonic() - started


def _percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def _summary(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "p50": round(_percentile(values, 50), 1),
        "p95": round(_percentile(values, 95), 1),
        "p99": round(_percentile(values, 99), 1),
        "max": round(max(values), 1),
    }


def analyse(received: list[Received], sent: dict[str, list[list[float]]]) -> dict[str, object]:
    """Tokens lost / duplicated / out of order, and each token's added latency."""
    ends, total = [], 0
    for piece in PIECES:
        total += len(piece)
        ends.append(total)
    latencies: list[float] = []
    to_stored: list[float] = []
    by_second: dict[int, list[float]] = {}
    first_sent = min((t[-1][0] for t in sent.values() if t and t[-1]), default=0.0)
    stored_to_client: list[float] = []
    lost = duplicated = out_of_order = intact = bad_seqs = reruns = 0
    for one in received:
        times = (sent.get(one.tag) or [[]])[-1]
        reruns += len(sent.get(one.tag) or []) > 1
        if one.seqs and one.seqs != list(range(one.seqs[0], one.seqs[0] + len(one.seqs))):
            bad_seqs += 1
        offset, event_ends, text = 0, [], []
        for _at, at_offset, piece in one.pieces:
            if at_offset < offset:
                duplicated += 1
            elif at_offset > offset:
                out_of_order += 1
            offset = at_offset + len(piece)
            event_ends.append(offset)
            text.append(piece)
        got = "".join(text)
        if got == REPLY and not duplicated and not out_of_order:
            intact += 1
        else:
            matched = next((n for n, end in enumerate(ends) if got[:end] != REPLY[:end]), TOKENS)
            lost += TOKENS - matched
            continue
        for n, end in enumerate(ends):
            k = bisect.bisect_left(event_ends, end)
            at = one.pieces[k][0]
            latencies.append((at - times[n]) * 1000)
            by_second.setdefault(int(times[n] - first_sent), []).append(latencies[-1])
            if one.stored_at:
                to_stored.append((one.stored_at[k] - times[n]) * 1000)
                stored_to_client.append((at - one.stored_at[k]) * 1000)
    return {
        "streams_intact": intact,
        "tokens_lost": lost + TOKENS * (STREAMS - len(received)),
        "messages_repeated": duplicated,
        "messages_out_of_order": out_of_order,
        "streams_with_event_numbers_not_consecutive": bad_seqs,
        "stages_rerun": reruns,
        "latency_ms": _summary(latencies),
        # A latency that grows second by second is a backlog: the path cannot keep up.
        "latency_p50_ms_by_second": [
            round(_percentile(values, 50)) for _second, values in sorted(by_second.items())
        ],
        # Where the tail is: a stall (one second's p99 far above the others) or everywhere.
        "latency_p99_ms_by_second": [
            round(_percentile(values, 99)) for _second, values in sorted(by_second.items())
        ],
        # Ours only: fake -> event stored (batching, the worker), stored -> client (the
        # channel layer, the web server, the socket).
        "to_stored_ms": _summary(to_stored),
        "stored_to_client_ms": _summary(stored_to_client),
        "_p99": _percentile(latencies, 99) if latencies else float("inf"),
    }


# --- The two rounds ----------------------------------------------------------------------------


def ours(
    *, user: User, case: Case, packet_id: int, secret: str, web_port: int, fake: Connection,
    processes: Processes, label: str,
) -> dict[str, object]:  # fmt: skip
    """STREAMS summary runs at once; the fake holds them until every client is connected."""
    nonce = secrets.token_hex(4)
    fake.send("hold")
    fake.recv()
    fake.send("times")
    fake.recv()
    cpu_before = processes.cpu_seconds("stage"), processes.cpu_seconds("web")
    received: list[Received] = []
    clients: list[Client] = []
    for n in range(STREAMS):
        tag = f"relay-{nonce}-{label}-{n}"
        request = runs.RunRequest(
            kind=Run.Kind.SUMMARY,
            packet_id=packet_id,
            instructions=f"Summarise the lease for the relay bench ({tag}).",
        )
        run, _ = runs.run_start(user=user, case_id=case.pk, request=request)
        one = Received(tag)
        received.append(one)
        url = f"ws://127.0.0.1:{web_port}/ws/cases/{case.pk}/runs/{run.pk}/events/?after=0"
        clients.append(functools.partial(_ours_client, url, secret, one))
    _cpu, wall = asyncio.run(_stream_all(clients, fake, lambda: 0.0))
    processes.check()
    fake.send("times")
    sent: dict[str, list[list[float]]] = fake.recv()
    stage_cpu = processes.cpu_seconds("stage") - cpu_before[0]
    web_cpu = processes.cpu_seconds("web") - cpu_before[1]
    result = analyse(received, sent)
    tokens = sum(len(times[-1]) for times in sent.values() if times)
    result.update(
        streams_finished=sum(one.finished for one in received),
        tokens_sent=tokens,
        wall_s=round(wall, 2),
        worker_cpu_s=round(stage_cpu, 3),
        worker_cpu_s_per_1000_tokens=round(stage_cpu / max(tokens, 1) * 1000, 4),
        web_cpu_s_per_1000_tokens=round(web_cpu / max(tokens, 1) * 1000, 4),
    )
    return result


def peer(*, relay_port: int, relay_pid: int, fake: Connection, label: str) -> dict[str, object]:
    nonce = secrets.token_hex(4)
    fake.send("hold")
    fake.recv()
    fake.send("times")
    fake.recv()
    relay = psutil.Process(relay_pid)

    def cpu() -> float:
        times = relay.cpu_times()
        return times.user + times.system

    received = [Received(f"relay-{nonce}-{label}-{n}") for n in range(STREAMS)]
    clients: list[Client] = [
        functools.partial(_peer_client, f"ws://127.0.0.1:{relay_port}/{one.tag}", one)
        for one in received
    ]
    relay_cpu, wall = asyncio.run(_stream_all(clients, fake, cpu))
    fake.send("times")
    sent: dict[str, list[list[float]]] = fake.recv()
    result = analyse(received, sent)
    tokens = sum(len(times[-1]) for times in sent.values() if times)
    result.update(
        streams_finished=sum(one.finished for one in received),
        tokens_sent=tokens,
        wall_s=round(wall, 2),
        relay_cpu_s=round(relay_cpu, 3),
        relay_cpu_s_per_1000_tokens=round(relay_cpu / max(tokens, 1) * 1000, 4),
    )
    return result


# --- The real llama.cpp server ------------------------------------------------------------------


def _relay_ratio(streams: list[tuple[int, float, float]]) -> dict[str, object]:
    """(tokens, server tokens/s, client span s) per stream: the summed rates and their ratio."""
    server = sum(rate for _tokens, rate, _span in streams)
    client = sum(tokens / span for tokens, _rate, span in streams if span > 0)
    return {
        "backend_tokens_per_second": round(server, 1),
        "client_tokens_per_second": round(client, 1),
        "relay_ratio": round(client / server, 4) if server else None,
        "min_stream_ratio": round(
            min((tokens / span) / rate for tokens, rate, span in streams if span > 0 and rate),
            4,
        )
        if streams
        else None,
        "tokens": sum(tokens for tokens, _rate, _span in streams),
    }


def _span(one: Received) -> float:
    return one.pieces[-1][0] - one.pieces[0][0] if len(one.pieces) > 1 else 0.0


def real_ours(
    *, user: User, case: Case, packet_id: int, secret: str, web_port: int, server_port: int,
    log_dir: Path,
) -> dict[str, object]:  # fmt: skip
    """REAL_STREAMS summary runs on the real server; their clients connect before the stage
    worker starts, so nothing reaches them as catch-up."""
    from apps.cluster.models import CallRecord
    from apps.cluster.services import health
    from apps.drafting.models import Stage

    site.site_write(
        site=site.site_parse(REAL_SITE.replace("{port}", str(server_port))),
        actor=None,
        label="bench",
    )
    Backend.objects.filter(name=REAL_BACKEND).update(enabled=True)
    BackendHealth.objects.filter(backend__name=REAL_BACKEND).delete()
    asyncio.run(health.backends_health_check_all())
    board = Board.objects.get(host__name=REAL_HOST, name="relay-real")
    received: list[Received] = []
    clients: list[Client] = []
    run_ids: list[int] = []
    for n in range(REAL_STREAMS):
        request = runs.RunRequest(
            kind=Run.Kind.SUMMARY,
            packet_id=packet_id,
            instructions=f"Summarise the lease for the relay bench (real {n}).",
        )
        run, _ = runs.run_start(user=user, case_id=case.pk, request=request)
        run_ids.append(run.pk)
        one = Received(f"real-{n}")
        received.append(one)
        url = f"ws://127.0.0.1:{web_port}/ws/cases/{case.pk}/runs/{run.pk}/events/?after=0"
        clients.append(functools.partial(_ours_client, url, secret, one))
    stage_worker = Processes(log_dir)

    async def stream() -> None:
        ready: asyncio.Queue[None] = asyncio.Queue()
        tasks = [asyncio.ensure_future(client(ready)) for client in clients]
        for _ in tasks:
            await asyncio.wait_for(ready.get(), 60)
        stage_worker.start(f"board.{board.pk}", web_port, names=("stage",))
        await asyncio.wait_for(asyncio.gather(*tasks), STREAM_TIMEOUT_SECONDS)

    try:
        asyncio.run(stream())
    finally:
        stage_worker.stop()
        Backend.objects.filter(name=REAL_BACKEND).update(enabled=False)
    streams, intact, lost = [], 0, 0
    for run_id, one in zip(run_ids, received, strict=True):
        stage = Stage.objects.filter(run_id=run_id).order_by("-pk").first()
        call = CallRecord.objects.filter(stage=stage).order_by("-started_at").first()
        got = "".join(text for _at, _offset, text in one.pieces)
        if stage is not None and got == stage.output_text and got:
            intact += 1
        else:
            lost += 1
        if stage is not None and call is not None and call.decode_tokens_per_second:
            streams.append(
                (stage.completion_tokens, float(call.decode_tokens_per_second), _span(one))
            )
    return {
        **_relay_ratio(streams),
        "streams_measured": len(streams),
        "streams_intact": intact,
        "streams_with_text_lost": lost,
        "runs_finished": sum(one.finished for one in received),
    }


def real_peer(*, server_port: int) -> dict[str, object]:
    """The raw relay against the same real server, REAL_STREAMS clients at once."""
    context = multiprocessing.get_context("spawn")
    relay, relay_end = context.Pipe()
    process = context.Process(
        target=_serve_relay,
        args=(f"http://127.0.0.1:{server_port}", relay_end, REAL_MODEL, 1024),
        daemon=True,
    )
    process.start()
    try:
        if not relay.poll(60):
            raise SystemExit("the raw relay did not start")
        port = relay.recv()
        received = [Received(f"peer-real-{n}") for n in range(REAL_STREAMS)]

        async def stream() -> None:
            ready: asyncio.Queue[None] = asyncio.Queue()
            await asyncio.gather(
                *(_peer_client(f"ws://127.0.0.1:{port}/{one.tag}", one, ready) for one in received)
            )

        asyncio.run(asyncio.wait_for(stream(), STREAM_TIMEOUT_SECONDS))
    finally:
        relay.send("stop")
        process.join(10)
    streams = [
        (
            int(one.timings["predicted_n"]),
            float(one.timings["predicted_n"]) / float(one.timings["predicted_ms"]) * 1000,
            _span(one),
        )
        for one in received
        if one.timings
    ]
    return {**_relay_ratio(streams), "streams_measured": len(streams)}


def real_round(**ours_args: object) -> dict[str, object]:
    """Ours, then the peer, on one real llama.cpp server (tests/harness/llamacpp.py)."""
    from tests.harness.llamacpp import running_llamacpp
    from tests.harness.tiny_gguf import write_tiny_gguf

    with tempfile.TemporaryDirectory(prefix="bench-run-relay-real-") as folder:
        model = write_tiny_gguf(Path(folder) / "tiny.gguf")
        with running_llamacpp(
            model,
            Path(folder) / "server.log",
            context=REAL_STREAMS * REAL_SLOT_TOKENS,
            slots=REAL_STREAMS,
            alias=REAL_MODEL,
        ) as server:
            port = int(server.base_url.rsplit(":", 1)[1])
            measured = real_ours(server_port=port, log_dir=Path(folder), **ours_args)  # type: ignore[arg-type]
            raw = real_peer(server_port=port)
    return {
        "server": "llama.cpp (xllamacpp), tiny GGUF, CPU, 1 thread, unpaced",
        "streams": REAL_STREAMS,
        "slot_tokens": REAL_SLOT_TOKENS,
        "ours": measured,
        "peer": "raw relay: httpx stream from the real server straight to a websocket",
        "peer_result": raw,
        "target_ratio": 0.99,
    }


def main() -> None:
    context = multiprocessing.get_context("spawn")
    fake, fake_end = context.Pipe()
    fake_process = context.Process(target=_serve_fake, args=(fake_end,), daemon=True)
    fake_process.start()
    if not fake.poll(60):
        raise SystemExit("the fake backend did not start")
    fake_port = fake.recv()
    relay, relay_end = context.Pipe()
    relay_process = context.Process(
        target=_serve_relay, args=(f"http://127.0.0.1:{fake_port}", relay_end), daemon=True
    )
    relay_process.start()
    if not relay.poll(60):
        raise SystemExit("the raw relay did not start")
    relay_port = relay.recv()
    board_queue = site_prepare(fake_port)
    user, case, packet_id, secret = case_prepare()
    _stale_jobs_remove()
    web_port = _free_port()
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="bench-run-relay-") as logs:
        processes = Processes(Path(logs))
        try:
            processes.start(board_queue, web_port)
            _web_wait(web_port, processes)
            round_of_ours = functools.partial(
                ours, user=user, case=case, packet_id=packet_id, secret=secret,
                web_port=web_port, fake=fake, processes=processes,
            )  # fmt: skip
            round_of_ours(label="warm")  # workers connected, caches warm
            measured = round_of_ours(label="ours")
            raw = peer(relay_port=relay_port, relay_pid=relay_process.pid or 0, fake=fake,
                       label="peer")  # fmt: skip
            real = real_round(
                user=user, case=case, packet_id=packet_id, secret=secret, web_port=web_port
            )
        except (SystemExit, TimeoutError):
            for text in processes.logs():
                print(text, file=sys.stderr)
            raise
        finally:
            processes.stop()
            Backend.objects.filter(name=BACKEND).update(enabled=False)
            relay.send("stop")
            fake.send("stop")
            relay_process.join(10)
            fake_process.join(10)
    p99, peer_p99 = measured.pop("_p99"), raw.pop("_p99")
    worker_cpu = float(measured["worker_cpu_s_per_1000_tokens"])  # type: ignore[arg-type]
    relay_cpu = float(raw["relay_cpu_s_per_1000_tokens"])  # type: ignore[arg-type]
    print(
        json.dumps(
            {
                "benchmark": "run_relay",
                "streams": STREAMS,
                "tokens_per_second_each": RATE,
                "tokens_per_stream": TOKENS,
                "token_flush_ms": settings.LEXWEB_RUN_TOKEN_FLUSH_MS,
                "layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
                "ours": measured,
                "peer": "raw relay: httpx stream from the fake straight to a websocket",
                "peer_result": raw,
                "p99_ratio_to_peer": round(float(p99) / max(float(peer_p99), 1e-9), 2),  # type: ignore[arg-type]
                "worker_cpu_ratio_to_peer": round(worker_cpu / max(relay_cpu, 1e-9), 2),
                "target_p99_ms": TARGET_P99_MS,
                "met": float(p99) < TARGET_P99_MS and measured["tokens_lost"] == 0,  # type: ignore[arg-type]
                "llama_cpp_real": real,
                "load_average": {
                    "before": [round(x, 2) for x in load_before],
                    "after": [round(x, 2) for x in os.getloadavg()],
                },
            }
        )
    )


if __name__ == "__main__":
    main()
