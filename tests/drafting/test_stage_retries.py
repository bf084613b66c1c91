"""Issue 29, requirement 7: a stage whose backend dropped mid-stream is tried again after a wait
(LEXWEB_STAGE_RETRY_SECONDS, one wait per retry) on the same deployment once it is back, and
fails its run after the last attempt with the true reason."""

import pytest
from django.test import Client
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import BackendHealth, CallRecord, Role, RoleRoute
from apps.drafting.models import DraftVersion, Run, RunEvent, Stage
from apps.drafting.pipeline import execute
from apps.drafting.stage_fallbacks import stage_fallbacks
from tests.cluster.dispatch_fixtures import backend_make, closed_port_url, deployment_make
from tests.drafting import run_fixtures as rf

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.slow
def test_a_stage_whose_only_server_died_mid_stream_runs_again_once_it_is_back(
    lawyer: User, case: Case, settings: SettingsWrapper
) -> None:
    # An attempt at once would find the server still away (as would one after 1 s); the third
    # comes 5 s after the drop, when the server has been back for 2 s.
    settings.LEXWEB_STAGE_RETRY_SECONDS = [1, 4]
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running() as site:
        fake = site.fakes["drafter"]
        fake.settings.disconnect_after_tokens = 3
        fake.settings.fault_streams = 1
        fake.settings.away_after_fault_seconds = 3.0
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    drafter = run.stages.get(name="drafter")
    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    assert drafter.attempt == 3 and drafter.deployment == site.deployments["drafter"]
    assert drafter.version is not None and drafter.version.text == rf.DRAFT
    outcomes = list(
        CallRecord.objects.filter(stage=drafter).order_by("pk").values_list("outcome", flat=True)
    )
    assert outcomes == [CallRecord.Outcome.ERROR, CallRecord.Outcome.ERROR, CallRecord.Outcome.OK]
    retries = RunEvent.objects.filter(run=run, kind="stage.retrying").order_by("seq")
    assert [(e.payload["retry_in_seconds"], e.payload["attempts"]) for e in retries] == [
        (1, 3),
        (4, 3),
    ]
    assert retries[0].payload["error"].endswith("Retrying (attempt 2 of 3) in 1 s.")
    # The last attempt's wait is what the stage said before it succeeded.
    assert drafter.error.startswith("Attempt 2 failed:")
    assert drafter.error.endswith("Retrying (attempt 3 of 3) in 4 s.")
    assert "127.0.0.1" not in drafter.error
    row = BackendHealth.objects.get(pk=site.deployments["drafter"].backend_id)
    assert (row.state, row.consecutive_failures) == (BackendHealth.State.OK, 0)


@pytest.mark.slow
def test_a_server_that_never_comes_back_fails_the_run_after_the_last_attempt(
    lawyer: User, case: Case, settings: SettingsWrapper
) -> None:
    settings.LEXWEB_STAGE_RETRY_SECONDS = [0, 0, 0]
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running() as site:
        fake = site.fakes["drafter"]
        fake.settings.disconnect_after_tokens = 3
        fake.settings.away_after_fault_seconds = 3600.0
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    drafter = run.stages.get(name="drafter")
    assert run.status == Run.Status.FAILED and drafter.status == Stage.Status.FAILED
    assert drafter.attempt == execute.stage_max_attempts() == 4
    # Three failed calls in a row took the backend out of routing: the fourth attempt was
    # still queued (on the board it ran on) and found no deployment.
    row = BackendHealth.objects.get(pk=site.deployments["drafter"].backend_id)
    assert row.state == BackendHealth.State.DOWN
    assert CallRecord.objects.filter(stage=drafter).count() == 3
    assert drafter.queue == f"board.{site.deployments['drafter'].backend.board_id}"
    # The last attempt's reason, and the first's: the drop that started it all, naming the
    # deployment and not the server's address.
    retries = list(RunEvent.objects.filter(run=run, kind="stage.retrying").order_by("seq"))
    assert [e.payload["attempt"] for e in retries] == [1, 2, 3]
    first = retries[0].payload["reason"]
    assert retries[0].payload["error"].startswith(f"Attempt 1 failed: {first} Retrying")
    assert f"(deployment {site.deployments['drafter']})" in first and "127.0.0.1" not in first
    assert "No deployment" not in first
    assert drafter.error == (
        "Attempt 4 of 4 failed: No deployment for the Drafter role is available now. None is "
        f"left; attempt 1 failed first: {first}"
    )
    assert run.error == f"Drafter: {drafter.error}"
    assert not DraftVersion.objects.exists()


@pytest.mark.slow
def test_a_prompt_too_long_is_not_tried_again(
    lawyer: User, case: Case, settings: SettingsWrapper
) -> None:
    settings.LEXWEB_STAGE_RETRY_SECONDS = [0, 0, 0]
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running() as site:
        site.fakes["gate"].settings.n_ctx_per_slot = 64
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    gate = run.stages.get(name="gate")
    assert run.status == Run.Status.FAILED and gate.attempt == 1, gate.error
    assert not RunEvent.objects.filter(run=run, kind="stage.retrying").exists()


@pytest.mark.slow
def test_a_stage_whose_first_model_was_out_of_routing_records_it_and_says_it_fell_back(
    lawyer: User, case: Case
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running() as site:
        # Routed before the site's drafter, on a backend the registry marks down: never called.
        down = deployment_make(backend_make(base_url=closed_port_url(), board="board-down"))
        RoleRoute.objects.create(role=Role.DRAFTER, position=0, deployment=down)
        BackendHealth.objects.create(backend_id=down.backend_id, state=BackendHealth.State.DOWN)
        run = rf.start(user=lawyer, case=case, packet=packet)
        with rf.ThreadWorker():
            run = rf.finished(run)

    drafter = run.stages.get(name="drafter")
    assert run.status == Run.Status.WAITING_FOR_APPROVAL, run.error
    assert drafter.deployment == site.deployments["drafter"]
    assert drafter.passed_over == [{"deployment": str(down), "reason": "its backend is down"}]
    assert not CallRecord.objects.filter(deployment_label=str(down)).exists()
    fallback = stage_fallbacks([drafter])[drafter.pk]
    assert drafter.call_record is not None
    assert fallback.sentence == (
        f"Fell back to {drafter.call_record.deployment_label}: {down} was left out of routing: "
        "its backend is down"
    )
    gate = run.stages.get(name="gate")
    assert gate.passed_over == [] and gate.pk not in stage_fallbacks([gate])
    # And in the API's stage.
    client = Client()
    client.force_login(lawyer)
    answer = client.get(f"/api/v1/cases/{case.pk}/runs/{run.pk}").json()
    by_name = {stage["name"]: stage for stage in answer["stages"]}
    assert by_name["drafter"]["passed_over"] == [
        {"deployment": str(down), "reason": "its backend is down"}
    ]
    assert by_name["gate"]["passed_over"] == []
