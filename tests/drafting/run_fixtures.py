"""A small site for pipeline tests: one fake llama-server per role (each on its own board, each
with the reply that role's model gives), a case with a frozen packet, and a real Procrastinate
worker in a thread of this process serving every queue (board queues, `cluster`, `cpu`)."""

import asyncio
import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from procrastinate.contrib.django import app as procrastinate_app
from procrastinate.contrib.django import procrastinate_app as procrastinate_django
from procrastinate.periodic import PeriodicRegistry

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import Deployment
from apps.drafting.models import Run
from apps.drafting.services import runs
from apps.evidence.models import Packet
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.cluster.dispatch_fixtures import backend_make, deployment_make, route_make
from tests.drafting.makers import packet_of, read_pdf

RECORD_LINES = [
    "Lease agreement between Acme Ltd and Widget LLC.",
    "The lease began on 3 March 2024 at a monthly rent of $1,250.00.",
]
DRAFT = "The lease began on 3 March 2024 [“record.pdf” p. 1]. The rent was $1,250.00."
REVISED = "The lease began on 3 March 2024 [“record.pdf” p. 1]."
GATE_YES = json.dumps(
    {"answer": "yes", "reasons": ["The lease is in the record."], "missing_evidence": []}
)
GATE_NO = json.dumps(
    {"answer": "no", "reasons": ["Nothing shows a breach."], "missing_evidence": ["notice"]}
)
ADVERSARY = json.dumps(
    {
        "findings": [
            {
                "kind": "unsupported_assertion",
                "quote": "The rent was $1,250.00.",
                "comment": "No page says the rent was paid.",
            }
        ]
    }
)
REPLIES = {
    "gate": GATE_YES,
    "drafter": DRAFT,
    "reasoner": DRAFT,
    "adversary": ADVERSARY,
    "summarizer": "The record is a lease that began on 3 March 2024 [“record.pdf” p. 1].",
}
TERMINAL = {*Run.FINISHED, Run.Status.STOPPED_BY_GATE}


@dataclass
class Site:
    fakes: dict[str, FakeBackend]
    deployments: dict[str, Deployment]


@contextlib.contextmanager
def site_running(
    replies: dict[str, str] | None = None, *, tokens_per_second: float = 3000.0
) -> Iterator[Site]:
    """Fakes and cluster rows for every role in `replies` (default REPLIES)."""
    with contextlib.ExitStack() as stack:
        fakes: dict[str, FakeBackend] = {}
        deployments: dict[str, Deployment] = {}
        for role, reply in (replies or REPLIES).items():
            fake = stack.enter_context(
                FakeBackend.in_thread(
                    FakeSettings(kind="llama_cpp", tokens_per_second=tokens_per_second, reply=reply)
                )
            )
            backend = backend_make(base_url=fake.base_url, board=f"board-{role}")
            deployment = deployment_make(backend, model=f"{role}-model", sampling={"seed": 7})
            route_make(role, deployment)
            fakes[role], deployments[role] = fake, deployment
        yield Site(fakes=fakes, deployments=deployments)


def frozen_packet(*, case: Case, user: User) -> Packet:
    document = read_pdf(case=case, user=user, lines=RECORD_LINES)
    return packet_of(case=case, user=user, documents=[document])


def start(
    *, user: User, case: Case, packet: Packet, kind: str = "motion", key: str = "", **extra: object
) -> Run:
    request = runs.RunRequest(
        kind=kind,
        packet_id=packet.pk,
        instructions=str(extra.get("instructions", "Draft a motion on the lease.")),
        high_stakes=bool(extra.get("high_stakes", False)),
    )
    run, _ = runs.run_start(user=user, case_id=case.pk, request=request, idempotency_key=key)
    return run


