"""Ten minutes of mixed load on the whole product (issue 24, requirement 6): 25 people in their
browsers and 10 agents running drafting runs, driven by Locust (its Python API, headless).

The product: a real `make run` (python -m lexweb.launcher run, tests/faults/product.py) in a
private var folder with its own embedded PostgreSQL and the demo: the web process (uvicorn), the
cpu and cluster workers, one stage worker per GPU host, the demo's fake backends at the reference
speeds and its GPU agent. The demo's case (five documents, a production, a frozen packet) is
the matter; bench/load_prepare.py adds PEOPLE lawyers with passwords and AGENTS lawyers with API
tokens to it, through the services.

The users (Locust, in this process, on the same two cores as the product):

- A person (`Person`, PEOPLE of them, 2-6 s between actions) signs in through the form (CSRF
  cookie and token, session cookie), then in turn opens the case page, the review list, the
  viewer (a page of a ready document and its page image, as the browser fetches it), searches
  the case, and now and then uploads a two-page PDF of their own through the upload form.
- An agent (`Agent`, AGENTS of them) starts a drafting run (`POST /api/v1/cases/{id}/runs`:
  summary, motion, financial extraction, affidavit in turn) over the frozen packet and waits
  for it as docs/agents/index.md says: the even ones read the run's Server-Sent Events until
  `event: end`, the odd ones long-poll `GET .../events?after=N&wait=60`; then it reads the run
  and starts the next. A run ends for the agent at `succeeded`, `waiting_for_approval`,
  `stopped_by_gate`, `failed`, `cancelled` or `rejected` (only the first three count as done).

Measured, for SECONDS (BENCH_LOAD_SECONDS, default 600): per endpoint the requests, requests/s,
p50/p99/max latency and errors (any failure: a status that is not the one expected, a refused
sign-in, a run that failed); every SAMPLE_EVERY s (30) each product process's memory (RSS of the
process with its children; PostgreSQL in parts, below), the open database connections
(`pg_stat_activity`, client backends) and the p99 of the people's and agents' requests (the
waits on a run's events left out: their time is the run's) and the backends the registry
holds not healthy (a run whose role has no healthy deployment is refused, `role_unavailable`).
Targets: 0 errors; each process's memory grows under 10% from the minute after 2 minutes to the
last minute (the medians of their samples, bench/load_memory.py); the connections stay under
PostgreSQL's `max_connections` and do not climb.

PostgreSQL's memory is sampled in parts (from each process's memory maps), since its processes
share a fixed cache: `postgresql` is the sum of its processes' PSS (RSS would count the shared
pages once per backend); `postgresql-shared-memory` the part of it in PostgreSQL's shared memory
(the main segment, `shared_buffers` and the rest, and dynamic shared memory), which grows as the
cache's pages are touched for the first time and is bounded by the segment's size
(`shared_buffers`, reported, and a little more); `postgresql-private` the pages of its processes
outside that memory that are theirs alone (each backend's catalogue and plan caches, work
memory), which a leak grows; `postgresql-private-per-process` that sum over the number of its
processes. The 10% target is judged on the private memory, not on the two that include the
cache filling: on `postgresql-private` while the number of PostgreSQL processes is the same at
2 minutes and at the end, on `postgresql-private-per-process` when connections were opened or
closed between (a new backend adds its own private memory without anything leaking).

A figure over time and the load average are printed with them: this machine has 2 cores and is
shared, and Locust runs on them too.

The peer: none run beside it. A load test asks whether the product stays whole under load
(errors, memory, connections) rather than how fast one endpoint is against a simpler one; those
figures are checked against their targets. The latency peers are measured elsewhere, in the same
run as ours: bench_api_clients.py (the API's reads against minimal Django views over the same
rows), bench_sse_streams.py (streams against websockets), bench_run_relay.py (a run's relay
against a raw relay). A second ten minutes for a peer of the whole mix would double the run and
compare ours with something no one would deploy.

Prints one JSON object and draws the plot (memory, p99 and connections over time) into
BENCH_LOAD_PLOT (default var/bench/load.png). `BENCH_LOAD_SECONDS=120` is the short mode;
`BENCH_LOAD_UPLOADS=0` leaves uploads out, so the case's data stays as it was.
"""

from gevent import monkey

# Locust monkey-patches on import; done first here, so that nothing below imports ssl or
# socket before the patch.
monkey.patch_all()

