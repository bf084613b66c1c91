"""Scheduling of drafting stages across the reference site's boards (issue 12, Performance):
K = 1, 2, 4, 8 motions in flight at once.

The reference site (examples/reference_site.yaml) is loaded with its backends replaced by local
fake backends (`lexweb_dev.demo.site_load_demo`), served in a separate process at the reference
decode speeds: drafter (board A) 90 tok/s, reasoner (board B) 50 tok/s, gate (pair 0-1) and
adversary (pair 2-3) 60 tok/s, Ollama extractor 113 tok/s (unused by motions). Each fake replies
with a fixed text (the gate's "yes" and the reviewer's findings as the JSON asked for), so every
stage generates a known number of tokens (TOKENS, times LEXWEB_BENCH_SCHEDULING_SCALE). The
workers are real Procrastinate workers started exactly as `make run` starts them
(lexweb.launcher: one per GPU host from `manage.py board_queues`, plus the `cluster` and `cpu`
workers), on this bench's database. Motions are started through `runs.run_start` and run
gate -> drafter -> reasoner -> verifier -> adversary -> revision -> verifier again. The verifier's
model second opinion is off (LEXWEB_SECOND_OPINION=off): the replies cite nothing it would ask
about, and this measures the boards' stages.

Reported per K:
- makespan: from the first `run_start` to the last stage finished (stage rows);
- lower bound: the larger of (a) the longest motion's own chain of work and (b) for each board
  (and the `cpu` verifier worker), the shortest work any motion needs before its first stage
  there + the board's total work / its slots + the shortest work after its last stage there.
  A model stage's work is its pure generation time (completion tokens / the fake's speed); a
  check's work is its verification's own run time (Verification started -> finished). The
  ratio makespan / bound has the target <= 1.15; `board_only_bound_s` is the busiest board's
  work / slots alone (no head or tail: no schedule can reach it at small K);
- per board: concurrent generations at most (the fake's own record of slot holding, each
  request from slot taken to slot given back) against its slots, and the slot-seconds a board
  stood idle while a stage for it was ready (ready = the previous stage's success, when its job
  is deferred) and had not begun generating: `idle_while_queued_s` (with the longest such
  stretch) and `ready_to_generating_mean_s` (mean wait from ready to its first token slot,
  by Little's law: the integral of waiting stages over their count).
Peer in the same run: the same work strictly serial (one motion, hence one stage, at a time),
measured on SERIAL_MOTIONS motions; `serial_s` for K motions is K times its mean per motion and
`speedup_vs_serial` the ratio to the makespan.

Prints one JSON object. Run with `make bench` (or `python -m bench.bench_scheduling` with
DATABASE_URL set to a database of its own; it writes cluster rows, a case and runs there).
"""

import contextlib
import itertools
import json
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lexweb.settings")
# The workers read it from the environment they inherit; this process asks no second opinion.
os.environ["LEXWEB_SECOND_OPINION"] = "off"
django.setup()

import pymupdf  # noqa: E402
from django.conf import settings  # noqa: E402
from django.db import connection  # noqa: E402
from procrastinate.contrib.django.models import ProcrastinateJob  # noqa: E402

from apps.accounts.models import User  # noqa: E402
from apps.cases.models import Case, Membership  # noqa: E402
from apps.cluster.models import Backend, BackendHealth  # noqa: E402
from apps.documents import services as document_services  # noqa: E402
from apps.drafting.models import Run, Stage  # noqa: E402
from apps.drafting.services import runs  # noqa: E402
from apps.evidence.services import packets as packet_services  # noqa: E402
from apps.verification.models import Verification  # noqa: E402
from lexweb import launcher  # noqa: E402
from lexweb_dev import demo  # noqa: E402
from lexweb_dev.fakebackend import FakeBackend, FakeSettings, reply_pieces  # noqa: E402

