"""200 Server-Sent Events streams on one web process (issue 22, Performance): the memory they add
and how fast one case event reaches all of them, against the case's websockets in the same run
(the peer: the same events, the same process, the same number of clients).

The real ASGI app (lexweb.asgi) is served by one uvicorn process started exactly as `make run`
starts the web process (lexweb.launcher._web_argv), with the database and channel layer the
settings give (PostgreSQL's, the embedded default). One case, USERS member lawyers with a Bearer
token each; STREAMS clients (httpx, async, in the bench's process), LEXWEB_SSE_STREAMS_PER_USER
per person, open `GET /api/v1/cases/{id}/events/stream?after=<the last event>`.

1. Warm-up: one stream and one websocket opened, one event received on each, closed.
2. SSE: the web process's resident memory (VmRSS) is read, the STREAMS streams are opened, WAVE
   at a time (each wave answered before the next), SETTLE seconds, VmRSS again: the added
   memory (target under 100 MB). Then EVENTS case events are published one every GAP seconds
   through the service every case event goes through (apps.cases.events.publish_to_case, in a
   transaction of the bench's process: stored, numbered after the commit and sent to the
   case's group on the channel layer), and the fan-out latency of each (event, stream) is the
   time from just before the publishing transaction began to the event's frame read by that
   stream's client (target p99 under 100 ms). Every stream must get every event.
3. Websockets, the peer: the streams closed, the same with STREAMS websockets on
   `ws/cases/{id}/events/` (apps/cases/consumers.py), the same users and the same events.
4. Last, all STREAMS streams asked for at once, as clients reconnecting together after a
   restart would: how many open and how many are refused (each opening request holds a database
   connection of its own while it runs); closed again.

Prints one JSON object: for each, the clients opened and those refused (by status), the added
memory (MB, per connection in KB), the connections to the database added while they are open
(pg_stat_activity), the fan-out p50/p95/p99/max (ms) and the events delivered; ratios
SSE/websockets. A refused client is counted, not retried, and the rest are measured; a target
is met only with all STREAMS open and every event delivered to each. The load average is
printed with the figures: the development machine has 2 cores and is shared, and the 200
clients run on the same cores as the server.

Run with `make bench` (or `python -m bench.bench_sse_streams` with DATABASE_URL set to a
migrated database of its own; it writes users, tokens, a case and its events).
"""

import asyncio
import contextlib
import json
import os
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
django.setup()

import httpx  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import close_old_connections, connection, transaction  # noqa: E402
from django.db.models import Max  # noqa: E402
from django.utils import timezone  # noqa: E402
from websockets.asyncio.client import ClientConnection, connect  # noqa: E402

from apps.accounts import services as account_services  # noqa: E402
from apps.accounts.models import User  # noqa: E402
from apps.cases.events import CaseNotice, publish_to_case  # noqa: E402
from apps.cases.models import Case, CaseEvent, Membership  # noqa: E402
from bench.serving import free_port, served  # noqa: E402
from lexweb import launcher  # noqa: E402