import contextlib  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import socket  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import uuid  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import gevent  # noqa: E402
import psutil  # noqa: E402
from locust import HttpUser, between, task  # noqa: E402
from locust.env import Environment  # noqa: E402

from bench.load_memory import GROWTH_FROM, memory_growth  # noqa: E402
from tests.faults.product import (  # noqa: E402
    BASE_DIR,
    FAULT_ENV,
    FaultError,
    Product,
    text_pdf,
    wait_for,
)

SECONDS = float(os.environ.get("BENCH_LOAD_SECONDS", "600"))
PEOPLE = int(os.environ.get("BENCH_LOAD_PEOPLE", "25"))
AGENTS = int(os.environ.get("BENCH_LOAD_AGENTS", "10"))
# How often a person uploads, against 3-4 for each other action; 0 holds the case's data still
# (to tell memory that follows the data from memory that follows the requests).
UPLOAD_WEIGHT = int(os.environ.get("BENCH_LOAD_UPLOADS", "1"))
SAMPLE_EVERY = 30.0
GROWTH_TARGET = 0.10
# PostgreSQL's shared memory as its processes map it: the main segment (shared_buffers and the
# rest, an anonymous shared mapping shown as /dev/zero) and dynamic shared memory (/dev/shm).
SHARED_SEGMENTS = ("/dev/zero", "/dev/shm/")  # noqa: S108  (paths read, not written)
PLOT = Path(os.environ.get("BENCH_LOAD_PLOT", str(BASE_DIR / "var" / "bench" / "load.png")))
PASSWORD = "Quartz-harbor-9-lantern"  # noqa: S105  (the bench's own throwaway accounts)
SEARCHES = ("valves", "invoice", "delivery", "payment", "agreement", "balance", "late")
RUN_KINDS = ("summary", "motion", "financial", "affidavit")
RUN_DONE = {"succeeded", "waiting_for_approval", "stopped_by_gate"}
RUN_ENDED = RUN_DONE | {"failed", "cancelled", "rejected"}
RUN_TIMEOUT = 900.0
# Requests whose time is the run's, not an answer's: left out of the p99 over time.
WAITS = {"GET run events (long poll)", "GET run events (SSE)", "run (start to end)"}


@dataclass
class Matter:
    """What load_prepare made: filled before the users start."""

    case_id: int = 0
    packet_id: int = 0
    documents: list[tuple[int, int]] = field(default_factory=list)
    people: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)


MATTER = Matter()
_people = itertools.count()
_agents = itertools.count()


class Person(HttpUser):
    """A lawyer in a browser: a session cookie and the CSRF token, pages and a page image."""

    fixed_count = PEOPLE
    wait_time = between(2, 6)

    def on_start(self) -> None:
        self.email = MATTER.people[next(_people) % len(MATTER.people)]
        self.rng = random.Random(self.email)  # noqa: S311  (a mix of actions, not a secret)
        self.client.get("/accounts/login/", name="sign-in page")
        with self.client.post(
            "/accounts/login/",
            data={
                "username": self.email,
                "password": PASSWORD,
                "csrfmiddlewaretoken": self.client.cookies.get("csrftoken", ""),
            },
            name="sign in",
            allow_redirects=False,
            catch_response=True,
        ) as response:
            if response.status_code != 302 or "sessionid" not in self.client.cookies:
                response.failure(f"sign-in refused: {response.status_code}")
        self.client.get("/", name="case list")

    def wait(self) -> None:
        self.idle_from = time.monotonic()
        super().wait()

    def context(self) -> dict[str, Any]:
        """How long the person's connection sat idle before this request (a request made as
        uvicorn closes an idle keep-alive connection, after its 5 s, may meet a reset)."""
        now = time.monotonic()
        idle, self.idle_from = now - getattr(self, "idle_from", now), now
        return {"idle_s": round(idle, 2)}

    def _case(self) -> str:
        return f"/cases/{MATTER.case_id}"

    @task(3)
    def case_page(self) -> None:
        self.client.get(f"{self._case()}/", name="case page")

    @task(4)
    def review_list(self) -> None:
        self.client.get(f"{self._case()}/documents/", name="review list")

    @task(4)
    def viewer(self) -> None:
        document, pages = self.rng.choice(MATTER.documents)
        page = self.rng.randint(1, max(pages, 1))
        self.client.get(f"{self._case()}/documents/{document}/?page={page}", name="viewer")
        self.client.get(
            f"/api/v1/cases/{MATTER.case_id}/documents/{document}/pages/{page}/image?dpi=150",
            name="viewer page image",
        )

    @task(3)
    def search(self) -> None:
        query = self.rng.choice(SEARCHES)
        self.client.get(f"{self._case()}/search/?q={query}", name="search")

    @task(UPLOAD_WEIGHT)
    def upload(self) -> None:
        marker = uuid.uuid4().hex
        data = text_pdf(2, f"Load upload {marker}")
        with self.client.post(
            f"{self._case()}/documents/",
            data={
                "origin": "client",
                "custodian": "Load person",
                "csrfmiddlewaretoken": self.client.cookies.get("csrftoken", ""),
            },
            files=[("files", (f"upload-{marker[:12]}.pdf", data, "application/pdf"))],
            name="upload",
            catch_response=True,
        ) as response:
            if response.status_code != 200:
                response.failure(f"upload answered {response.status_code}")