KS = tuple(int(k) for k in os.environ.get("LEXWEB_BENCH_SCHEDULING_KS", "1,2,4,8").split(","))
SERIAL_MOTIONS = int(os.environ.get("LEXWEB_BENCH_SCHEDULING_SERIAL", "2"))
TARGET_RATIO = 1.15
RUN_TIMEOUT_SECONDS = 900
CASE_NUMBER = "BENCH-SCHEDULING"
# Reference decode speeds (tokens/s) by backend of examples/reference_site.yaml.
SPEEDS = {
    "llama-board-a": 90.0,  # drafter (and revision)
    "llama-board-b": 50.0,  # reasoner
    "llama-gate": 60.0,
    "llama-adversary": 60.0,
    "ollama-epyc": 113.0,  # extractor (no motion stage)
}
# Tokens each stage generates, before LEXWEB_BENCH_SCHEDULING_SCALE (default 1): at the speeds
# above the gate takes 3 s, drafter and revision 6 s each, the reasoner 9 s, the reviewer 6 s
# (a real stage writes up to 2,048; these keep K = 8 near a minute).
TOKENS = {"gate": 180, "drafter": 540, "reasoner": 450, "adversary": 360}
BACKEND_OF_STAGE: dict[str, str] = {
    Stage.Name.GATE: "llama-gate",
    Stage.Name.DRAFTER: "llama-board-a",
    Stage.Name.REASONER: "llama-board-b",
    Stage.Name.ADVERSARY: "llama-adversary",
    Stage.Name.REVISION: "llama-board-a",
}
CPU = "cpu (verifier)"
PAGES = [
    "Lease agreement between Acme Ltd and Widget LLC for the warehouse at 12 Dock Road. "
    "The lessee shall pay the rent on the first day of each month and keep the premises "
    "in good repair.",
    "Notice of default sent by Acme Ltd to Widget LLC. The rent for the spring months was "
    "not paid and the lessor asks for payment within thirty days.",
    "Reply of Widget LLC: the roof leaked all spring, the lessor did not repair it, and the "
    "lessee withheld the rent until the repair was made.",
]
_SENTENCE = (
    "the lessee withheld rent because the lessor failed to repair the roof and the notice "
    "of default did not give the lessee the time the lease requires before termination"
)
_WORDS = _SENTENCE.split(" ")


def _scale() -> float:
    raw = os.environ.get("LEXWEB_BENCH_SCHEDULING_SCALE", "1")
    try:
        scale = float(raw)
    except ValueError:
        raise SystemExit(f"LEXWEB_BENCH_SCHEDULING_SCALE must be a number, not {raw!r}") from None
    if not 0.1 <= scale <= 20:
        raise SystemExit("LEXWEB_BENCH_SCHEDULING_SCALE must be between 0.1 and 20")
    return scale


def _words(count: int, offset: int = 0) -> str:
    return " ".join(_WORDS[(offset + n) % len(_WORDS)] for n in range(max(count, 1)))


def _tokens(text: str) -> int:
    return len(reply_pieces(text, 10**9)[0])


def _padded(build: Callable[[int], str], target: int) -> str:
    """build(n) with the largest n whose reply is at most `target` tokens (at least n = 1)."""
    n = 1
    while _tokens(build(n + 1)) <= target:
        n += 1
    return build(n)


def replies(scale: float) -> dict[str, str]:
    """The fixed reply of each backend, about TOKENS x scale tokens long."""
    want = {name: max(8, round(count * scale)) for name, count in TOKENS.items()}
    draft = _words(want["drafter"]) + "."
    quote = " ".join(draft.split()[:8])

    def gate(n: int) -> str:
        return json.dumps({"answer": "yes", "reasons": [_words(n, 3)], "missing_evidence": []})

    def adversary(n: int) -> str:
        finding = {"kind": "weak_point", "quote": quote, "comment": _words(n, 5)}
        return json.dumps({"findings": [finding]})

    return {
        "llama-gate": _padded(gate, want["gate"]),
        "llama-board-a": draft,
        "llama-board-b": _words(want["reasoner"], 7) + ".",
        "llama-adversary": _padded(adversary, want["adversary"]),
        "ollama-epyc": _words(40) + ".",
    }


# --- The fakes, in a process of their own ------------------------------------------------------


class RecordingFake(FakeBackend):
    """A fake that records, per generation, when it arrived, took a slot and gave it back
    (wall-clock seconds: comparable with the database's timestamps)."""

    def __init__(self, settings: FakeSettings, *, port: int = 0) -> None:
        super().__init__(settings, port=port)
        self.record: list[tuple[float, float, float]] = []

    @contextlib.asynccontextmanager
    async def slot(
        self, on_wait: Callable[[], Awaitable[None]] | None = None
    ) -> AsyncIterator[int]:
        arrived = time.time()
        async with super().slot(on_wait) as slot_id:
            began = time.time()
            try:
                yield slot_id
            finally:
                self.record.append((arrived, began, time.time()))


