"""The runs API: starting (validation, idempotency, access), listing, detail, events, cancel.
No job runs here (tests/drafting/test_runs.py runs them); every model role is routed to one
deployment on a port where nothing listens."""

from typing import Any

import pytest
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.models import Case
from apps.cluster.models import Role, RoleRoute
from apps.drafting.models import Run, RunEvent, Stage
from apps.evidence.models import Packet
from tests.cluster.dispatch_fixtures import backend_make, closed_port_url, deployment_make
from tests.drafting import run_fixtures as rf
from tests.drafting.makers import packet_of, read_pdf

pytestmark = pytest.mark.django_db


@pytest.fixture
def routed(db: None) -> None:
    deployment = deployment_make(backend_make(base_url=closed_port_url(), board="board-api"))
    for position, role in enumerate(Role.values, start=1):
        RoleRoute.objects.create(role=role, position=position, deployment=deployment)


@pytest.fixture
def packet(lawyer: User, case: Case) -> Packet:
    return rf.frozen_packet(case=case, user=lawyer)


def _url(case: Case, tail: str = "") -> str:
    return f"/api/v1/cases/{case.pk}/runs{tail}"


def _start(client: Client, case: Case, packet: Packet, key: str = "", **changes: Any) -> Any:
    body = {"kind": "motion", "packet_id": packet.pk, "instructions": "Move to dismiss."}
    headers = {"Idempotency-Key": key} if key else {}
    return client.post(
        _url(case), {**body, **changes}, content_type="application/json", headers=headers
    )


def test_staff_starts_a_motion_and_every_stage_is_queued_with_one_job(
    staff_api: Client, case: Case, packet: Packet, routed: None
) -> None:
    response = _start(staff_api, case, packet)

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "queued" and body["kind"] == "motion"
    assert [s["name"] for s in body["stages"]] == [
        "gate", "drafter", "reasoner", "verifier", "adversary", "revision", "verifier_again",
    ]  # fmt: skip
    assert [s["status"] for s in body["stages"]] == ["queued"] * 7
    stage_ids = [{"stage_id": s["id"]} for s in body["stages"]]
    (job,) = [
        j
        for j in ProcrastinateJob.objects.filter(task_name="drafting.run_stage")
        if j.args in stage_ids
    ]
    assert job.args == stage_ids[0] and job.id == body["stages"][0]["job_id"]
    assert job.queue_name == body["stages"][0]["queue"]
    assert body["last_event"] == 1


def test_a_summary_is_the_summarizer_only_and_high_stakes_adds_the_reasoner(
    lawyer_api: Client, case: Case, packet: Packet, routed: None
) -> None:
    summary = _start(lawyer_api, case, packet, kind="summary").json()
    affidavit = _start(lawyer_api, case, packet, kind="affidavit").json()
    heavy = _start(lawyer_api, case, packet, kind="affidavit", high_stakes=True).json()
    financial = _start(lawyer_api, case, packet, kind="financial").json()

    assert [s["name"] for s in summary["stages"]] == ["summarizer"]
    assert "reasoner" not in [s["name"] for s in affidavit["stages"]]
    assert "reasoner" in [s["name"] for s in heavy["stages"]]
    assert [s["name"] for s in financial["stages"]] == ["extractor", "validation", "verifier"]


def test_the_same_idempotency_key_answers_the_same_run(
    lawyer_api: Client, case: Case, packet: Packet, routed: None
) -> None:
    first = _start(lawyer_api, case, packet, key="agent-42")
    again = _start(lawyer_api, case, packet, key="agent-42")
    other = _start(lawyer_api, case, packet, key="agent-42", instructions="Something else.")

    # The API-wide Idempotency-Key (apps/api/idempotency.py) answers the first response again.
    assert (first.status_code, again.status_code) == (201, 201)
    assert again.headers["Idempotent-Replayed"] == "true" and "Idempotent-Replayed" not in first
    assert first.json() == again.json()
    assert other.status_code == 409 and other.json()["code"] == "idempotency_key_reused"
    assert Run.objects.count() == 1
    assert Stage.objects.exclude(job_id=None).count() == 1