class Agent(HttpUser):
    """An agent with a bearer token: starts a run, waits for it to end, reads it, again."""

    fixed_count = AGENTS
    wait_time = between(1, 3)

    def on_start(self) -> None:
        self.number = next(_agents)
        self.turn = self.number
        self.client.headers["Authorization"] = (
            f"Bearer {MATTER.tokens[self.number % len(MATTER.tokens)]}"
        )

    @task
    def draft(self) -> None:
        kind = RUN_KINDS[self.turn % len(RUN_KINDS)]
        self.turn += 1
        runs = f"/api/v1/cases/{MATTER.case_id}/runs"
        body = {
            "kind": kind,
            "packet_id": MATTER.packet_id,
            "instructions": f"Load test {kind}: the delivery dispute, from the record only.",
        }
        with self.client.post(runs, json=body, name="start run", catch_response=True) as response:
            if response.status_code != 201:
                response.failure(f"start answered {response.status_code}: {response.text[:200]}")
                return
            run_id = response.json()["id"]
        started = time.perf_counter()
        wait = self._stream if self.number % 2 == 0 else self._long_poll
        status = wait(f"{runs}/{run_id}")
        elapsed = (time.perf_counter() - started) * 1000
        self.client.get(f"{runs}/{run_id}", name="read run")
        self.environment.events.request.fire(
            request_type="RUN",
            name="run (start to end)",
            response_time=elapsed,
            response_length=0,
            response=None,
            context={"kind": kind, "status": status},
            exception=None if status in RUN_DONE else RuntimeError(f"run {kind} ended {status}"),
        )

    def _stream(self, run: str) -> str:
        """Read the run's Server-Sent Events until `event: end`; the last status seen."""
        status = "no status"
        with self.client.get(
            f"{run}/events/stream",
            name="GET run events (SSE)",
            stream=True,
            timeout=60,
            catch_response=True,
        ) as response:
            if response.status_code != 200:
                response.failure(f"stream answered {response.status_code}")
                return "stream refused"
            ended = False
            for line in response.iter_lines(decode_unicode=True):
                if line == "event: end":
                    ended = True
                elif line.startswith("data: "):
                    event = json.loads(line.removeprefix("data: "))
                    if event.get("kind") == "run.status":
                        status = event["payload"].get("status", status)
                        if ended or status in ("waiting_for_approval", "stopped_by_gate"):
                            break
                    if ended:
                        break
            if not ended and status not in RUN_ENDED:
                response.failure(f"stream closed before the run ended ({status})")
        return status

    def _long_poll(self, run: str) -> str:
        """`GET .../events?after=N&wait=60` until a `run.status` says the run ended."""
        after, status = 0, "no status"
        deadline = time.monotonic() + RUN_TIMEOUT
        while time.monotonic() < deadline:
            response = self.client.get(
                f"{run}/events?after={after}&wait=60", name="GET run events (long poll)"
            )
            if response.status_code != 200:
                return f"long poll answered {response.status_code}"
            for item in response.json()["items"]:
                after = item["seq"]
                if item["kind"] == "run.status":
                    status = item["payload"].get("status", status)
            if status in RUN_ENDED:
                return status
        return "timed out"


# --- Sampling ---------------------------------------------------------------------------------