def _serve_fakes(plan: list[tuple[str, int, FakeSettings]], conn: Connection) -> None:
    """In the child process: every fake of the plan on one loop; answers "record" (and resets
    it) until "stop"."""
    import asyncio

    async def main() -> None:
        fakes = {}
        for name, port, fake_settings in plan:
            fake = RecordingFake(fake_settings, port=port)
            await fake.start()
            fakes[name] = fake
        conn.send("ready")
        loop = asyncio.get_running_loop()
        while True:
            command = await loop.run_in_executor(None, conn.recv)
            if command == "stop":
                break
            conn.send({name: list(fake.record) for name, fake in fakes.items()})
            for fake in fakes.values():
                fake.record.clear()
        for fake in fakes.values():
            await fake.stop()

    asyncio.run(main())


# --- The site, the case and the workers --------------------------------------------------------


def _free_port_base(count: int) -> int:
    for base in range(24_100, 31_000, 17):
        try:
            with contextlib.ExitStack() as stack:
                for port in range(base, base + count):
                    probe = stack.enter_context(socket.socket())
                    probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise SystemExit("no free block of ports for the fake backends")


def site_prepare(port_base: int, scale: float) -> list[tuple[str, int, FakeSettings]]:
    text = demo.REFERENCE_SITE.read_text(encoding="utf-8")
    demo.site_load_demo(text=text, port_base=port_base)
    names = list(SPEEDS)
    Backend.objects.filter(name__in=names).update(enabled=True)
    # Fresh fakes: whatever an earlier run's health checks said of these ports is stale.
    BackendHealth.objects.filter(backend__name__in=names).delete()
    texts = replies(scale)
    plan = []
    for name, port, demo_fake in demo.demo_backend_plan(text=text, port_base=port_base):
        # The demo's kind, model, slots and context; our speed and fixed reply (a plain fake,
        # not the demo's writer).
        fake = FakeSettings(
            kind=demo_fake.kind,
            model=demo_fake.model,
            tokens_per_second=SPEEDS[name],
            slots=demo_fake.slots,
            n_ctx_per_slot=demo_fake.n_ctx_per_slot,
            reply=texts[name],
        )
        plan.append((name, port, fake))
    return plan


def case_prepare() -> tuple[User, Case, int]:
    """The bench's lawyer, case and frozen three-page packet (made once, then reused)."""
    case = Case.objects.filter(number=CASE_NUMBER).first()
    if case is not None:
        packet = case.packets.filter(status="frozen").order_by("-pk").first()
        if packet is not None:
            return case.created_by, case, packet.pk
    user = User.objects.create_user(
        f"scheduling{time.time_ns()}@bench.test", None, full_name="Bench Lawyer", role="lawyer"
    )
    case = Case.objects.create(
        title="Scheduling bench", number=CASE_NUMBER, client="Acme Ltd", created_by=user
    )
    Membership.objects.create(case=case, user=user, role="lawyer")
    with pymupdf.open() as pdf:
        for text in PAGES:
            page = pdf.new_page()
            page.insert_textbox(pymupdf.Rect(72, 72, 520, 720), text, fontsize=11)
        data = pdf.tobytes()
    import io

    outcome = document_services.document_upload(
        case=case, uploaded_by=user, filename="lease.pdf", source=io.BytesIO(data), origin="client"
    )
    if outcome.document is None:
        raise SystemExit(f"bench document refused: {outcome.error}")
    document_services.document_extract_text(document_id=outcome.document.pk)
    packet = packet_services.packet_create(user=user, case_id=case.pk, title="Lease record")
    packet_services.packet_items_add(
        user=user,
        case_id=case.pk,
        packet_id=packet.pk,
        selections=[packet_services.Selection(document_id=outcome.document.pk, reason="Record")],
    )
    packet = packet_services.packet_freeze(user=user, case_id=case.pk, packet_id=packet.pk)
    return user, case, packet.pk


def _stale_jobs_remove() -> None:
    """Jobs an interrupted earlier run of this bench left queued would run first."""
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM procrastinate_jobs WHERE status = 'todo' AND task_name IN "
            "('drafting.run_stage', 'verification.verify')"
        )
    Run.objects.filter(case__number=CASE_NUMBER, status__in=["queued", "running"]).update(
        status=Run.Status.CANCELLED
    )


