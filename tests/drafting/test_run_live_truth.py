"""The run page stays true (issue 25 req 3): its status sentence is part of the state drawn again
with every change (a finished run never says "queued"), the running stage is marked for the page
to follow, structured output is shown readably, a stage that fell back to another model says so
and why, and a refused run says which is missing: a route, or a healthy backend."""

import json
import re
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import BackendHealth, CallRecord, Role
from apps.drafting.models import Run, Stage
from apps.drafting.templatetags.structured_output import structured
from apps.evidence.models import Packet
from tests.cluster.dispatch_fixtures import backend_make, deployment_make, route_make
from tests.drafting.run_fixtures import frozen_packet, runs_for_tables

pytestmark = pytest.mark.django_db


@pytest.fixture
def packet(lawyer: User, case: Case) -> Packet:
    return frozen_packet(case=case, user=lawyer)


@pytest.fixture
def made(lawyer: User, case: Case, packet: Packet) -> dict[str, Run]:
    return runs_for_tables(case=case, user=lawyer, packet=packet, label="Truth")


def _page(client: Client, run: Run, part: bool = False) -> str:
    response = client.get(f"/cases/{run.case_id}/runs/{run.pk}/" + ("?part=1" if part else ""))
    assert response.status_code == 200
    return str(response.content.decode())


def _line(html: str) -> str:
    found = re.search(r'<p class="run-status-line small" id="run-status-line"[^>]*>(.*?)</p>', html)
    assert found, "no status line"
    return re.sub(r"<[^>]+>", "", found.group(1))


def test_the_status_sentence_follows_the_run_and_the_flash_claims_no_state(
    lawyer_client: Client, case: Case, packet: Packet, made: dict[str, Run]
) -> None:
    response = lawyer_client.post(
        f"/cases/{case.pk}/runs/new/",
        {"kind": "summary", "packet": packet.pk, "instructions": "Summarise."},
        follow=True,
    )
    html = response.content.decode()
    run = Run.objects.get(instructions="Summarise.")
    assert f"Run {run.pk} created." in html
    assert "queued: this page follows it live" not in html
    assert _line(html).startswith("Queued: waiting for a worker to take the summarizer stage.")

    # The stages ran and the run ended: the part the page draws again says so.
    run.stages.update(status=Stage.Status.SUCCEEDED)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.SUCCEEDED, finished_at=timezone.now())
    part = _page(lawyer_client, run, part=True)
    assert _line(part).startswith("Finished: succeeded at ")
    assert "Queued" not in _line(part) and "follows it live" not in _line(part)

    stopped = _page(lawyer_client, made["stopped_run"])
    assert _line(stopped).startswith("Finished: stopped by the gate")
    waiting = _page(lawyer_client, made["waiting_run"])
    assert _line(waiting).startswith("Finished: waiting for a lawyer to approve")


def test_the_running_stage_is_marked_for_the_page_to_follow(
    staff_client: Client, made: dict[str, Run]
) -> None:
    run = made["run"]
    drafter = run.stages.get(name="drafter")
    run.stages.filter(name="gate").update(status=Stage.Status.SUCCEEDED)
    Stage.objects.filter(pk=drafter.pk).update(status=Stage.Status.RUNNING, attempt=2)
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)

    html = _page(staff_client, run, part=True)

    assert re.findall(r'data-stage="(\d+)"[^>]*aria-current="step"', html) == [str(drafter.pk)]
    line = _line(html)
    assert line == "Running: the drafter stage is running (attempt 2). This page follows it live."
    assert f'<a href="#stage-{drafter.pk}">the drafter stage</a>' in html
    assert 'id="run-follow"' in _page(staff_client, run)  # the switch, outside the redrawn part