def test_a_second_token_of_the_same_person_with_the_same_key_gets_the_same_run(
    lawyer: User, lawyer_api: Client, case: Case, packet: Packet, routed: None
) -> None:
    # Keys of the API-wide mechanism are per token; run creation also keeps its own per-person
    # key (Run.idempotency_key), so another token of the same lawyer starts no second run.
    first = _start(lawyer_api, case, packet, key="agent-43")
    second = account_services.token_create(user=lawyer, name="second agent").secret
    again = _start(
        Client(headers={"authorization": f"Bearer {second}"}), case, packet, key="agent-43"
    )

    assert (first.status_code, again.status_code) == (201, 200)
    assert "Idempotent-Replayed" not in again and first.json()["id"] == again.json()["id"]
    assert Run.objects.count() == 1


@pytest.mark.parametrize(
    ("instructions", "message"),
    [
        ("", "instructions are empty"),
        ("   \n\t ", "instructions are empty"),
        ("x" * 20_001, "the limit is 20,000"),
        ("Draft\x07 it", "control character"),
    ],
)
def test_empty_or_enormous_instructions_are_refused_and_nothing_is_stored(
    lawyer_api: Client,
    case: Case,
    packet: Packet,
    routed: None,
    instructions: str,
    message: str,
) -> None:
    response = _start(lawyer_api, case, packet, instructions=instructions)

    assert response.status_code == 400, response.content
    assert message in response.json()["detail"]
    assert not Run.objects.exists() and not Stage.objects.exists()


def test_a_packet_not_frozen_or_of_another_case_is_refused(
    lawyer: User, lawyer_api: Client, case: Case, other_case: Case, routed: None
) -> None:
    document = read_pdf(case=case, user=lawyer, lines=rf.RECORD_LINES)
    editable = packet_of(case=case, user=lawyer, documents=[document], freeze=False)
    foreign = Packet.objects.create(
        case=other_case,
        title="Theirs",
        status=Packet.Status.FROZEN,
        content_hash="0" * 64,
        created_by=other_case.created_by,
    )

    not_frozen = _start(lawyer_api, case, editable)
    not_ours = _start(lawyer_api, case, foreign)

    assert not_frozen.status_code == 400 and "is not frozen" in not_frozen.json()["detail"]
    assert not_ours.status_code == 404
    assert not Run.objects.exists()


def test_a_role_with_no_deployment_is_refused_before_anything_is_queued(
    lawyer_api: Client, case: Case, packet: Packet
) -> None:
    response = _start(lawyer_api, case, packet)

    assert response.status_code == 400
    assert response.json()["detail"].startswith(
        "No deployment is routed for the Gate (are there grounds?) role: an admin must route one"
    )
    assert not Run.objects.exists() and not Stage.objects.exists()


def test_bad_kinds_and_unknown_fields_are_422(
    lawyer_api: Client, case: Case, packet: Packet, routed: None
) -> None:
    assert _start(lawyer_api, case, packet, kind="novel").status_code == 422
    assert _start(lawyer_api, case, packet, temperature=2).status_code == 422
    assert not Run.objects.exists()


def test_non_member_gets_404_everywhere_and_nothing_changes(
    lawyer: User, outsider_api: Client, case: Case, packet: Packet, routed: None
) -> None:
    run = rf.start(user=lawyer, case=case, packet=packet)
    events = RunEvent.objects.count()

    answers = [
        _start(outsider_api, case, packet).status_code,
        outsider_api.get(_url(case)).status_code,
        outsider_api.get(_url(case, f"/{run.pk}")).status_code,
        outsider_api.get(_url(case, f"/{run.pk}/events")).status_code,
        outsider_api.post(_url(case, f"/{run.pk}/cancel")).status_code,
    ]

    assert answers == [404] * 5
    assert Run.objects.get().status == Run.Status.QUEUED
    assert RunEvent.objects.count() == events