@dataclass
class Workers:
    """The workers `make run` starts (lexweb.launcher.run), as subprocesses of this one."""

    log_dir: Path
    processes: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    layout: list[dict[str, object]] = field(default_factory=list)

    def start(self) -> None:
        argvs = [
            ("cpu", launcher._worker_argv("cpu")),
            ("cluster", launcher._worker_argv("cluster", launcher._cluster_worker_concurrency())),
        ]
        for host, queues, slots in launcher._board_queues():
            argvs.append((f"host-{host}", launcher._worker_argv(queues, slots)))
            self.layout.append({"host": host, "queues": queues, "concurrency": slots})
        for name, argv in argvs:
            log = (self.log_dir / f"{name}.log").open("wb")
            process = subprocess.Popen(
                argv, cwd=settings.BASE_DIR, stdout=log, stderr=subprocess.STDOUT
            )
            self.processes.append((name, process))

    def check(self) -> None:
        for name, process in self.processes:
            if process.poll() is not None:
                raise SystemExit(
                    f"the {name} worker exited ({process.returncode}); see {self.log_dir}"
                )

    def stop(self) -> None:
        for _name, process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for _name, process in self.processes:
            try:
                process.wait(timeout=40)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


# --- One batch of motions ----------------------------------------------------------------------


TERMINAL = {*Run.FINISHED, Run.Status.STOPPED_BY_GATE, Run.Status.WAITING_FOR_APPROVAL}


def _motions_start(user: User, case: Case, packet_id: int, count: int, tag: str) -> list[int]:
    ids = []
    for n in range(count):
        request = runs.RunRequest(
            kind=Run.Kind.MOTION,
            packet_id=packet_id,
            instructions=f"Draft a motion to dismiss the claim for unpaid rent ({tag}, #{n}).",
        )
        run, _ = runs.run_start(user=user, case_id=case.pk, request=request)
        ids.append(run.pk)
    return ids


def _wait(run_ids: list[int], workers: Workers) -> None:
    deadline = time.monotonic() + RUN_TIMEOUT_SECONDS
    while True:
        statuses = dict(Run.objects.filter(pk__in=run_ids).values_list("pk", "status"))
        if all(status in TERMINAL for status in statuses.values()):
            failed = {pk: s for pk, s in statuses.items() if s != Run.Status.WAITING_FOR_APPROVAL}
            if failed:
                errors = list(Run.objects.filter(pk__in=failed).values_list("error", flat=True))
                raise SystemExit(f"runs did not finish as expected: {failed} {errors[:3]}")
            return
        # A job that failed outright (an error before the stage could record it) ends nothing.
        jobs = Stage.objects.filter(run_id__in=run_ids).exclude(job_id=None).values("job_id")
        failed_jobs = ProcrastinateJob.objects.filter(id__in=jobs, status="failed").count()
        if failed_jobs:
            raise SystemExit(f"{failed_jobs} stage job(s) failed; runs now: {statuses}")
        if time.monotonic() > deadline:
            raise SystemExit(f"runs still not finished after {RUN_TIMEOUT_SECONDS} s: {statuses}")
        workers.check()
        time.sleep(0.1)


@dataclass
class StageRow:
    run_id: int
    position: int
    name: str
    resource: str  # backend name, or CPU for the checks
    ready: float  # when its job was deferred: the run's start, or the previous stage's success
    claimed: float  # when a worker took its job and claimed it (stage started_at)
    finished: float
    work: float  # pure generation time, or the verification's own run time
    attempts: int


def _stage_rows(run_ids: list[int], speeds: dict[str, float]) -> dict[int, list[StageRow]]:
    rows: dict[int, list[StageRow]] = {}
    verification_ids = Stage.objects.filter(run_id__in=run_ids).values("verification_id")
    verifications = {v.pk: v for v in Verification.objects.filter(pk__in=verification_ids)}
    for run in Run.objects.filter(pk__in=run_ids).order_by("pk"):
        previous = run.created_at.timestamp()
        chain = []
        for stage in run.stages.order_by("position"):
            if stage.finished_at is None:
                raise SystemExit(f"stage {stage.pk} ({stage.name}) never finished")
            if stage.name in BACKEND_OF_STAGE:
                resource = BACKEND_OF_STAGE[stage.name]
                work = stage.completion_tokens / speeds[resource]
            else:
                resource = CPU
                verification = verifications.get(stage.verification_id or 0)
                if (
                    verification is None
                    or verification.started_at is None
                    or verification.finished_at is None
                ):
                    raise SystemExit(f"stage {stage.pk} has no verification run")
                work = (verification.finished_at - verification.started_at).total_seconds()
            finished = stage.finished_at.timestamp()
            chain.append(
                StageRow(
                    run_id=run.pk,
                    position=stage.position,
                    name=stage.name,
                    resource=resource,
                    ready=previous,
                    claimed=stage.started_at.timestamp() if stage.started_at else previous,
                    finished=finished,
                    work=work,
                    attempts=stage.attempt,
                )
            )
            previous = finished
        rows[run.pk] = chain
    return rows


