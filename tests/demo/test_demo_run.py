"""The demo end to end: `seed_demo` and `seed_demo_site` as `make run` runs them, the demo
backends of `demo_backend_plan` (the reference site's five, in demo-writer mode) over real HTTP,
real Procrastinate workers, real verifications. A motion's first draft carries the planted
mistakes and the verifier blocks each one; the revision fixes them, and its verification
blocks nothing. A financial extraction reads the transactions from the demo's documents."""

import contextlib
import secrets
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.management import call_command
from pytest_django.fixtures import Settings

from apps.accounts.models import User
from apps.drafting.models import Run
from apps.drafting.services import runs
from apps.evidence.models import Packet
from lexweb_dev import demo, demo_evidence
from lexweb_dev.fakebackend import FakeBackend
from tests.drafting.run_fixtures import ThreadWorker, eventually, finished

pytestmark = pytest.mark.django_db(transaction=True)
TEST_SPEED = 5000.0  # tokens/s: the demo streams at DEMO_SPEEDS; a test need not wait


def _free_port_run(count: int) -> int:
    """The first of `count` consecutive free ports, below the ephemeral range."""
    for base in range(20_000 + secrets.randbelow(10_000), 32_000, count):
        try:
            with contextlib.ExitStack() as probes:
                for port in range(base, base + count):
                    probe = probes.enter_context(socket.socket())
                    probe.bind(("127.0.0.1", port))
            return base
        except OSError:
            continue
    raise AssertionError("no run of free ports")


@contextlib.contextmanager
def demo_site(settings: Settings) -> Iterator[dict[str, FakeBackend]]:
    """The demo cluster loaded as `make run` loads it, its backends served as
    `manage.py demo_backends` serves them (faster)."""
    base = _free_port_run(5)
    settings.LEXWEB_DEMO_BACKEND_PORT = base
    call_command("seed_demo_site")
    plan = demo.demo_backend_plan(
        text=demo.REFERENCE_SITE.read_text(encoding="utf-8"), port_base=base
    )
    assert len(plan) == 5 and all(fake.demo_writer for _, _, fake in plan)
    assert {fake.tokens_per_second for _, _, fake in plan} <= {
        *demo.DEMO_SPEEDS.values(),
        demo.DEMO_DEFAULT_SPEED,
    }
    with contextlib.ExitStack() as stack:
        fakes = {}
        for name, port, fake_settings in plan:
            fake_settings.tokens_per_second = TEST_SPEED
            fakes[name] = stack.enter_context(FakeBackend.in_thread(fake_settings, port=port))
        yield fakes


def demo_packet(admin_user: User) -> Packet:
    call_command("seed_demo")
    with ThreadWorker():
        eventually(lambda: Packet.objects.filter(title=demo_evidence.DEMO_PACKET).exists(), 90)
    return Packet.objects.get(title=demo_evidence.DEMO_PACKET)


def start(packet: Packet, kind: str, instructions: str) -> Run:
    lawyer = User.objects.get(email=demo.DEMO_LAWYER)
    request = runs.RunRequest(kind=kind, packet_id=packet.pk, instructions=instructions)
    run, _ = runs.run_start(user=lawyer, case_id=packet.case_id, request=request)
    return run


def output(run: Run, stage: str) -> dict[str, Any]:
    data = run.stages.get(name=stage).output_json
    assert isinstance(data, dict), stage
    return data


def blocking(run: Run, stage: str) -> list[tuple[str, str, str]]:
    data = output(run, stage)
    return sorted(
        (f["kind"], f["status"], f["text"])
        for f in data["findings"]
        if f["status"] in ("unsupported", "contradicted")
    )