@dataclass
class Sample:
    at: float  # seconds since the load started
    memory_mb: dict[str, float]
    postgres_processes: int
    connections: int
    active_connections: int
    p99_ms: float | None
    requests_per_second: float
    loadavg: float
    backends_not_ok: list[str]  # "name: state (message)" of each backend not healthy now


class Recorder:
    """Every request Locust reports, and the samples of the product taken every SAMPLE_EVERY s."""

    def __init__(self, product: Product) -> None:
        self.product = product
        self.started = time.monotonic()
        self.stop_at = self.started + SECONDS
        self.requests: list[tuple[float, str, float, str | None]] = []
        self.errors: list[tuple[str, str, float | None]] = []  # endpoint, error, idle before
        self.samples: list[Sample] = []
        self.pids: dict[str, set[int]] = {}
        self.cpu_start: dict[str, float] = {}
        self.max_connections = int(product.one("SHOW max_connections"))
        self.shared_buffers = str(product.one("SHOW shared_buffers"))
        self.postgres_processes = 0

    def on_request(
        self,
        request_type: str,
        name: str,
        response_time: float,
        exception: Any,
        context: dict[str, Any] | None = None,
        response: Any = None,
        **_: Any,
    ) -> None:
        now = time.monotonic()
        if now <= self.stop_at:
            error = None if exception is None else f"{type(exception).__name__}: {exception}"
            if error is not None and getattr(response, "status_code", 0) >= 400:
                # What the product said (an API error's code and detail), not only the status.
                error += f": {' '.join(str(getattr(response, 'text', '')).split())[:300]}"
            idle = (context or {}).get("idle_s")
            if error is not None:
                self.errors.append((name, error, idle))
                if idle is not None:
                    error += f" (connection idle {idle:.1f} s before)"
            self.requests.append((now - self.started, name, response_time, error))

    def _processes(self) -> dict[str, list[psutil.Process]]:
        """Each product process with its children, by its name in processes.json; the
        launcher itself as `launcher`, PostgreSQL's processes as `postgresql`."""
        record = self.product.processes()
        found: dict[str, list[psutil.Process]] = {}
        roots = {key: entry.get("pid") for key, entry in record.get("children", {}).items()}
        if self.product.process is not None:
            roots["launcher"] = self.product.process.pid
        roots["postgresql"] = record.get("database", {}).get("pid")
        for key, pid in roots.items():
            if not pid:
                continue
            try:
                root = psutil.Process(pid)
                tree = [root] if key == "launcher" else [root, *root.children(recursive=True)]
            except psutil.NoSuchProcess:
                continue
            found[key] = tree
            self.pids.setdefault(key, set()).add(pid)
        return found

    def _memory_mb(self, key: str, tree: list[psutil.Process]) -> dict[str, float]:
        """{key: MB}; PostgreSQL's in its parts (module docstring)."""
        if key != "postgresql":
            total = 0
            for process in tree:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                    total += process.memory_info().rss
            return {key: round(total / 2**20, 1)}
        pss = segment = private = processes = 0
        for process in tree:
            with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                for mapping in process.memory_maps(grouped=True):
                    pss += mapping.pss
                    if mapping.path.startswith(SHARED_SEGMENTS):
                        segment += mapping.pss
                    else:
                        private += mapping.private_clean + mapping.private_dirty
                processes += 1
        self.postgres_processes = processes
        return {
            "postgresql": round(pss / 2**20, 1),
            "postgresql-shared-memory": round(segment / 2**20, 1),
            "postgresql-private": round(private / 2**20, 1),
            "postgresql-private-per-process": round(private / max(processes, 1) / 2**20, 2),
        }

    def cpu_seconds(self) -> dict[str, float]:
        seconds = {}
        for key, tree in self._processes().items():
            total = 0.0
            for process in tree:
                with contextlib.suppress(psutil.NoSuchProcess, psutil.AccessDenied):
                    times = process.cpu_times()
                    total += times.user + times.system
            seconds[key] = total
        return seconds

    def sample(self) -> None:
        now = time.monotonic() - self.started
        memory: dict[str, float] = {}
        for key, tree in self._processes().items():
            memory.update(self._memory_mb(key, tree))
        rows = self.product.all(
            "SELECT count(*), count(*) FILTER (WHERE state = 'active') FROM pg_stat_activity "
            "WHERE backend_type = 'client backend'"
        )
        sick = self.product.all(
            "SELECT b.name, h.state, h.message FROM cluster_backendhealth h "
            "JOIN cluster_backend b ON b.id = h.backend_id WHERE h.state <> 'ok' ORDER BY b.name"
        )
        window = [r[2] for r in self.requests if r[0] > now - SAMPLE_EVERY and r[1] not in WAITS]
        self.samples.append(
            Sample(
                at=round(now, 1),
                memory_mb=memory,
                postgres_processes=self.postgres_processes,
                connections=int(rows[0][0]),
                active_connections=int(rows[0][1]),
                p99_ms=_quantile(window, 99),
                requests_per_second=round(len(window) / SAMPLE_EVERY, 2),
                loadavg=round(os.getloadavg()[0], 2),
                backends_not_ok=[
                    f"{name}: {state} ({message[:120]})" for name, state, message in sick
                ],
            )
        )

    def sample_loop(self) -> None:
        while time.monotonic() < self.stop_at:
            gevent.sleep(
                max(0.0, self.started + SAMPLE_EVERY * len(self.samples) - time.monotonic())
            )
            try:
                self.sample()
            except Exception as exc:  # a lost sample is reported, not fatal
                print(f"bench_load: sample failed: {exc!r}", file=sys.stderr)


