"""Requirements 5 and 8: findings over the API, blocking, overrides (lawyers only, with a
reason, audited, shown for good) and approval (409 `unsupported_findings` while one blocks).
Findings are written directly here; the verifier's own verdicts are tested beside it."""

from typing import Any

import pytest
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case, Membership
from apps.drafting.models import Draft, DraftVersion
from apps.verification.models import Finding, Override
from tests.conftest import session_client, token_client
from tests.drafting.makers import draft_of, packet_of, read_pdf, verified
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

REASON = "Checked by hand: the signed lease (not in the packet) says so."


@pytest.fixture
def draft(lawyer: User, case: Case) -> Draft:
    document = read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    return draft_of(case=case, user=lawyer, packet=packet, text="Dates: 1 2 3 4 5 6.")


def _base(draft: Draft, number: int = 1) -> str:
    return f"/api/v1/cases/{draft.case_id}/drafts/{draft.pk}/versions/{number}"


def _override(client: Client, draft: Draft, finding: Finding, reason: str = REASON) -> Any:
    return client.post(
        f"{_base(draft)}/findings/{finding.pk}/override",
        {"reason": reason},
        content_type="application/json",
    )


def _approve(client: Client, draft: Draft, number: int = 1) -> Any:
    return client.post(f"{_base(draft, number)}/approve")


