"""Rejecting a run waiting for approval (issue 22 req 6): a lawyer with a reason; the run ends
`rejected` with an event and an audit row; its versions stay, marked rejected, and can no
longer be approved; staff, outsiders and runs in other states are refused."""

from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.drafting.models import Draft, DraftVersion, Run, RunEvent
from tests.conftest import session_client
from tests.drafting.makers import verified
from tests.drafting.test_run_approval import _approve, _run, draft  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db

REASON = "It argues the wrong statute of limitations."


def _reject(client: Client, run: Run, reason: Any = REASON) -> Any:
    return client.post(
        f"/api/v1/cases/{run.case_id}/runs/{run.pk}/reject",
        {"reason": reason},
        content_type="application/json",
    )


def test_a_lawyer_rejects_a_waiting_run_and_its_versions_are_marked(
    lawyer_api: Client,
    lawyer: User,
    draft: Draft,  # noqa: F811
) -> None:
    run = _run(draft, lawyer)
    verified(draft=draft, user=lawyer, statuses=["supported"], number=2)

    response = _reject(lawyer_api, run, f"  {REASON}  ")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "rejected"
    assert body["rejection_reason"] == REASON and body["rejected_by"]["email"] == lawyer.email
    run.refresh_from_db()
    assert run.status == Run.Status.REJECTED and run.finished_at is not None
    kinds = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("kind", flat=True))
    assert kinds == ["run.rejected", "run.status"]
    rejected = RunEvent.objects.get(run=run, kind="run.rejected").payload
    assert rejected["reason"] == REASON and rejected["versions"] == [1, 2]
    audit = AuditEvent.objects.get(action="run.rejected")
    assert audit.actor == lawyer and audit.detail["reason"] == REASON
    # The versions stay, marked; the API and the version page say so; approval is refused.
    for number in (1, 2):
        version = DraftVersion.objects.get(draft=draft, number=number)
        assert version.rejected_at is not None and version.rejection_reason == REASON
    versions = lawyer_api.get(f"/api/v1/cases/{draft.case_id}/drafts/{draft.pk}").json()
    assert {v["rejection_reason"] for v in versions["versions"]} == {REASON}
    refused = _approve(lawyer_api, draft, 2)
    assert refused.status_code == 409 and refused.json()["code"] == "version_rejected"
    assert DraftVersion.objects.get(draft=draft, number=2).approved_at is None
    page = session_client(lawyer).get(f"/cases/{draft.case_id}/drafts/{draft.pk}/versions/2/")
    assert "Rejected with its run" in page.content.decode()
    # Listed as rejected.
    listed = lawyer_api.get(f"/api/v1/cases/{draft.case_id}/runs?status=rejected").json()
    assert [item["id"] for item in listed["items"]] == [run.pk]


@pytest.mark.parametrize(
    "status",
    [Run.Status.RUNNING, Run.Status.SUCCEEDED, Run.Status.FAILED, Run.Status.CANCELLED],
)
def test_only_a_run_waiting_for_approval_can_be_rejected(
    lawyer_api: Client,
    lawyer: User,
    draft: Draft,  # noqa: F811
    status: str,
) -> None:
    run = _run(draft, lawyer, status=status)
    response = _reject(lawyer_api, run)
    assert response.status_code == 409
    assert "not waiting for approval" in response.json()["detail"]
    assert not DraftVersion.objects.filter(rejected_at__isnull=False).exists()
    assert Run.objects.get(pk=run.pk).status == status


@pytest.mark.parametrize("reason", ["", "too short", "x" * 5001, None, 5, ["a" * 20]])
def test_a_bad_reason_is_refused_and_nothing_changes(
    lawyer_api: Client,
    lawyer: User,
    draft: Draft,  # noqa: F811
    reason: Any,
) -> None:
    run = _run(draft, lawyer)
    response = _reject(lawyer_api, run, reason)
    assert response.status_code in (400, 422)
    assert Run.objects.get(pk=run.pk).status == Run.Status.WAITING_FOR_APPROVAL
    assert not RunEvent.objects.filter(run=run).exists()
    assert not DraftVersion.objects.filter(rejected_at__isnull=False).exists()


def test_staff_and_outsiders_cannot_reject(
    staff_api: Client,
    outsider_api: Client,
    lawyer: User,
    staff: User,
    case: Case,
    draft: Draft,  # noqa: F811
) -> None:
    run = _run(draft, lawyer)
    assert _reject(staff_api, run).status_code == 403
    assert _reject(outsider_api, run).status_code == 404
    assert Run.objects.get(pk=run.pk).status == Run.Status.WAITING_FOR_APPROVAL


def test_the_run_page_offers_the_form_to_a_lawyer_and_rejects_through_it(
    lawyer: User,
    draft: Draft,  # noqa: F811
) -> None:
    run = _run(draft, lawyer)
    browser = session_client(lawyer)
    url = f"/cases/{draft.case_id}/runs/{run.pk}/"
    assert "Reject the run" in browser.get(url).content.decode()

    short = browser.post(url + "reject/", {"reason": "no"})
    assert short.status_code == 400
    assert "Give a reason of 10 to 5000 characters" in short.content.decode()

    done = browser.post(url + "reject/", {"reason": REASON})
    assert done.status_code == 302
    page = browser.get(url).content.decode()
    assert "Rejected by a lawyer" in page and REASON in page
    assert "Reject the run" not in page