def _quantile(values: list[float], q: int) -> float | None:
    if len(values) < 2:
        return round(values[0], 1) if values else None
    return round(statistics.quantiles(values, n=100, method="inclusive")[q - 1], 1)


# --- Figures ----------------------------------------------------------------------------------


def _endpoint_figures(recorder: Recorder, seconds: float) -> dict[str, dict[str, object]]:
    by_name: dict[str, list[tuple[float, str | None]]] = {}
    for _, name, elapsed, error in recorder.requests:
        by_name.setdefault(name, []).append((elapsed, error))
    figures: dict[str, dict[str, object]] = {}
    for name in sorted(by_name):
        rows = by_name[name]
        ok = [elapsed for elapsed, error in rows if error is None]
        errors = [error for _, error in rows if error is not None]
        figures[name] = {
            "requests": len(rows),
            "requests_per_second": round(len(rows) / seconds, 2),
            "p50_ms": _quantile(ok, 50),
            "p99_ms": _quantile(ok, 99),
            "max_ms": round(max(ok), 1) if ok else None,
            "errors": len(errors),
            "error_examples": errors[:5],
        }
    return figures


def _error_causes(recorder: Recorder) -> dict[str, dict[str, object]]:
    """Every error by its message: how many, on which endpoints, and how long the person's
    connection had been idle before (the shortest and longest)."""
    causes: dict[str, dict[str, Any]] = {}
    for name, error, idle in recorder.errors:
        cause = causes.setdefault(error, {"count": 0, "endpoints": {}, "idle_s": []})
        cause["count"] += 1
        cause["endpoints"][name] = cause["endpoints"].get(name, 0) + 1
        if idle is not None:
            cause["idle_s"].append(idle)
    return {
        error: {
            "count": cause["count"],
            "endpoints": cause["endpoints"],
            "idle_s_min": min(cause["idle_s"], default=None),
            "idle_s_max": max(cause["idle_s"], default=None),
        }
        for error, cause in sorted(causes.items(), key=lambda item: -item[1]["count"])
    }


def _memory_growth(samples: list[Sample]) -> dict[str, dict[str, float | None]]:
    """Per process: its memory at 2 minutes, at the end, at its highest, and its growth
    (bench/load_memory.py says how it is judged)."""
    return memory_growth([(s.at, s.memory_mb) for s in samples])


def _judged(samples: list[Sample]) -> set[str]:
    """The memory keys the 10% target is judged on: PostgreSQL's private memory, in total or
    per process (module docstring); every other process as sampled."""
    keys = {key for s in samples for key in s.memory_mb}
    keys -= {"postgresql", "postgresql-shared-memory"}
    later = [s for s in samples if s.at >= GROWTH_FROM - 1]
    same = bool(later) and later[0].postgres_processes == later[-1].postgres_processes
    keys.discard("postgresql-private-per-process" if same else "postgresql-private")
    return keys


