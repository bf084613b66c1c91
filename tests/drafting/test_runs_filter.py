"""`GET .../runs?status=&kind=` (issue 22 req 6): the list keeps only the runs asked for; an
unknown value is a 422 that names the allowed ones; another case's runs never show."""

import pytest
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Run
from apps.evidence.models import Packet
from tests.drafting import run_fixtures as rf

pytestmark = pytest.mark.django_db


def _run(case: Case, packet: Packet, user: User, status: str, kind: str) -> Run:
    return Run.objects.create(
        case=case, kind=kind, packet=packet, instructions="x", status=status, created_by=user
    )


def _ids(client: Client, case: Case, query: str) -> list[int]:
    response = client.get(f"/api/v1/cases/{case.pk}/runs{query}")
    assert response.status_code == 200, response.content
    return [item["id"] for item in response.json()["items"]]


def test_runs_filter_by_status_and_kind(
    lawyer: User, lawyer_api: Client, case: Case, other_case: Case, outsider: User
) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    waiting = _run(case, packet, lawyer, Run.Status.WAITING_FOR_APPROVAL, Run.Kind.MOTION)
    failed = _run(case, packet, lawyer, Run.Status.FAILED, Run.Kind.MOTION)
    summary = _run(case, packet, lawyer, Run.Status.WAITING_FOR_APPROVAL, Run.Kind.SUMMARY)
    elsewhere = rf.frozen_packet(case=other_case, user=outsider)
    _run(other_case, elsewhere, outsider, Run.Status.WAITING_FOR_APPROVAL, Run.Kind.MOTION)

    assert _ids(lawyer_api, case, "") == [summary.pk, failed.pk, waiting.pk]
    assert _ids(lawyer_api, case, "?status=waiting_for_approval") == [summary.pk, waiting.pk]
    assert _ids(lawyer_api, case, "?status=failed") == [failed.pk]
    assert _ids(lawyer_api, case, "?kind=summary") == [summary.pk]
    assert _ids(lawyer_api, case, "?status=waiting_for_approval&kind=motion") == [waiting.pk]
    assert _ids(lawyer_api, case, "?status=cancelled") == []


@pytest.mark.parametrize(
    "query",
    ["?status=done", "?status=", "?status=FAILED", "?kind=brief", "?status=" + "x" * 5000],
)
def test_an_unknown_status_or_kind_is_a_422_naming_the_allowed_ones(
    lawyer_api: Client, case: Case, query: str
) -> None:
    response = lawyer_api.get(f"/api/v1/cases/{case.pk}/runs{query}")
    assert response.status_code == 422
    body = response.content.decode()
    assert "waiting_for_approval" in body or "financial" in body


def test_the_schema_lists_the_statuses_and_kinds_of_the_filter(lawyer_api: Client) -> None:
    schema = lawyer_api.get("/api/v1/openapi.json").json()
    operation = schema["paths"]["/api/v1/cases/{case_id}/runs"]["get"]
    parameters = {p["name"]: p for p in operation["parameters"]}
    text = str(parameters["status"]) + str(schema["components"])
    assert "waiting_for_approval" in text and "stopped_by_gate" in text
    assert "financial" in str(parameters["kind"]) + str(schema["components"])
