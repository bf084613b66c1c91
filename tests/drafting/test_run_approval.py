"""Issue 12, requirement 7: a lawyer's approval of a run's final version closes the run.

The run's rows are written directly (the pipeline that writes them is tested in test_runs.py);
approval goes through the real API and the verification service's rule."""

from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.drafting.models import Draft, Run, RunEvent, Stage
from apps.drafting.services import drafts as draft_services
from tests.drafting.makers import draft_of, packet_of, read_pdf, verified

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(lawyer: User, case: Case) -> Draft:
    document = read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    draft = draft_of(case=case, user=lawyer, packet=packet, text="Draft one: 3 March 2024.")
    draft_services.version_add(
        user=lawyer,
        case_id=case.pk,
        draft_id=draft.pk,
        content=draft_services.pasted_content(text="Draft two: 3 March 2024."),
        written_by="model",
    )
    return draft


def _run(draft: Draft, user: User, status: str = Run.Status.WAITING_FOR_APPROVAL) -> Run:
    """A motion run whose drafter wrote version 1 and whose revision wrote version 2."""
    run = Run.objects.create(
        case=draft.case,
        kind=Run.Kind.MOTION,
        packet=draft.packet,
        instructions="Draft the motion.",
        status=status,
        draft=draft,
        created_by=user,
    )
    for position, (name, number) in enumerate([("drafter", 1), ("revision", 2)], start=1):
        Stage.objects.create(
            run=run,
            position=position,
            name=name,
            status=Stage.Status.SUCCEEDED,
            version=draft.versions.get(number=number),
        )
    return run


def _approve(client: Client, draft: Draft, number: int) -> Any:
    return client.post(f"/api/v1/cases/{draft.case_id}/drafts/{draft.pk}/versions/{number}/approve")


def test_approving_the_final_version_closes_the_run_with_an_event(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    run = _run(draft, lawyer)
    verified(draft=draft, user=lawyer, statuses=["supported"], number=2)

    response = _approve(lawyer_api, draft, 2)

    assert response.status_code == 200, response.content
    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED and run.finished_at is not None
    events = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("kind", "payload"))
    assert events[0] == ("run.approved", {"version": 2, "by": str(lawyer)})
    assert events[1][0] == "run.status" and events[1][1]["status"] == "succeeded"
    assert run.event_seq == 2
    assert AuditEvent.objects.filter(action="run.approved", target_id=str(run.pk)).count() == 1
    # The run's page and the API show it closed.
    body = lawyer_api.get(f"/api/v1/cases/{draft.case_id}/runs/{run.pk}").json()
    assert body["status"] == "succeeded" and body["last_event"] == 2


def test_a_blocked_approval_keeps_the_run_waiting(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    run = _run(draft, lawyer)
    verified(draft=draft, user=lawyer, statuses=["supported", "unsupported"], number=2)

    response = _approve(lawyer_api, draft, 2)

    assert response.status_code == 409
    assert response.json()["code"] == "unsupported_findings"
    run.refresh_from_db()
    assert run.status == Run.Status.WAITING_FOR_APPROVAL and run.finished_at is None
    assert not RunEvent.objects.filter(run=run).exists()


def test_approving_an_older_version_does_not_close_the_run(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    run = _run(draft, lawyer)
    verified(draft=draft, user=lawyer, statuses=["supported"], number=1)

    response = _approve(lawyer_api, draft, 1)

    assert response.status_code == 200, response.content
    assert response.json()["approved"] is True
    run.refresh_from_db()
    assert run.status == Run.Status.WAITING_FOR_APPROVAL
    assert not RunEvent.objects.filter(run=run).exists()


def test_a_lawyers_later_version_of_the_runs_draft_closes_it_too(
    lawyer_api: Client, lawyer: User, case: Case, draft: Draft
) -> None:
    run = _run(draft, lawyer)
    draft_services.version_add(
        user=lawyer,
        case_id=case.pk,
        draft_id=draft.pk,
        content=draft_services.pasted_content(text="Draft three, corrected: 3 March 2024."),
    )
    verified(draft=draft, user=lawyer, statuses=["supported"], number=3)

    assert _approve(lawyer_api, draft, 3).status_code == 200

    run.refresh_from_db()
    assert run.status == Run.Status.SUCCEEDED


@pytest.mark.parametrize("status", [Run.Status.CANCELLED, Run.Status.FAILED])
def test_a_cancelled_or_failed_run_is_not_reopened_by_an_approval(
    lawyer_api: Client, lawyer: User, draft: Draft, status: str
) -> None:
    run = _run(draft, lawyer, status=status)
    verified(draft=draft, user=lawyer, statuses=["supported"], number=2)

    assert _approve(lawyer_api, draft, 2).status_code == 200

    run.refresh_from_db()
    assert run.status == status
    assert not RunEvent.objects.filter(run=run).exists()


def test_staff_cannot_approve_and_the_run_stays_waiting(
    staff_api: Client, lawyer: User, draft: Draft
) -> None:
    run = _run(draft, lawyer)
    verified(draft=draft, user=lawyer, statuses=["supported"], number=2)

    response = _approve(staff_api, draft, 2)

    assert response.status_code == 403
    run.refresh_from_db()
    assert run.status == Run.Status.WAITING_FOR_APPROVAL