def _plot(samples: list[Sample], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [s.at / 60 for s in samples]
    figure, (memory_axis, p99_axis, db_axis) = plt.subplots(
        3, 1, figsize=(9, 9), sharex=True, height_ratios=[3, 2, 1.3]
    )
    for key in sorted(
        {key for s in samples for key in s.memory_mb} - {"postgresql-private-per-process"}
    ):
        memory_axis.plot(minutes, [s.memory_mb.get(key) for s in samples], marker=".", label=key)
    memory_axis.set_ylabel("memory (MB)")
    memory_axis.set_title(title, fontsize=10)
    memory_axis.axvline(GROWTH_FROM / 60, color="grey", linestyle=":", linewidth=1)
    memory_axis.legend(fontsize=7, ncol=3, loc="upper left")
    memory_axis.grid(alpha=0.3)
    p99_axis.plot(minutes, [s.p99_ms for s in samples], marker=".", color="tab:red")
    p99_axis.set_ylabel("p99 of the last 30 s (ms)")
    p99_axis.grid(alpha=0.3)
    db_axis.plot(minutes, [s.connections for s in samples], marker=".", label="open")
    db_axis.plot(minutes, [s.active_connections for s in samples], marker=".", label="active")
    db_axis.set_ylabel("DB connections")
    db_axis.set_xlabel("minutes of load")
    db_axis.legend(fontsize=7, loc="upper left")
    db_axis.grid(alpha=0.3)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=90)
    plt.close(figure)


# --- The product ------------------------------------------------------------------------------


def _free_range(count: int) -> int:
    """The first of `count` free consecutive ports (the demo's backends)."""
    for _ in range(200):
        start = random.randrange(40_000, 50_000)  # noqa: S311  (not a secret)
        try:
            for port in range(start, start + count):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return start
    raise FaultError("no free range of ports for the demo's backends")


def _launch(folder: Path) -> Product:
    product = Product(folder / "var")
    for key in FAULT_ENV:  # the product's own defaults, not the fault tests' short ones
        product.env.pop(key, None)
    product.env.update(
        LEXWEB_DEMO_DATA="true",
        LEXWEB_DEMO_LAWYER_PASSWORD=PASSWORD,
        LEXWEB_DEMO_BACKEND_PORT=str(_free_range(8)),
    )
    product.start()
    return product