def test_events_after_n_give_the_rest_in_order(
    lawyer: User, lawyer_api: Client, case: Case, packet: Packet, routed: None
) -> None:
    run = rf.start(user=lawyer, case=case, packet=packet)
    rf.runs.run_cancel(user=lawyer, case_id=case.pk, run_id=run.pk)
    gate = run.stages.get(name="gate")
    # Its queued job was taken out of the queue.
    assert ProcrastinateJob.objects.get(pk=gate.job_id).status == "cancelled"
    listing = lawyer_api.get(_url(case, f"/{run.pk}/events")).json()
    every = listing["items"]

    rest = lawyer_api.get(_url(case, f"/{run.pk}/events"), {"after": 2}).json()
    page = lawyer_api.get(_url(case, f"/{run.pk}/events"), {"after": 0, "limit": 2}).json()

    assert [e["seq"] for e in every] == list(range(1, len(every) + 1)) and len(every) > 3
    assert listing["count"] == len(every) and listing["next"] is None
    assert rest["items"] == every[2:] and rest["count"] == len(every) - 2
    assert page["items"] == every[:2] and page["count"] == len(every)
    # The next page while more are stored: following it reads the rest.
    assert page["next"] == f"/api/v1/cases/{case.pk}/runs/{run.pk}/events?after=2&limit=2"
    assert lawyer_api.get(page["next"]).json()["items"] == every[2:4]
    assert every[-1]["payload"]["status"] == "cancelled"
    assert lawyer_api.get(_url(case, f"/{run.pk}/events"), {"after": -1}).status_code == 422


def test_list_and_detail_show_the_stages_within_a_query_ceiling(
    lawyer: User,
    lawyer_api: Client,
    case: Case,
    packet: Packet,
    routed: None,
    django_assert_max_num_queries: Any,
) -> None:
    for _ in range(3):
        run = rf.start(user=lawyer, case=case, packet=packet)

    with django_assert_max_num_queries(12):
        listing = lawyer_api.get(_url(case)).json()
    detail = lawyer_api.get(_url(case, f"/{run.pk}")).json()

    assert listing["count"] == 3 and listing["items"][0]["id"] == run.pk
    assert detail["stages"][0]["template_name"] == "" and detail["stages"][0]["attempt"] == 0
    assert Stage.objects.filter(run=run).count() == len(detail["stages"]) == 7


def test_gate_override_is_a_lawyers_act_on_a_stopped_run_only(
    lawyer: User, lawyer_api: Client, staff_api: Client, case: Case, packet: Packet, routed: None
) -> None:
    made = rf.runs_for_tables(case=case, user=lawyer, packet=packet, label="Override")
    reason = {"reason": "The notice is in the client's file."}
    url = _url(case, f"/{made['stopped_run'].pk}/gate-override")

    by_staff = staff_api.post(url, reason, content_type="application/json")
    too_short = lawyer_api.post(url, {"reason": "ok"}, content_type="application/json")
    queued = lawyer_api.post(
        _url(case, f"/{made['run'].pk}/gate-override"), reason, content_type="application/json"
    )
    done = lawyer_api.post(url, reason, content_type="application/json")

    assert (by_staff.status_code, too_short.status_code, queued.status_code) == (403, 400, 409)
    assert done.status_code == 200, done.content
    body = done.json()
    assert body["status"] == "running" and body["finished_at"] is None
    assert body["gate_override_reason"] == "The notice is in the client's file."
    assert [s["status"] for s in body["stages"]][:2] == ["succeeded", "queued"]
    assert body["stages"][1]["job_id"] is not None and body["stages"][1]["version"] is None