def test_findings_list_offsets_kind_status_check_and_the_supporting_frozen_page(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    verification, (supported, _unsupported) = verified(
        draft=draft, user=lawyer, statuses=["supported", "unsupported"]
    )

    body = lawyer_api.get(f"{_base(draft)}/findings").json()

    assert body["verification"]["id"] == verification.pk
    assert body["verification"]["second_opinion"] == "not_obtained"
    assert body["blocking"] == 1
    first, second = body["findings"]
    assert (first["id"], first["start"], first["end"], first["kind"]) == (
        supported.pk,
        0,
        1,
        "date",
    )
    assert (first["status"], first["check"], first["blocks"]) == (
        "supported",
        "date.in_packet",
        False,
    )
    support = first["support"]
    assert support["frozen_page_id"] == supported.page_id
    assert (support["filename"], support["page_number"]) == ("record.pdf", 1)
    assert support["excerpt"] == "on 3 March 2024"
    assert (second["status"], second["support"], second["blocks"]) == ("unsupported", None, True)
    assert second["override"] is None


def test_findings_before_any_verification_say_so(lawyer_api: Client, draft: Draft) -> None:
    body = lawyer_api.get(f"{_base(draft)}/findings").json()

    assert body == {"verification": None, "blocking": 0, "findings": []}


def test_approve_is_refused_while_a_finding_blocks_and_allowed_once_a_lawyer_overrides(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    _v, (unsupported, contradicted, _ok) = verified(
        draft=draft, user=lawyer, statuses=["unsupported", "contradicted", "supported"]
    )

    refused = _approve(lawyer_api, draft)
    assert refused.status_code == 409
    assert refused.json()["code"] == "unsupported_findings"
    assert "2 unsupported or contradicted findings" in refused.json()["detail"]

    assert _override(lawyer_api, draft, unsupported).status_code == 200
    still = _approve(lawyer_api, draft)
    assert (
        still.status_code == 409
        and "1 unsupported or contradicted finding " in still.json()["detail"]
    )
    assert _override(lawyer_api, draft, contradicted).status_code == 200
    approved = _approve(lawyer_api, draft)

    assert approved.status_code == 200, approved.content
    assert approved.json()["approved"] is True
    assert DraftVersion.objects.get(draft=draft).approved_by == lawyer
    assert AuditEvent.objects.filter(action="draft.approve", actor=lawyer).count() == 1


def test_an_override_is_audited_with_its_reason_and_shown_on_the_finding_for_good(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    _v, (unsupported,) = verified(draft=draft, user=lawyer, statuses=["unsupported"])

    answer = _override(lawyer_api, draft, unsupported).json()
    _approve(lawyer_api, draft)
    later = lawyer_api.get(f"{_base(draft)}/findings").json()["findings"][0]

    assert answer["override"]["reason"] == REASON and answer["blocks"] is False
    assert later["status"] == "unsupported"  # the verdict stands; the override is beside it
    assert later["override"]["reason"] == REASON
    assert later["override"]["lawyer"]["email"] == lawyer.email
    event = AuditEvent.objects.get(action="finding.override")
    assert (event.actor, event.target_id) == (lawyer, str(unsupported.pk))
    assert event.detail["reason"] == REASON and event.detail["status"] == "unsupported"


@pytest.mark.parametrize("via", ["session", "token"])
def test_staff_may_never_override_or_approve_by_session_or_token(
    staff: User, lawyer: User, draft: Draft, via: str
) -> None:
    client = session_client(staff) if via == "session" else token_client(staff)
    _v, (unsupported,) = verified(draft=draft, user=lawyer, statuses=["unsupported"])

    override = _override(client, draft, unsupported)
    approve = _approve(client, draft)

    assert (override.status_code, override.json()["code"]) == (403, "lawyer_required")
    assert (approve.status_code, approve.json()["code"]) == (403, "lawyer_required")
    assert not Override.objects.exists()
    assert not AuditEvent.objects.filter(action__in=["finding.override", "draft.approve"]).exists()


def test_a_lawyer_who_is_staff_on_this_case_may_not_override(
    lawyer: User, case: Case, draft: Draft
) -> None:
    junior = UserFactory(email="junior@firm.test", role=User.Role.LAWYER)
    MembershipFactory(case=case, user=junior, role=Membership.Role.STAFF)
    _v, (unsupported,) = verified(draft=draft, user=lawyer, statuses=["unsupported"])

    response = _override(token_client(junior), draft, unsupported)

    assert response.status_code == 403 and not Override.objects.exists()


@pytest.mark.parametrize("status", ["supported", "needs_review"])
def test_only_blocking_findings_can_be_overridden(
    lawyer_api: Client, lawyer: User, draft: Draft, status: str
) -> None:
    _v, (finding,) = verified(draft=draft, user=lawyer, statuses=[status])

    response = _override(lawyer_api, draft, finding)

    assert (
        response.status_code == 409
        and "only unsupported or contradicted" in response.json()["detail"]
    )
    assert not Override.objects.exists()


@pytest.mark.parametrize(
    ("reason", "status"), [("", 422), ("   \n ", 400), ("ok", 400), ("x" * 5001, 422)]
)
def test_an_override_needs_a_written_reason(
    lawyer_api: Client, lawyer: User, draft: Draft, reason: str, status: int
) -> None:
    _v, (finding,) = verified(draft=draft, user=lawyer, statuses=["unsupported"])

    response = _override(lawyer_api, draft, finding, reason)

    assert response.status_code == status, response.content
    assert not Override.objects.exists()


def test_overriding_twice_or_an_earlier_runs_finding_is_refused(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    _v, (old,) = verified(draft=draft, user=lawyer, statuses=["unsupported"])
    _v2, (new,) = verified(draft=draft, user=lawyer, statuses=["unsupported"])

    earlier = _override(lawyer_api, draft, old)
    first = _override(lawyer_api, draft, new)
    twice = _override(lawyer_api, draft, new)

    assert earlier.status_code == 409 and "earlier verification" in earlier.json()["detail"]
    assert first.status_code == 200
    assert twice.status_code == 409 and "already" in twice.json()["detail"]
    assert Override.objects.count() == 1


def test_approve_before_any_verification_and_approve_twice_are_409(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    unverified = _approve(lawyer_api, draft)
    verified(draft=draft, user=lawyer, statuses=["supported"])
    once = _approve(lawyer_api, draft)
    twice = _approve(lawyer_api, draft)

    assert (unverified.status_code, unverified.json()["code"]) == (409, "not_verified")
    assert once.status_code == 200
    assert (twice.status_code, twice.json()["code"]) == (409, "already_approved")


def test_a_queued_run_after_a_clean_one_holds_approval_back(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported"])
    queued = lawyer_api.post(f"{_base(draft)}/verify")

    response = _approve(lawyer_api, draft)

    assert queued.status_code == 202 and queued.json()["status"] == "queued"
    assert (response.status_code, response.json()["code"]) == (409, "not_verified")


def test_findings_of_another_version_or_draft_are_not_found(
    lawyer_api: Client, outsider_api: Client, lawyer: User, draft: Draft
) -> None:
    _v, (finding,) = verified(draft=draft, user=lawyer, statuses=["unsupported"])
    other = draft_of(case=draft.case, user=lawyer, packet=draft.packet, title="Other")

    wrong_draft = _override(lawyer_api, other, finding)
    missing_version = lawyer_api.get(f"{_base(draft, 2)}/findings")
    outsider = outsider_api.get(f"{_base(draft)}/findings")

    assert wrong_draft.status_code == missing_version.status_code == outsider.status_code == 404
    assert not Override.objects.exists()


def test_verify_by_a_non_member_queues_nothing(outsider_api: Client, draft: Draft) -> None:
    response = outsider_api.post(f"{_base(draft)}/verify")

    assert response.status_code == 404
    assert not draft.versions.get().verifications.exists()


@pytest.mark.django_db
def test_verify_over_the_api_runs_as_a_real_job_and_the_findings_follow(
    lawyer: User, case: Case, run_jobs: Any
) -> None:
    document = read_pdf(case=case, user=lawyer, lines=["Paid $12,450.00 on March 3, 2024."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    draft = draft_of(
        case=case, user=lawyer, packet=packet, text="They paid $12,450.00 on March 3, 2024."
    )
    client = token_client(lawyer)

    queued = client.post(f"{_base(draft)}/verify")
    run_jobs()
    body = client.get(f"{_base(draft)}/findings").json()

    assert queued.status_code == 202
    assert body["verification"]["status"] == "done", body["verification"]["error"]
    assert {(f["text"], f["status"]) for f in body["findings"]} >= {
        ("$12,450.00", "supported"),
        ("March 3, 2024", "supported"),
    }
    assert body["blocking"] == 0
    assert _approve(client, draft).status_code == 200


def test_findings_filter_by_status_and_kind_and_refuse_unknown_ones(
    lawyer_api: Client, lawyer: User, draft: Draft
) -> None:
    verified(draft=draft, user=lawyer, statuses=["supported", "unsupported", "contradicted"])
    url = f"{_base(draft)}/findings"

    blocking = lawyer_api.get(url + "?status=unsupported&status=contradicted").json()
    dates = lawyer_api.get(url, {"kind": "date"}).json()
    quotes = lawyer_api.get(url, {"kind": "quote"}).json()
    bad = lawyer_api.get(url, {"status": "fabricated"})

    assert [f["status"] for f in blocking["findings"]] == ["unsupported", "contradicted"]
    assert blocking["blocking"] == 2
    assert len(dates["findings"]) == 3 and quotes["findings"] == []
    assert quotes["blocking"] == 2  # the count is of the whole version, not the filter
    assert bad.status_code == 422


def test_a_statute_is_a_finding_of_its_own_kind_and_can_be_filtered(
    lawyer: User, case: Case, run_jobs: Any
) -> None:
    document = read_pdf(case=case, user=lawyer, lines=["Claims arise under 42 U.S.C. § 1983."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    draft = draft_of(
        case=case,
        user=lawyer,
        packet=packet,
        text="The claim arises under 42 U.S.C. § 1983. Venue lies under 28 U.S.C. § 1391.",
    )
    client = token_client(lawyer)

    client.post(f"{_base(draft)}/verify")
    run_jobs()
    statutes = client.get(f"{_base(draft)}/findings", {"kind": "statute"}).json()

    assert statutes["verification"]["status"] == "done", statutes["verification"]["error"]
    assert sorted((f["text"], f["status"]) for f in statutes["findings"]) == [
        ("28 U.S.C. § 1391", "unsupported"),
        ("42 U.S.C. § 1983", "supported"),
    ]
    assert Finding.objects.filter(kind=Finding.Kind.STATUTE).count() == 2