def _prepare(product: Product) -> None:
    wait_for(
        "the demo's frozen packet",
        lambda: product.one("SELECT id FROM evidence_packet WHERE status = 'frozen' LIMIT 1"),
        900,
        every=3,
    )
    # At launch the first health check may find the demo's backends not listening yet; they
    # stay "down" until the next check (every 30 s) and runs are refused (`role_unavailable`)
    # meanwhile. The load starts on a cluster in its steady state.
    wait_for(
        "every demo backend healthy",
        lambda: product.one(
            "SELECT count(*) > 0 AND bool_and(coalesce(h.state, '') = 'ok') FROM cluster_backend b"
            " LEFT JOIN cluster_backendhealth h ON h.backend_id = b.id WHERE b.enabled"
        ),
        180,
        every=2,
    )
    env = dict(
        product.env,
        BENCH_LOAD_PEOPLE=str(PEOPLE),
        BENCH_LOAD_AGENTS=str(AGENTS),
        BENCH_LOAD_PASSWORD=PASSWORD,
    )
    code = "from bench import load_prepare; load_prepare.main()"
    result = subprocess.run(
        [sys.executable, "-m", "lexweb.launcher", "manage", "shell", "-c", code],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    line = next((x for x in result.stdout.splitlines() if x.startswith("LOAD=")), None)
    if line is None:
        raise FaultError(f"load_prepare failed:\n{result.stdout}\n{result.stderr}")
    made = json.loads(line.removeprefix("LOAD="))
    MATTER.case_id, MATTER.packet_id = made["case_id"], made["packet_id"]
    MATTER.documents = [tuple(pair) for pair in made["documents"]]
    MATTER.people, MATTER.tokens = made["people"], made["tokens"]


def _drive(product: Product) -> tuple[Recorder, dict[str, float], int]:
    environment = Environment(user_classes=[Person, Agent], host=product.base)
    recorder = Recorder(product)
    environment.events.request.add_listener(recorder.on_request)
    cpu_before = recorder.cpu_seconds()
    restarts_before = sum(len(pids) for pids in recorder.pids.values())
    runner = environment.create_local_runner()
    recorder.started = time.monotonic()
    recorder.stop_at = recorder.started + SECONDS
    runner.start(PEOPLE + AGENTS, spawn_rate=5)
    sampler = gevent.spawn(recorder.sample_loop)
    gevent.sleep(SECONDS)
    sampler.join(timeout=SAMPLE_EVERY)
    runner.quit()
    cpu_after = recorder.cpu_seconds()
    cpu = {key: round(cpu_after[key] - cpu_before.get(key, 0.0), 1) for key in cpu_after}
    restarts = sum(len(pids) for pids in recorder.pids.values()) - restarts_before
    return recorder, cpu, restarts


def main() -> None:
    folder = Path(tempfile.mkdtemp(prefix="lexweb-load-"))
    product: Product | None = None
    try:
        product = _launch(folder)
        _prepare(product)
        load_before = os.getloadavg()
        recorder, cpu, restarts = _drive(product)
        load_after = os.getloadavg()
        endpoints = _endpoint_figures(recorder, SECONDS)
        interactive = [r[2] for r in recorder.requests if r[3] is None and r[1] not in WAITS]
        errors = sum(int(str(f["errors"])) for f in endpoints.values())
        growth = _memory_growth(recorder.samples)
        judged = _judged(recorder.samples)
        over = {
            key: g["growth"]
            for key, g in growth.items()
            if key in judged and isinstance(g["growth"], float) and g["growth"] >= GROWTH_TARGET
        }
        connections = [s.connections for s in recorder.samples]
        title = (
            f"lexweb under load: {PEOPLE} people, {AGENTS} agents, {SECONDS / 60:.0f} min, "
            f"{os.cpu_count()} cores, load {load_before[0]:.1f}-{load_after[0]:.1f}"
        )
        _plot(recorder.samples, PLOT, title)
        runs = [r for r in recorder.requests if r[1] == "run (start to end)"]
        print(
            json.dumps(
                {
                    "benchmark": "load",
                    "seconds": SECONDS,
                    "people": PEOPLE,
                    "agents": AGENTS,
                    "upload_weight": UPLOAD_WEIGHT,
                    "requests": len(recorder.requests),
                    "requests_per_second": round(len(recorder.requests) / SECONDS, 2),
                    "interactive_requests_per_second": round(len(interactive) / SECONDS, 2),
                    "interactive_p50_ms": _quantile(interactive, 50),
                    "interactive_p99_ms": _quantile(interactive, 99),
                    "errors": errors,
                    "runs_done": sum(1 for r in runs if r[3] is None),
                    "runs_not_done": sum(1 for r in runs if r[3] is not None),
                    "errors_by_cause": _error_causes(recorder),
                    "endpoints": endpoints,
                    "memory_growth_after_2_min": growth,
                    "memory_judged": sorted(judged),
                    "memory_over_target": over,
                    "shared_buffers": recorder.shared_buffers,
                    "cpu_seconds": cpu,
                    "process_restarts": restarts,
                    "samples_with_a_backend_not_ok": sum(
                        1 for s in recorder.samples if s.backends_not_ok
                    ),
                    "connections_max": max(connections, default=None),
                    "connections_last": connections[-1] if connections else None,
                    "max_connections": recorder.max_connections,
                    "samples": [s.__dict__ for s in recorder.samples],
                    "targets": {
                        "errors": 0,
                        "memory_growth_after_2_min": GROWTH_TARGET,
                        "connections": f"under max_connections ({recorder.max_connections})",
                    },
                    "met": {
                        "errors": errors == 0,
                        "memory": not over and bool(growth),
                        "connections": max(connections, default=0) < recorder.max_connections,
                    },
                    "plot": str(PLOT),
                    "loadavg_before": [round(x, 2) for x in load_before],
                    "loadavg_after": [round(x, 2) for x in load_after],
                    "cpu_count": os.cpu_count(),
                }
            ),
            flush=True,
        )
    finally:
        if product is not None:
            product.close()  # writes its output beside the var folder
            kept = PLOT.parent / "load-product.log"
            with contextlib.suppress(OSError):
                shutil.copyfile(folder / "launcher-output.log", kept)
                print(f"bench_load: the product's output is in {kept}", file=sys.stderr)
        if os.environ.get("BENCH_LOAD_KEEP"):
            print(f"bench_load: var folder kept at {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
