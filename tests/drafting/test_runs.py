"""Drafting runs end to end: real PostgreSQL, a real Procrastinate worker, fake llama-servers
over HTTP with streaming (tests/drafting/run_fixtures.py)."""

import hashlib
import json

import pytest
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import CallRecord
from apps.drafting import runs
from apps.drafting.models import DraftVersion, Run, RunEvent, Stage
from apps.evidence.models import GeneratedArtifact
from tests.drafting import run_fixtures as rf

pytestmark = pytest.mark.django_db(transaction=True)


def _stages(run: Run) -> list[tuple[str, str]]:
    return list(run.stages.order_by("position").values_list("name", "status"))


def test_a_motion_runs_every_stage_on_its_board_and_waits_for_approval(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running() as site:
        run = rf.start(user=lawyer, case=case, packet=packet)
        # Every stage exists, queued, from the start; only the first has a job.
        assert _stages(run) == [
            (name, "queued")
            for name in (
                "gate", "drafter", "reasoner", "verifier", "adversary", "revision",
                "verifier_again",
            )
        ]  # fmt: skip
        gate = run.stages.get(name="gate")
        board = site.deployments["gate"].backend.board_id
        assert gate.queue == f"board.{board}"
        assert ProcrastinateJob.objects.get(pk=gate.job_id).queue_name == f"board.{board}"
        with rf.ThreadWorker():
            run = rf.finished(run)

    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    assert {status for _, status in _stages(run)} == {"succeeded"}
    # Drafter, reasoner and revision each wrote one version, each a registered model output.
    versions = list(DraftVersion.objects.filter(draft=run.draft).order_by("number"))
    assert [v.written_by for v in versions] == ["model"] * 3
    for version in versions:
        assert GeneratedArtifact.objects.filter(
            sha256=hashlib.sha256(version.text.encode()).hexdigest()
        ).exists()
    drafter = run.stages.get(name="drafter")
    assert drafter.version == versions[0] and drafter.output_text == rf.DRAFT
    # Chain of custody on the stage; the cluster's call record links to it.
    assert drafter.deployment == site.deployments["drafter"]
    assert drafter.board_label.endswith("board-drafter")
    assert drafter.template_name == "drafting/prompts/drafter.txt"
    assert drafter.template_version == "1"
    assert drafter.prompt_sha256 == hashlib.sha256(drafter.prompt_text.encode()).hexdigest()
    assert "3 March 2024" in drafter.prompt_text and "record.pdf" in drafter.prompt_text
    assert drafter.packet_content_hash == packet.content_hash
    assert drafter.sampling == {"seed": 7} and drafter.seed == 7
    assert drafter.completion_tokens > 0 and drafter.prompt_tokens > 0
    assert drafter.duration_ms and drafter.duration_ms > 0
    assert CallRecord.objects.get(pk=drafter.call_record_id).role == "drafter"
    # The gate's structured answer, the verifier's run, the reviewer's anchored findings.
    assert run.stages.get(name="gate").output_json["answer"] == "yes"
    verifier = run.stages.get(name="verifier")
    assert verifier.verification is not None and verifier.verification.version == versions[1]
    finding = run.stages.get(name="adversary").output_json["findings"][0]
    start, end = finding["start"], finding["end"]
    assert versions[1].text[start:end] == "The rent was $1,250.00."
    assert run.stages.get(name="verifier_again").verification.version == versions[2]
    # The events tell the story in order, numbered without gaps.
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))
    streamed = "".join(
        e.payload["text"]
        for e in RunEvent.objects.filter(run=run, kind="stage.tokens").order_by("seq")
        if e.payload["stage_id"] == drafter.pk
    )
    assert streamed == rf.DRAFT
    assert RunEvent.objects.filter(run=run).order_by("-seq").first().payload["status"] == (
        "waiting_for_approval"
    )
