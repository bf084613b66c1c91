"""Drafting runs end to end: real PostgreSQL, a real Procrastinate worker, fake llama-servers
over HTTP with streaming (tests/drafting/run_fixtures.py)."""

import hashlib
import json
import os
import subprocess
import sys

import pytest
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import CallRecord, RoleRoute
from apps.drafting.models import DraftVersion, Run, RunEvent, Stage
from apps.drafting.services import runs
from apps.evidence.models import GeneratedArtifact
from apps.operations.services import recovery
from lexweb_dev.fakebackend import FakeBackend, FakeSettings
from tests.cluster.dispatch_fixtures import backend_make, deployment_make
from tests.conftest import BASE_DIR, database_url_for_tests
from tests.drafting import run_fixtures as rf

pytestmark = pytest.mark.django_db(transaction=True)


def _stages(run: Run) -> list[tuple[str, str]]:
    return list(run.stages.order_by("position").values_list("name", "status"))


@pytest.mark.slow
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


@pytest.mark.slow
def test_a_gate_that_says_no_stops_the_run_and_a_lawyer_may_go_on_with_a_reason(
    lawyer: User, staff: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running({**rf.REPLIES, "gate": rf.GATE_NO}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="affidavit")
        with rf.ThreadWorker():
            run = rf.finished(run)
            assert run.status == Run.Status.STOPPED_BY_GATE
            assert "Nothing shows a breach." in run.error
            assert _stages(run)[1:] == [(name, "skipped") for name, _ in _stages(run)[1:]]
            assert run.draft is None
            with pytest.raises(runs.PermissionDenied):
                runs.run_gate_override(
                    user=staff, case_id=case.pk, run_id=run.pk, reason="Staff may not do this."
                )
            with pytest.raises(runs.DomainError, match="reason"):
                runs.run_gate_override(user=lawyer, case_id=case.pk, run_id=run.pk, reason="ok")
            runs.run_gate_override(
                user=lawyer,
                case_id=case.pk,
                run_id=run.pk,
                reason="The notice is in the client's file; grounds exist.",
            )
            run = rf.finished(run)

    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    assert run.gate_override_by == lawyer
    assert run.gate_override_reason == "The notice is in the client's file; grounds exist."
    # An affidavit that is not high-stakes has no heavy reasoner.
    assert "reasoner" not in [name for name, _ in _stages(run)]
    assert RunEvent.objects.filter(run=run, kind="run.gate_override").count() == 1


@pytest.mark.slow
def test_a_gate_answer_that_is_not_json_fails_the_run_with_a_clear_error(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running({**rf.REPLIES, "gate": "Yes, there are grounds."}):
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    gate = run.stages.get(name="gate")
    assert run.status == Run.Status.FAILED and gate.status == Stage.Status.FAILED
    assert "did not answer valid JSON: invalid JSON at character 0" in gate.error
    assert gate.prompt_sha256  # what was asked is kept, and what came back, and from whom
    assert gate.output_text == "Yes, there are grounds."
    assert (gate.finish_reason, gate.completion_tokens) == ("stop", 6)  # Yes , there are grounds .
    assert gate.prompt_tokens > 0 and gate.model_name == "gate-model"
    assert gate.deployment is not None and gate.deployment_label
    assert gate.call_record is not None and gate.call_record.finish_reason == "stop"
    assert [status for _, status in _stages(run)[1:]] == ["skipped"] * 6
    assert not DraftVersion.objects.exists()


@pytest.mark.slow
def test_a_gate_answer_cut_at_the_limit_says_so_and_keeps_the_reply(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    endless = '{"answer": "yes", "reasons": ["' + "grounds " * 600
    with rf.site_running({**rf.REPLIES, "gate": endless}):
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    gate = run.stages.get(name="gate")
    assert run.status == Run.Status.FAILED and gate.status == Stage.Status.FAILED
    assert "reply was cut at the limit (512 tokens)" in gate.error
    assert "cut at the limit (512 tokens)" in run.error
    assert (gate.finish_reason, gate.completion_tokens) == ("length", 512)
    assert gate.output_text.startswith('{"answer": "yes", "reasons": ["grounds grounds')
    assert gate.model_name == "gate-model" and gate.deployment is not None
    record = CallRecord.objects.get(stage=gate)
    assert (record.finish_reason, record.completion_tokens) == ("length", 512)
    assert gate.call_record == record


@pytest.mark.slow
def test_a_backend_that_dies_mid_stream_is_not_stitched_and_the_stage_runs_again_whole(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    spare_settings = FakeSettings(kind="llama_cpp", tokens_per_second=3000, reply=rf.REVISED)
    with rf.site_running() as site, FakeBackend.in_thread(spare_settings) as spare_fake:
        spare = deployment_make(backend_make(base_url=spare_fake.base_url, board="board-spare"))
        RoleRoute.objects.create(role="drafter", position=2, deployment=spare)
        site.fakes["drafter"].settings.disconnect_after_tokens = 3
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    drafter = run.stages.get(name="drafter")
    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    # Attempt 1 streamed 3 tokens and died: no fallback then (a reply is never stitched from
    # two models); the stage failed and ran again whole, on the spare deployment.
    assert drafter.attempt == 2 and drafter.deployment == spare
    assert drafter.output_text == rf.REVISED == drafter.version.text
    assert drafter.error.startswith("Attempt 1 failed:")
    tokens = RunEvent.objects.filter(run=run, kind="stage.tokens", payload__stage_id=drafter.pk)
    assert {e.payload["attempt"] for e in tokens} == {1, 2}
    assert RunEvent.objects.filter(run=run, kind="stage.retrying").count() == 1
    assert site.fakes["drafter"].cancelled + site.fakes["drafter"].stats.streams_finished <= 1


@pytest.mark.slow
def test_a_backend_that_dies_mid_stream_with_no_other_deployment_fails_the_run(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running() as site:
        site.fakes["drafter"].settings.disconnect_after_tokens = 3
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    drafter = run.stages.get(name="drafter")
    assert run.status == Run.Status.FAILED and drafter.status == Stage.Status.FAILED
    # One dropped stream leaves the backend routable (issue 29): the stage ran again there,
    # and failed again.
    assert "cut the stream" in drafter.error and drafter.attempt == 2
    assert not DraftVersion.objects.exists()


@pytest.mark.slow
def test_cancelling_a_running_stage_closes_the_backend_stream(lawyer: User, case: Case) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    long_reply = " ".join(f"word{n}" for n in range(400))
    with rf.site_running({**rf.REPLIES, "drafter": long_reply}) as site:
        drafter_fake = site.fakes["drafter"]
        drafter_fake.settings.tokens_per_second = 40
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            drafter_fake.wait_until_sync(lambda: drafter_fake.tokens_sent >= 5, timeout=60)
            runs.run_cancel(user=lawyer, case_id=case.pk, run_id=run.pk)
            drafter_fake.wait_until_sync(lambda: drafter_fake.cancelled == 1, timeout=10)
            rf.eventually(
                lambda: CallRecord.objects.filter(role="drafter", outcome="cancelled").exists(), 10
            )
        sent = drafter_fake.tokens_sent

    run.refresh_from_db()
    assert run.status == Run.Status.CANCELLED and run.cancelled_by == lawyer
    assert sent < 400  # the stream stopped long before the reply's end
    assert {status for name, status in _stages(run) if name != "gate"} == {"cancelled"}
    assert not DraftVersion.objects.filter(draft__runs=run).exists()


@pytest.mark.slow
def test_cancel_after_completion_is_a_409_and_changes_nothing(
    lawyer: User, lawyer_api: Client, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
        with rf.ThreadWorker():
            run = rf.finished(run)
    assert run.status == Run.Status.SUCCEEDED, run.error
    assert run.draft.versions.get().text.startswith("The record is a lease")
    events = RunEvent.objects.filter(run=run).count()

    response = lawyer_api.post(f"/api/v1/cases/{case.pk}/runs/{run.pk}/cancel")

    assert response.status_code == 409
    assert response.json()["code"] == "run_finished"
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED
    assert RunEvent.objects.filter(run=run).count() == events


@pytest.mark.slow
def test_a_run_whose_creator_left_the_case_stops_with_that_reason(
    lawyer: User, staff: User, case: Case
) -> None:
    from apps.cases import services as case_services

    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running():
        run = rf.start(user=staff, case=case, packet=packet)
        case_services.member_remove(actor=lawyer, case=case, user_id=staff.pk)
        with rf.ThreadWorker():
            run = rf.finished(run)

    assert run.status == Run.Status.FAILED
    assert "no longer a member of this case" in run.error
    assert run.stages.get(name="gate").call_record is None  # no model was asked


@pytest.mark.product  # a real worker process, killed
def test_a_worker_killed_mid_stage_is_recovered_and_the_stage_runs_again_without_duplicates(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    long_reply = " ".join(f"word{n}" for n in range(300))
    with rf.site_running({**rf.REPLIES, "drafter": long_reply}) as site:
        drafter_fake = site.fakes["drafter"]
        drafter_fake.settings.tokens_per_second = 30
        run = rf.start(user=lawyer, case=case, packet=packet)
        queues = [f"board.{d.backend.board_id}" for d in site.deployments.values()]
        worker = subprocess.Popen(
            [sys.executable, "manage.py", "worker", "--queues", ",".join([*queues, "cluster"])],
            cwd=BASE_DIR,
            env={
                **os.environ,
                "DATABASE_URL": database_url_for_tests(),
                "LEXWEB_LOG_LEVEL": "WARNING",
                "LEXWEB_CLUSTER_HEALTH_CRON": "",
                "LEXWEB_JOB_RECOVERY_CRON": "",
                "LEXWEB_SWEEP_CRON": "",
            },
        )
        try:
            drafter_fake.wait_until_sync(lambda: drafter_fake.tokens_sent >= 5, timeout=90)
        finally:
            worker.kill()
            worker.wait()
        drafter = run.stages.get(name="drafter")
        assert (drafter.status, drafter.attempt) == (Stage.Status.RUNNING, 1)
        assert ProcrastinateJob.objects.get(pk=drafter.job_id).status == "doing"

        drafter_fake.settings.tokens_per_second = 5000
        outcome = recovery.jobs_recover_stalled(stalled_seconds=0)
        assert drafter.job_id in outcome.retried
        with rf.ThreadWorker():
            run = rf.finished(run)

    drafter.refresh_from_db()
    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    assert drafter.attempt == 2 and drafter.version.text == long_reply
    # Drafter, reasoner, revision: three versions, none twice.
    assert run.draft.versions.count() == 3
    assert [v.number for v in run.draft.versions.order_by("number")] == [1, 2, 3]


EXTRACTED = {
    "date": "2024-03-03",
    "amount": "1250.00",
    "counterparty": "Widget LLC",
    "description": "Monthly rent",
    "bates": "“record.pdf” p. 1",
}


@pytest.mark.slow
def test_a_financial_extraction_is_validated_written_as_a_cited_table_and_verified(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    bad = {**EXTRACTED, "date": "2024-02-30", "bates": "ACME999999"}
    reply = json.dumps({"transactions": [EXTRACTED, bad]})
    with rf.site_running({"extractor": reply}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="financial")
        with rf.ThreadWorker():
            run = rf.finished(run)

    assert run.status == Run.Status.SUCCEEDED, run.error
    validation = run.stages.get(name="validation")
    rows = validation.output_json["transactions"]
    assert rows[0]["problems"] == []
    assert rows[1]["problems"] == [
        "the date is not a date (YYYY-MM-DD)",
        "the Bates number is not in the packet",
    ]
    table = validation.version.text
    assert "| 2024-03-03 | 1250.00 | Widget LLC | Monthly rent | [“record.pdf” p. 1] |" in table
    assert run.stages.get(name="verifier").verification.version == validation.version


@pytest.mark.slow
def test_an_extraction_that_breaks_its_schema_fails_the_run(lawyer: User, case: Case) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    broken = json.dumps({"transactions": [{"date": "2024-03-03", "amount": 1250}]})
    with rf.site_running({"extractor": broken}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="financial")
        with rf.ThreadWorker():
            run = rf.finished(run)

    extractor = run.stages.get(name="extractor")
    assert run.status == Run.Status.FAILED and extractor.status == Stage.Status.FAILED
    assert "breaks its schema at transaction 1" in extractor.error
    assert not DraftVersion.objects.exists()