@pytest.mark.parametrize("kind", ["motion", "affidavit"])
@pytest.mark.slow
def test_a_demo_draft_has_its_planted_mistakes_blocked_by_the_verifier_and_fixed_by_the_revision(
    admin_user: User, settings: Settings, kind: str
) -> None:
    packet = demo_packet(admin_user)
    with demo_site(settings) as fakes:
        run = start(packet, kind, f"Draft a {kind} on the unpaid balance of invoice W-1187.")
        with ThreadWorker():
            run = finished(run, timeout=120)

    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    assert output(run, "gate")["answer"] == "yes"
    first = run.stages.get(name="drafter").output_text
    assert first.startswith(f"# {kind.capitalize()}\n")
    # The verifier (of the reasoner's version, for a motion) blocks the three planted mistakes,
    # and only them.
    assert blocking(run, "verifier") == [
        ("date", "contradicted", "13 January 2025"),
        ("quote", "unsupported", "The Supplier may deliver 2,000 industrial valves of model "
         "WV-40 to the Buyer's warehouse at 12 Harbour Road, Springfield"),
        ("record_cite", "unsupported", "ACME000043"),
    ]  # fmt: skip
    # The reviewer's findings are anchored to the draft's own words.
    reviewed = output(run, "adversary")["findings"]
    assert reviewed and all(f["start"] is not None for f in reviewed)
    # The revision put each back in the packet's words; its verification blocks nothing.
    revised = run.stages.get(name="revision").output_text
    assert "13 January 2025" not in revised and "ACME000043" not in revised
    assert "made on 6 January 2025" in revised
    assert "The Supplier shall deliver 2,000 industrial valves" in revised
    assert blocking(run, "verifier_again") == []
    assert output(run, "verifier_again")["claims"] > 10
    # The drafter cites as its prompt asks (the packet's Bates numbers): nothing it cites is
    # left for a person to review.
    for stage in ("verifier", "verifier_again"):
        left = [f for f in output(run, stage)["findings"] if f["status"] == "needs_review"]
        assert left == [], (stage, left)
    # Every model stage was answered by the demo backend its role routes to first.
    models = {
        "gate": "qwen3-4b",
        "drafter": "qwen3.6-35b-a3b",
        "reasoner": "qwen3.5-122b-a10b",  # motions and high-stakes drafts only
        "adversary": "gemma-4-26b-a4b",
        "revision": "qwen3.6-35b-a3b",
    }
    if kind == "affidavit":
        del models["reasoner"]
    assert {s.name: s.model_name for s in run.stages.exclude(model_name="")} == models
    assert fakes["llama-board-a"].stats.streams_finished >= 2


@pytest.mark.slow
def test_a_demo_financial_extraction_reads_the_transactions_of_the_documents(
    admin_user: User, settings: Settings
) -> None:
    packet = demo_packet(admin_user)
    with demo_site(settings):
        run = start(packet, "financial", "List every payment and sum invoiced.")
        with ThreadWorker():
            run = finished(run, timeout=120)

    assert run.status == Run.Status.SUCCEEDED, run.error
    extractor = run.stages.get(name="extractor")
    assert extractor.model_name == "gemma4:26b"  # the Ollama backend, schema sent as `format`
    rows = output(run, "validation")["transactions"]
    assert [(r["date"], r["amount"], r["counterparty"], r["bates"]) for r in rows] == [
        ("2025-05-02", "48000.00", "Acme Corp.", "ACME000003"),
        ("2025-05-02", "48000.00", "Widget Ltd.", "ACME000005"),
        ("2025-04-10", "28800.00", "Widget Ltd.", "ACME000006"),
        ("2025-04-22", "1150.00", "Harbour Freight Co.", "ACME000006"),
    ]
    assert all(r["problems"] == [] for r in rows)
    # "Acme Corp. will pay $28,800.00" (ACME000004) is a promise with no date: not a row.
    assert blocking(run, "verifier") == []


@pytest.mark.slow
def test_a_demo_summary_cites_the_packet(admin_user: User, settings: Settings) -> None:
    packet = demo_packet(admin_user)
    with demo_site(settings):
        run = start(packet, "summary", "Summarise the delivery dispute.")
        with ThreadWorker():
            run = finished(run, timeout=120)

    assert run.status == Run.Status.SUCCEEDED, run.error
    text = run.stages.get(name="summarizer").output_text
    assert text.startswith("# Summary of the evidence\n")
    assert "[ACME000001]" in text and "[ACME000006]" in text