def test_the_gates_json_is_shown_readably_not_escaped(
    staff_client: Client, made: dict[str, Run]
) -> None:
    run = made["stopped_run"]
    answer = {
        "answer": "insufficient",
        "reasons": ["No signed lease <b>in</b> the packet"],
        "missing_evidence": ["The lease", "Proof of notice"],
        "confident": False,
    }
    run.stages.filter(name="gate").update(output_text=json.dumps(answer), output_json=answer)

    html = _page(staff_client, run)

    gate = run.stages.get(name="gate")
    shown = re.search(rf'data-structured-for="{gate.pk}">(.*?)</div>\s*<pre', html, re.S)
    assert shown, "no structured output"
    assert "<dt>Missing evidence</dt>" in shown.group(1)
    assert "<li>Proof of notice</li>" in shown.group(1)
    assert "<dt>Confident</dt><dd>no</dd>" in shown.group(1)
    assert "&lt;b&gt;in&lt;/b&gt;" in shown.group(1)  # the model's text stays text
    assert "&quot;missing_evidence&quot;" not in shown.group(1)
    assert re.search(rf'<pre class="stage-text" data-live-stage="{gate.pk}"[^>]* hidden>', html)


@pytest.mark.parametrize("text", ["free text", '{"cut": ', "[1, 2", "42", ""])
def test_text_that_is_not_a_json_object_or_list_is_left_as_text(text: str) -> None:
    assert structured(text) == ""


def _call(stage: Stage, label: str, outcome: str, error: str, at: int) -> None:
    CallRecord.objects.create(
        stage=stage,
        deployment_label=label,
        board_label="board",
        role=stage.role,
        outcome=outcome,
        error=error,
        started_at=timezone.now() + timedelta(seconds=at),
    )


def test_a_stage_that_fell_back_to_another_model_says_so_and_why(
    staff_client: Client, made: dict[str, Run]
) -> None:
    run = made["waiting_run"]
    drafter = run.stages.get(name="drafter")
    gate = run.stages.get(name="gate")
    _call(drafter, "big-model on gpu-1", "error", "Connection refused by gpu-1:8080.", 0)
    _call(drafter, "small-model on gpu-2", "ok", "", 1)
    _call(gate, "big-model on gpu-1", "ok", "", 2)  # answered by its first model: no fallback

    html = _page(staff_client, run)

    notes = dict(re.findall(r'data-fallback-for="(\d+)">([^<]*)</p>', html))
    assert notes == {
        str(drafter.pk): "Fell back to small-model on gpu-2: big-model on gpu-1 failed: "
        "Connection refused by gpu-1:8080."
    }


def test_a_stage_answered_after_the_registry_left_its_first_model_out_says_so_and_why(
    staff_client: Client, made: dict[str, Run]
) -> None:
    run = made["waiting_run"]
    drafter = run.stages.get(name="drafter")
    drafter.passed_over = [{"deployment": "big-model on gpu-1", "reason": "its backend is down"}]
    drafter.save(update_fields=["passed_over"])
    _call(drafter, "small-model on gpu-2", "ok", "", 0)  # the only call: no failed one

    html = _page(staff_client, run)

    notes = dict(re.findall(r'data-fallback-for="(\d+)">([^<]*)</p>', html))
    assert notes == {
        str(drafter.pk): "Fell back to small-model on gpu-2: big-model on gpu-1 was left out "
        "of routing: its backend is down"
    }


def test_a_refusal_says_a_route_is_missing_or_which_backend_is_unhealthy(
    lawyer_client: Client, case: Case, packet: Packet
) -> None:
    def refusal() -> str:
        response = lawyer_client.post(
            f"/cases/{case.pk}/runs/new/",
            {"kind": "summary", "packet": packet.pk, "instructions": "Summarise."},
        )
        assert response.status_code == 400
        html = response.content.decode()
        return html[html.index('class="alert alert--error"') :][:1500]

    # No route at all: an admin must add one.
    no_route = refusal()
    assert "No deployment is routed for the Summarizer role: an admin must route one" in no_route
    assert "healthy" not in no_route

    # A route whose backend is failing: it is named with its state, and no admin is needed.
    backend = backend_make(base_url="http://127.0.0.1:9", board="board-down")
    deployment = deployment_make(backend, model="sum-model")
    route_make(Role.SUMMARIZER, deployment)
    BackendHealth.objects.update_or_create(
        backend=backend,
        defaults={"state": BackendHealth.State.DOWN, "message": "connection refused"},
    )
    unhealthy = refusal()
    assert "The Summarizer role is routed, but no backend of its routes is healthy now" in unhealthy
    assert f"{deployment} (failing: connection refused)" in unhealthy
    assert "an admin must route one" not in unhealthy
    assert not Run.objects.exists()