def _sweep(events: list[tuple[float, int, int]]) -> Iterator[tuple[float, float, int, int]]:
    """events (time, d_busy, d_waiting) -> spans (start, end, busy, waiting) in time order."""
    busy = waiting = 0
    ordered = sorted(events)
    for (at, d_busy, d_waiting), (following, _, _) in itertools.pairwise(ordered):
        busy += d_busy
        waiting += d_waiting
        if following > at:
            yield at, following, busy, waiting


def board_report(
    name: str, slots: int, stages: list[StageRow], record: list[tuple[float, float, float]]
) -> dict[str, object]:
    """Occupancy (the fake's record) and idling while a stage was ready (stage rows)."""
    events: list[tuple[float, int, int]] = []
    for _arrived, began, ended in record:
        events += [(began, 1, -1), (ended, -1, 0)]
    for stage in stages:
        events.append((stage.ready, 0, 1))
    most = idle = longest = stretch = waited = 0.0
    for start, end, busy, waiting in _sweep(events):
        most = max(most, busy)
        waited += waiting * (end - start)
        lost = min(max(slots - busy, 0), max(waiting, 0))
        if lost > 0:
            idle += lost * (end - start)
            stretch += end - start
            longest = max(longest, stretch)
        else:
            stretch = 0.0
    busy_measured = sum(ended - began for _a, began, ended in record)
    pickups = [stage.claimed - stage.ready for stage in stages]
    return {
        "slots": slots,
        "stages": len(stages),
        "generations": len(record),
        "max_concurrent": int(most),
        "slots_exceeded": most > slots,
        "busy_s": round(busy_measured, 2),
        "work_s": round(sum(s.work for s in stages), 2),
        "idle_while_queued_s": round(idle, 2),
        "longest_idle_while_queued_s": round(longest, 2),
        "ready_to_generating_mean_s": round(waited / len(stages), 3) if stages else None,
        # Ready -> a worker took the job and claimed the stage (before any wait for a slot).
        "job_pickup_mean_s": round(sum(pickups) / len(pickups), 3) if pickups else None,
        "job_pickup_max_s": round(max(pickups), 3) if pickups else None,
    }


def lower_bound(chains: dict[int, list[StageRow]], slots: dict[str, int]) -> dict[str, Any]:
    longest_chain = max(sum(s.work for s in chain) for chain in chains.values())
    bounds: dict[str, float] = {}
    board_only = 0.0
    for resource, count in slots.items():
        heads, tails, total = [], [], 0.0
        for chain in chains.values():
            here = [n for n, s in enumerate(chain) if s.resource == resource]
            if not here:
                continue
            heads.append(sum(s.work for s in chain[: here[0]]))
            tails.append(sum(s.work for s in chain[here[-1] + 1 :]))
            total += sum(chain[n].work for n in here)
        if heads:
            bounds[resource] = min(heads) + total / count + min(tails)
            if resource != CPU:
                board_only = max(board_only, total / count)
    busiest = max(bounds, key=lambda r: bounds[r])
    return {
        "bound_s": max(longest_chain, bounds[busiest]),
        "longest_chain_s": longest_chain,
        "busiest": busiest,
        "busiest_bound_s": bounds[busiest],
        "board_only_bound_s": board_only,
    }