class ThreadWorker:
    """`manage.py worker`'s Procrastinate worker (all queues, several jobs at once) on its own
    event loop in a thread, until `stop()`."""

    def __init__(self, concurrency: int = 6) -> None:
        self.concurrency = concurrency
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._target, daemon=True)
        self.failure: BaseException | None = None

    def _target(self) -> None:
        try:
            asyncio.run(self._main())
        except BaseException as exc:  # reported by stop()
            self.failure = exc

    async def _main(self) -> None:
        real_app = procrastinate_django.current_app
        periodic, real_app.periodic_registry = real_app.periodic_registry, PeriodicRegistry()
        try:
            with procrastinate_app.replace_connector(
                procrastinate_app.connector.get_worker_connector()
            ) as worker_app:
                async with worker_app.open_async():
                    await self._work()
        finally:
            real_app.periodic_registry = periodic

    async def _work(self) -> None:
        task = asyncio.ensure_future(
            procrastinate_app.run_worker_async(
                concurrency=self.concurrency,
                wait=True,
                install_signal_handlers=False,
                listen_notify=False,
                fetch_job_polling_interval=0.05,
                abort_job_polling_interval=0.5,
                shutdown_graceful_timeout=5,
            )
        )
        while not self._stop.is_set() and not task.done():
            await asyncio.sleep(0.05)
        task.cancel()
        (outcome,) = await asyncio.gather(task, return_exceptions=True)
        if isinstance(outcome, Exception):
            raise outcome

    def __enter__(self) -> "ThreadWorker":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        if self.failure is not None:
            raise self.failure


def eventually(condition: Callable[[], bool], timeout: float = 60.0) -> None:
    """Wait (looking every 50 ms) until `condition()` holds, or fail after `timeout` s."""
    deadline = time.monotonic() + timeout
    pause = threading.Event()
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("the condition did not hold in time")
        pause.wait(0.05)


def finished(run: Run, timeout: float = 60.0) -> Run:
    """The run once it reached a state it stays in (reloaded)."""
    eventually(lambda: Run.objects.get(pk=run.pk).status in TERMINAL, timeout)
    return Run.objects.get(pk=run.pk)


def runs_for_tables(*, case: Case, user: User, packet: Packet, label: str) -> dict[str, Run]:
    """For the route-table tests: every model role routed to one deployment (on a port where
    nothing listens: these tests run no job), a queued motion run (`run`), one the gate
    stopped (`stopped_run`) and one waiting for approval (`waiting_run`), their instructions
    starting with `label`."""
    from apps.cluster.models import Role, RoleRoute
    from tests.cluster.dispatch_fixtures import closed_port_url

    if not RoleRoute.objects.exists():
        backend = backend_make(base_url=closed_port_url(), board="board-tables")
        deployment = deployment_make(backend, model="tables-model")
        for role in Role.values:
            route_make(role, deployment)
    run = start(user=user, case=case, packet=packet, instructions=f"{label} run")
    stopped = start(user=user, case=case, packet=packet, instructions=f"{label} stopped")
    stopped.stages.filter(name="gate").update(status="succeeded", output_json={"answer": "no"})
    stopped.stages.exclude(name="gate").update(status="skipped")
    Run.objects.filter(pk=stopped.pk).update(status=Run.Status.STOPPED_BY_GATE)
    waiting = start(user=user, case=case, packet=packet, instructions=f"{label} waiting")
    waiting.stages.update(status="succeeded")
    Run.objects.filter(pk=waiting.pk).update(status=Run.Status.WAITING_FOR_APPROVAL)
    return {
        "run": run,
        "stopped_run": Run.objects.get(pk=stopped.pk),
        "waiting_run": Run.objects.get(pk=waiting.pk),
    }


def run_ids_for_tables(case: Case, label: str) -> dict[str, int]:
    made = {
        r.instructions: r.pk for r in Run.objects.filter(case=case, instructions__startswith=label)
    }
    return {
        "run": made[f"{label} run"],
        "stopped_run": made[f"{label} stopped"],
        "waiting_run": made[f"{label} waiting"],
    }