STREAMS = int(os.environ.get("BENCH_SSE_STREAMS", "200"))
PER_USER = settings.LEXWEB_SSE_STREAMS_PER_USER
USERS = -(-STREAMS // PER_USER)
EVENTS = int(os.environ.get("BENCH_SSE_EVENTS", "20"))
GAP = 0.5
WAVE = 20  # streams asked for together while opening the STREAMS
SETTLE = 3.0
TARGET_ADDED_MB = 100.0
TARGET_P99_MS = 100.0
CASE_NUMBER = "BENCH-SSE-STREAMS"
MARK = "bench-sse"


def _setup() -> tuple[Case, list[str]]:
    """The bench case (made once, with USERS member lawyers) and a new token of each."""
    case = Case.objects.filter(number=CASE_NUMBER).first()
    if case is None:
        with transaction.atomic():
            first = User.objects.create_user(
                f"sse{time.time_ns()}@bench.test", None, full_name="SSE bench", role="lawyer"
            )
            case = Case.objects.create(
                title="SSE streams bench", number=CASE_NUMBER, client="B", created_by=first
            )
            Membership.objects.create(case=case, user=first, role="lawyer")
    members = [m.user for m in Membership.objects.filter(case=case).select_related("user")]
    while len(members) < USERS:
        user = User.objects.create_user(
            f"sse{time.time_ns()}@bench.test", None, full_name="SSE bench", role="lawyer"
        )
        Membership.objects.create(case=case, user=user, role="lawyer")
        members.append(user)
    secrets = [
        account_services.token_create(user=user, name=f"bench {time.time_ns()}").secret
        for user in members[:USERS]
    ]
    return case, secrets


@contextlib.contextmanager
def _web(port: int) -> Iterator[int]:
    argv = launcher._web_argv("127.0.0.1", port, settings.LEXWEB_TRUSTED_PROXIES)
    with served(argv, port) as process:
        yield process.pid


def _rss_mb(pid: int) -> float:
    with Path(f"/proc/{pid}/status").open(encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _last_seq(case_id: int) -> int:
    close_old_connections()
    return CaseEvent.objects.filter(case_id=case_id).aggregate(top=Max("seq"))["top"] or 0


async def _stream_url(base: str, case_id: int) -> str:
    """The case's stream, from after its last event."""
    after = await asyncio.to_thread(_last_seq, case_id)
    return f"{base}/api/v1/cases/{case_id}/events/stream?after={after}"


def _publish(case_id: int, n: int) -> None:
    close_old_connections()
    event: CaseNotice = {
        "type": "cases.notice",
        "case_id": case_id,
        "level": "info",
        "message": f"{MARK} {n}",
        "at": timezone.now().isoformat(),
    }
    with transaction.atomic():
        publish_to_case(case_id=case_id, event=event)


class Fanout:
    """When each event was published, and when each client read it."""

    def __init__(self) -> None:
        self.sent: dict[int, float] = {}
        self.latencies: list[float] = []
        self.received: dict[int, int] = {}

    def got(self, message: object) -> None:
        if not isinstance(message, str) or not message.startswith(MARK):
            return
        now = time.perf_counter()
        n = int(message.split()[1])
        if n in self.sent:
            self.latencies.append((now - self.sent[n]) * 1000)
            self.received[n] = self.received.get(n, 0) + 1

    async def publish(self, case_id: int, first: int, count: int) -> None:
        for n in range(first, first + count):
            self.sent[n] = time.perf_counter()
            await asyncio.to_thread(_publish, case_id, n)
            await asyncio.sleep(GAP)
        await asyncio.sleep(2.0)  # the last event's stragglers

    def figures(self, expected: int) -> dict[str, object]:
        delivered = sum(self.received.values())
        out: dict[str, object] = {"delivered": delivered, "expected": expected}
        if len(self.latencies) >= 2:
            cuts = statistics.quantiles(self.latencies, n=100)
            out |= {
                "p50_ms": round(cuts[49], 1),
                "p95_ms": round(cuts[94], 1),
                "p99_ms": round(cuts[98], 1),
                "max_ms": round(max(self.latencies), 1),
            }
        return out


class Opening:
    """How many clients are to open, and how each attempt ended (status code; 0: no answer)."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
        self.answers: list[int] = []
        self.done = asyncio.Event()

    def answered(self, status: int) -> None:
        self.answers.append(status)
        if len(self.answers) >= self.expected:
            self.done.set()

    def refused(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for status in self.answers:
            if status != 200:
                counts[str(status)] = counts.get(str(status), 0) + 1
        return counts


async def _sse_client(
    http: httpx.AsyncClient, url: str, secret: str, opening: Opening,
    on_message: Callable[[object], None],
) -> None:  # fmt: skip
    headers = {"Authorization": f"Bearer {secret}"}
    try:
        async with http.stream("GET", url, headers=headers) as response:
            opening.answered(response.status_code)
            if response.status_code != 200:
                return
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    data = json.loads(line[5:])
                    payload = data.get("payload") or {}
                    on_message(payload.get("message"))
    except httpx.HTTPError:
        if len(opening.answers) < opening.expected and not opening.done.is_set():
            opening.answered(0)


async def _ws_client(url: str, secret: str) -> ClientConnection:
    headers = {"Authorization": f"Bearer {secret}", "Origin": "http://127.0.0.1"}
    return await connect(url, additional_headers=headers, open_timeout=60)


async def _ws_read(ws: ClientConnection, on_message: Callable[[object], None]) -> None:
    with contextlib.suppress(Exception):
        async for raw in ws:
            on_message(json.loads(raw).get("message"))


def _db_backends() -> int:
    """Connections to the bench's database now (every process's: the web's, this one's)."""
    close_old_connections()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()")
        row = cursor.fetchone()
    return int(row[0]) if row else 0


async def _sse_burst(base: str, case_id: int, secrets: list[str]) -> dict[str, object]:
    """All STREAMS streams asked for at once (clients reconnecting together after a restart):
    how many open, how many are refused; closed again."""
    url = await _stream_url(base, case_id)
    limits = httpx.Limits(max_connections=STREAMS + 10, max_keepalive_connections=0)
    async with httpx.AsyncClient(limits=limits, timeout=httpx.Timeout(60.0, read=None)) as http:
        opening = Opening(STREAMS)
        tasks = [
            asyncio.create_task(_sse_client(http, url, secrets[k // PER_USER], opening, _ignore))
            for k in range(STREAMS)
        ]
        await asyncio.wait_for(opening.done.wait(), 120)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return {"opened": opening.answers.count(200), "refused": opening.refused()}


def _ignore(message: object) -> None:
    pass


async def _sse_phase(base: str, pid: int, case_id: int, secrets: list[str], first: int) -> dict:
    url = await _stream_url(base, case_id)
    fanout = Fanout()
    limits = httpx.Limits(max_connections=STREAMS + 10, max_keepalive_connections=0)
    timeout = httpx.Timeout(60.0, read=None)
    async with httpx.AsyncClient(limits=limits, timeout=timeout) as http:
        before, backends = _rss_mb(pid), await asyncio.to_thread(_db_backends)
        opening = Opening(STREAMS)
        tasks = []
        for start in range(0, STREAMS, WAVE):  # a wave at a time, each answered before the next
            tasks += [
                asyncio.create_task(
                    _sse_client(http, url, secrets[k // PER_USER], opening, fanout.got)
                )
                for k in range(start, min(start + WAVE, STREAMS))
            ]
            async with asyncio.timeout(120):
                while len(opening.answers) < len(tasks):
                    await asyncio.sleep(0.02)
        await asyncio.sleep(SETTLE)
        after, backends_after = _rss_mb(pid), await asyncio.to_thread(_db_backends)
        opened = opening.answers.count(200)
        await fanout.publish(case_id, first, EVENTS)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return _phase(
        before, after, fanout, opened=opened, refused=opening.refused(),
        db_connections_added=backends_after - backends,
    )  # fmt: skip


async def _ws_phase(base: str, pid: int, case_id: int, secrets: list[str], first: int) -> dict:
    url = base.replace("http://", "ws://") + f"/ws/cases/{case_id}/events/"
    fanout = Fanout()
    before, backends = _rss_mb(pid), await asyncio.to_thread(_db_backends)
    results = await asyncio.gather(
        *(_ws_client(url, secrets[k // PER_USER]) for k in range(STREAMS)), return_exceptions=True
    )
    sockets = [r for r in results if isinstance(r, ClientConnection)]
    refused: dict[str, int] = {}
    for r in results:
        if not isinstance(r, ClientConnection):
            refused[type(r).__name__] = refused.get(type(r).__name__, 0) + 1
    readers = [asyncio.create_task(_ws_read(ws, fanout.got)) for ws in sockets]
    await asyncio.sleep(SETTLE)
    after, backends_after = _rss_mb(pid), await asyncio.to_thread(_db_backends)
    await fanout.publish(case_id, first, EVENTS)
    await asyncio.gather(*(ws.close() for ws in sockets), return_exceptions=True)
    for reader in readers:
        reader.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    return _phase(
        before, after, fanout, opened=len(sockets), refused=refused,
        db_connections_added=backends_after - backends,
    )  # fmt: skip


def _phase(
    before: float, after: float, fanout: Fanout, *, opened: int, refused: dict[str, int],
    db_connections_added: int,
) -> dict[str, object]:  # fmt: skip
    return {
        "opened": opened,
        "refused": refused,
        "rss_before_mb": round(before, 1),
        "rss_after_mb": round(after, 1),
        "added_mb": round(after - before, 1),
        "added_kb_per_connection": round((after - before) * 1024 / max(opened, 1), 1),
        "db_connections_added": db_connections_added,
        "fanout": fanout.figures(opened * EVENTS),
    }


async def _warm_up(base: str, case_id: int, secret: str) -> None:
    """One stream and one websocket, one event each: the code paths loaded before measuring."""
    fanout = Fanout()
    async with httpx.AsyncClient(timeout=httpx.Timeout(60.0, read=None)) as http:
        opening = Opening(1)
        url = await _stream_url(base, case_id)
        task = asyncio.create_task(_sse_client(http, url, secret, opening, fanout.got))
        await asyncio.wait_for(opening.done.wait(), 60)
        ws = await _ws_client(
            base.replace("http://", "ws://") + f"/ws/cases/{case_id}/events/", secret
        )
        reader = asyncio.create_task(_ws_read(ws, fanout.got))
        await asyncio.sleep(0.5)
        fanout.sent[0] = time.perf_counter()
        await asyncio.to_thread(_publish, case_id, 0)
        await asyncio.sleep(1.0)
        await ws.close()
        for each in (task, reader):
            each.cancel()
        await asyncio.gather(task, reader, return_exceptions=True)
    if fanout.received.get(0) != 2:
        raise SystemExit(f"warm-up: the event reached {fanout.received.get(0, 0)} of 2 clients")


async def _run(port: int, pid: int, case: Case, secrets: list[str]) -> dict[str, object]:
    base = f"http://127.0.0.1:{port}"
    await _warm_up(base, case.pk, secrets[0])
    sse = await _sse_phase(base, pid, case.pk, secrets, 1)
    await asyncio.sleep(SETTLE)  # the streams' access watches let go
    ws = await _ws_phase(base, pid, case.pk, secrets, 1 + EVENTS)
    await asyncio.sleep(SETTLE)
    burst = await _sse_burst(base, case.pk, secrets)  # last: it leaves the process disturbed
    return {"sse": sse, "websockets": ws, "sse_burst": burst}


def _ratio(a: object, b: object) -> float | None:
    if isinstance(a, int | float) and isinstance(b, int | float) and b:
        return round(a / b, 3)
    return None


def main() -> None:
    case, secrets = _setup()
    load_before = os.getloadavg()
    port = free_port()
    with _web(port) as pid:
        result = asyncio.run(_run(port, pid, case, secrets))
    sse, ws = result["sse"], result["websockets"]
    assert isinstance(sse, dict) and isinstance(ws, dict)
    sse_fan, ws_fan = sse["fanout"], ws["fanout"]
    whole = sse["opened"] == STREAMS and sse_fan["delivered"] == STREAMS * EVENTS
    print(
        json.dumps(
            {
                "benchmark": "sse_streams_fanout",
                "streams": STREAMS,
                "users": USERS,
                "events": EVENTS,
                "gap_s": GAP,
                "database": settings.DATABASES["default"]["NAME"],
                "channel_layer": settings.CHANNEL_LAYERS["default"]["BACKEND"],
                "sse": sse,
                "sse_all_at_once": result["sse_burst"],
                "peer": "the case's websockets (ws/cases/{id}/events/), same process and events",
                "websockets": ws,
                "ratio_to_peer": {
                    "added_mb": _ratio(sse["added_mb"], ws["added_mb"]),
                    "fanout_p99": _ratio(sse_fan.get("p99_ms"), ws_fan.get("p99_ms")),
                    "fanout_p50": _ratio(sse_fan.get("p50_ms"), ws_fan.get("p50_ms")),
                },
                "target_added_mb": TARGET_ADDED_MB,
                "target_fanout_p99_ms": TARGET_P99_MS,
                # A target counts only with all STREAMS open and every event delivered.
                "all_streams_open": whole,
                "added_mb_under_target": whole and sse["added_mb"] < TARGET_ADDED_MB,
                "fanout_p99_under_target": whole and sse_fan.get("p99_ms", 1e9) < TARGET_P99_MS,
                "loadavg_before": [round(x, 2) for x in load_before],
                "loadavg_after": [round(x, 2) for x in os.getloadavg()],
                "cpu_count": os.cpu_count(),
            }
        )
    )


if __name__ == "__main__":
    main()