def batch(
    *,
    k: int,
    user: User,
    case: Case,
    packet_id: int,
    workers: Workers,
    fakes: Connection,
    slots: dict[str, int],
    speeds: dict[str, float],
    serial: bool = False,
) -> dict[str, Any]:
    fakes.send("record")
    fakes.recv()  # start from an empty record
    started = time.time()
    run_ids: list[int] = []
    if serial:
        for n in range(k):
            run_ids += _motions_start(user, case, packet_id, 1, f"serial {n}")
            _wait(run_ids[-1:], workers)
    else:
        run_ids = _motions_start(user, case, packet_id, k, f"K={k}")
        _wait(run_ids, workers)
    fakes.send("record")
    record: dict[str, list[tuple[float, float, float]]] = fakes.recv()
    chains = _stage_rows(run_ids, speeds)
    finished = max(s.finished for chain in chains.values() for s in chain)
    makespan = finished - started
    bound = lower_bound(chains, slots)
    flat = [s for chain in chains.values() for s in chain]
    boards = {
        name: board_report(
            name, slots[name], [s for s in flat if s.resource == name], record.get(name, [])
        )
        for name in BACKEND_OF_STAGE.values()
    }
    checks = [s for s in flat if s.resource == CPU]
    return {
        "k": k,
        "makespan_s": round(makespan, 2),
        "lower_bound_s": round(bound["bound_s"], 2),
        "ratio": round(makespan / bound["bound_s"], 3),
        "bound_set_by": "one motion's chain"
        if bound["longest_chain_s"] >= bound["busiest_bound_s"]
        else bound["busiest"],
        "longest_chain_s": round(bound["longest_chain_s"], 2),
        "board_only_bound_s": round(bound["board_only_bound_s"], 2),
        "ratio_to_board_only_bound": round(makespan / bound["board_only_bound_s"], 3),
        "stage_attempts_max": max(s.attempts for s in flat),
        "checks": {
            "count": len(checks),
            "work_mean_s": round(sum(s.work for s in checks) / len(checks), 3),
        },
        "boards": boards,
        "_per_motion_s": makespan / k,
    }


def main() -> None:
    scale = _scale()
    port_base = _free_port_base(len(SPEEDS))
    plan = site_prepare(port_base, scale)
    user, case, packet_id = case_prepare()
    _stale_jobs_remove()
    slots = {name: fake.slots for name, _port, fake in plan}
    slots[CPU] = 1  # the `cpu` worker runs one job at a time (launcher: no --concurrency)
    speeds = {name: fake.tokens_per_second for name, _port, fake in plan}
    parent, child = multiprocessing.Pipe()
    server = multiprocessing.get_context("spawn").Process(
        target=_serve_fakes, args=(plan, child), daemon=True
    )
    server.start()
    if not parent.poll(60) or parent.recv() != "ready":
        raise SystemExit("the fake backends did not start")
    load_before = os.getloadavg()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-scheduling-") as logs:
        workers = Workers(Path(logs))
        try:
            workers.start()
            common: dict[str, Any] = {
                "user": user,
                "case": case,
                "packet_id": packet_id,
                "workers": workers,
                "fakes": parent,
                "slots": slots,
                "speeds": speeds,
            }
            # One untimed motion: workers connected, caches warm, health rows written.
            batch(k=1, **common)
            serial = batch(k=SERIAL_MOTIONS, serial=True, **common)
            for k in KS:
                results.append(batch(k=k, **common))
        except SystemExit:
            for path in sorted(Path(logs).glob("*.log")):
                tail = path.read_text(errors="replace")[-3000:]
                print(f"--- {path.name}\n{tail}", file=sys.stderr)
            raise
        finally:
            workers.stop()
            parent.send("stop")
            server.join(10)
    serial_per_motion = float(serial["_per_motion_s"])
    for result in results:
        result.pop("_per_motion_s")
        result["serial_s"] = round(serial_per_motion * result["k"], 2)
        result["speedup_vs_serial"] = round(
            serial_per_motion * result["k"] / result["makespan_s"], 2
        )
    worst = max(r["ratio"] for r in results)
    exceeded = any(b["slots_exceeded"] for r in results for b in r["boards"].values())
    print(
        json.dumps(
            {
                "benchmark": "scheduling",
                "site": "examples/reference_site.yaml on local fakes",
                "speeds_tok_s": speeds,
                "tokens_per_stage": {
                    name: max(8, round(count * scale)) for name, count in TOKENS.items()
                },
                "scale": scale,
                "workers": workers.layout,
                "serial_peer": {
                    "motions": SERIAL_MOTIONS,
                    "per_motion_s": round(serial_per_motion, 2),
                },
                "results": results,
                "worst_ratio": worst,
                "target_ratio": TARGET_RATIO,
                "slots_exceeded": exceeded,
                "met": worst <= TARGET_RATIO and not exceeded,
                "load_average": {
                    "before": [round(x, 2) for x in load_before],
                    "after": [round(x, 2) for x in os.getloadavg()],
                },
            }
        )
    )


if __name__ == "__main__":
    main()
