"""Case and membership services: who may do what, the rules they keep, and the audit trail."""

from collections.abc import Iterator

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import AuditEvent, User
from apps.cases import services
from apps.cases.events import case_group
from apps.cases.models import Case, Membership
from lexweb.errors import Conflict, DomainError, NotFound, PermissionDenied
from tests.factories import CaseFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def _audit(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("id"))


def _roles(case: Case) -> dict[str, str]:
    return {
        m.user.email: m.role for m in Membership.objects.filter(case=case).select_related("user")
    }


@pytest.fixture
def second_lawyer(db: None) -> User:
    return UserFactory(email="second@firm.test", full_name="Lee Second", role=User.Role.LAWYER)


@pytest.fixture
def in_memory_layer(settings: object) -> Iterator[None]:
    """A process-local channel layer, so published events can be read back in a plain test."""
    settings.CHANNEL_LAYERS = {  # type: ignore[attr-defined]
        "default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    }
    yield


def _listen(case: Case) -> str:
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)(case_group(case.pk), channel)
    return channel


def _receive(channel: str) -> dict[str, object]:
    message: dict[str, object] = async_to_sync(get_channel_layer().receive)(channel)
    return message


# --- case_create ------------------------------------------------------------------------------


def test_lawyer_creates_case_and_becomes_its_lawyer(lawyer: User) -> None:
    case = services.case_create(
        actor=lawyer, title="Acme v. Widget", number="CV-1", client="Acme", court="High Court"
    )

    stored = Case.objects.get(pk=case.pk)
    assert (stored.title, stored.number, stored.client, stored.court) == (
        "Acme v. Widget",
        "CV-1",
        "Acme",
        "High Court",
    )
    assert stored.created_by == lawyer
    assert stored.status == Case.Status.OPEN
    assert _roles(case) == {"lawyer@firm.test": Membership.Role.LAWYER}


def test_admin_creates_case_and_becomes_a_staff_member(admin_user: User) -> None:
    case = services.case_create(actor=admin_user, title="T", number="CV-2", client="C")

    assert _roles(case) == {"admin@firm.test": Membership.Role.STAFF}


def test_staff_may_not_create_a_case_and_nothing_is_stored(staff: User) -> None:
    with pytest.raises(PermissionDenied, match="Only lawyers and admins"):
        services.case_create(actor=staff, title="T", number="CV-3", client="C")

    assert not Case.objects.exists()
    assert not Membership.objects.exists()
    assert not AuditEvent.objects.filter(action="case.create").exists()


def test_inactive_lawyer_may_not_create_a_case(db: None) -> None:
    retired = UserFactory(role=User.Role.LAWYER, is_active=False)

    with pytest.raises(PermissionDenied):
        services.case_create(actor=retired, title="T", number="CV-4", client="C")

    assert not Case.objects.exists()


def test_case_create_writes_one_audit_event_for_the_case(lawyer: User) -> None:
    case = services.case_create(actor=lawyer, title="T", number="CV-5", client="C")

    (event,) = _audit("case.create")
    assert event.case_id == case.pk
    assert event.actor == lawyer
    assert (event.target_type, event.target_id) == ("cases.case", str(case.pk))


@pytest.mark.parametrize(
    ("number", "court"),
    [
        ("CV-2026-0001", "Superior Court"),
        ("cv-2026-0001", "superior court"),
        ("  CV-2026-0001 ", "SUPERIOR   COURT"),
    ],
)
def test_duplicate_number_in_the_same_court_is_a_conflict(
    lawyer: User, case: Case, number: str, court: str
) -> None:
    cases_before = Case.objects.count()

    with pytest.raises(Conflict, match="already exists"):
        services.case_create(actor=lawyer, title="Again", number=number, client="C", court=court)

    assert Case.objects.count() == cases_before
    assert not AuditEvent.objects.filter(action="case.create").exists()


def test_same_number_in_another_court_is_allowed(lawyer: User, case: Case) -> None:
    created = services.case_create(
        actor=lawyer, title="T", number="CV-2026-0001", client="C", court="District Court"
    )

    assert Case.objects.filter(number="CV-2026-0001").count() == 2
    assert created.court == "District Court"


def test_whitespace_is_normalised_in_every_text_field(lawyer: User) -> None:
    case = services.case_create(
        actor=lawyer,
        title="  Acme \t v.\n\nWidget  ",
        number=" CV\u00a0 7 ",
        client="\tAcme   Corp. ",
        court="  High\r\nCourt ",
    )

    case.refresh_from_db()
    assert (case.title, case.number, case.client, case.court) == (
        "Acme v. Widget",
        "CV 7",
        "Acme Corp.",
        "High Court",
    )


@pytest.mark.parametrize("field", ["title", "number", "client"])
def test_blank_required_field_is_refused(lawyer: User, field: str) -> None:
    fields = {"title": "T", "number": "CV-8", "client": "C", field: " \t\n "}

    with pytest.raises(DomainError, match=f"needs a {field}"):
        services.case_create(actor=lawyer, **fields)

    assert not Case.objects.exists()


@pytest.mark.parametrize(
    ("field", "limit"), [("title", 300), ("number", 100), ("client", 200), ("court", 200)]
)
def test_over_long_fields_are_refused_and_the_limit_itself_is_fine(
    lawyer: User, field: str, limit: int
) -> None:
    base = {"title": "T", "number": "CV-9", "client": "C", "court": ""}

    with pytest.raises(DomainError, match=f"{field} is at most {limit}"):
        services.case_create(actor=lawyer, **{**base, field: "x" * (limit + 1)})
    assert not Case.objects.exists()

    case = services.case_create(actor=lawyer, **{**base, field: "\u00e9" * limit})
    assert getattr(case, field) == "\u00e9" * limit


def test_length_is_measured_after_whitespace_is_collapsed(lawyer: User) -> None:
    title = "a" + " " * 500 + "b"

    case = services.case_create(actor=lawyer, title=title, number="CV-10", client="C")

    assert case.title == "a b"


# --- case_update ------------------------------------------------------------------------------


def test_case_update_changes_fields_and_status_and_audits(lawyer: User, case: Case) -> None:
    updated = services.case_update(
        actor=lawyer, case=case, changes={"title": "  New   title ", "status": "stayed"}
    )

    case.refresh_from_db()
    assert (case.title, case.status) == ("New title", Case.Status.STAYED)
    assert updated.title == "New title"
    (event,) = _audit("case.update")
    assert event.case_id == case.pk
    assert event.detail == {"fields": "status,title"}


@pytest.mark.parametrize("unknown", ["created_by", "id", "member_count", "created_at"])
def test_case_update_refuses_unknown_fields(lawyer: User, case: Case, unknown: str) -> None:
    with pytest.raises(DomainError, match=f"Cannot change {unknown}"):
        services.case_update(actor=lawyer, case=case, changes={"title": "X", unknown: "1"})

    case.refresh_from_db()
    assert case.title == "Acme v. Widget"
    assert not AuditEvent.objects.filter(action="case.update").exists()


@pytest.mark.parametrize("status", ["archived", "OPEN", "", "open "])
def test_case_update_refuses_unknown_status(lawyer: User, case: Case, status: str) -> None:
    with pytest.raises(DomainError, match="Unknown status"):
        services.case_update(actor=lawyer, case=case, changes={"status": status})

    case.refresh_from_db()
    assert case.status == Case.Status.OPEN
    assert not AuditEvent.objects.filter(action="case.update").exists()


def test_case_update_refuses_over_long_and_blank_text(lawyer: User, case: Case) -> None:
    with pytest.raises(DomainError, match="at most 300"):
        services.case_update(actor=lawyer, case=case, changes={"title": "t" * 301})
    with pytest.raises(DomainError, match="needs a client"):
        services.case_update(actor=lawyer, case=case, changes={"client": "   "})

    case.refresh_from_db()
    assert (case.title, case.client) == ("Acme v. Widget", "Acme Corp.")


def test_case_update_to_a_taken_number_is_a_conflict(lawyer: User, case: Case) -> None:
    # Taken by another case of the lawyer's (one they cannot see is allowed: test_case_number_leak)
    MembershipFactory(case=CaseFactory(number="CV-OTHER", court="Superior Court"), user=lawyer)

    with pytest.raises(Conflict):
        services.case_update(actor=lawyer, case=case, changes={"number": "cv-other"})

    case.refresh_from_db()
    assert case.number == "CV-2026-0001"


def test_case_update_may_keep_its_own_number(lawyer: User, case: Case) -> None:
    services.case_update(actor=lawyer, case=case, changes={"number": "cv-2026-0001"})

    case.refresh_from_db()
    assert case.number == "cv-2026-0001"


# --- member_add -------------------------------------------------------------------------------


def test_lawyer_on_case_adds_a_member_and_it_is_audited(lawyer: User, case: Case) -> None:
    newcomer = UserFactory(email="new@firm.test", role=User.Role.STAFF)

    membership = services.member_add(
        actor=lawyer, case=case, email="  NEW@firm.test ", role="staff"
    )

    assert membership.user == newcomer
    assert _roles(case)["new@firm.test"] == Membership.Role.STAFF
    (event,) = _audit("case.member_add")
    assert (event.case_id, event.actor_id, event.detail) == (case.pk, lawyer.pk, {"role": "staff"})
    assert event.target_id == str(membership.pk)


def test_lawyer_user_can_be_added_as_lawyer(lawyer: User, case: Case, second_lawyer: User) -> None:
    services.member_add(actor=lawyer, case=case, email=second_lawyer.email, role="lawyer")

    assert _roles(case)[second_lawyer.email] == Membership.Role.LAWYER


def test_an_admin_member_does_not_manage_a_case_that_has_a_lawyer(
    admin_user: User, lawyer: User, staff: User, case: Case
) -> None:
    MembershipFactory(case=case, user=admin_user, role=Membership.Role.STAFF)
    newcomer = UserFactory(role=User.Role.LAWYER)

    with pytest.raises(PermissionDenied, match="Only lawyers on this case manage its members"):
        services.member_add(actor=admin_user, case=case, email=newcomer.email, role="lawyer")
    with pytest.raises(PermissionDenied):
        services.member_remove(actor=admin_user, case=case, user_id=staff.pk)

    assert not Membership.objects.filter(case=case, user=newcomer).exists()


def test_an_admin_who_opens_a_case_adds_its_first_lawyer_who_then_manages_it(
    admin_user: User, lawyer: User, staff: User
) -> None:
    case = services.case_create(actor=admin_user, title="T", number="CV-9", client="C")

    with pytest.raises(PermissionDenied, match="may only add a lawyer"):
        services.member_add(actor=admin_user, case=case, email=staff.email, role="staff")
    services.member_add(actor=admin_user, case=case, email=lawyer.email, role="lawyer")
    with pytest.raises(PermissionDenied, match="Only lawyers on this case"):
        services.member_add(actor=admin_user, case=case, email=staff.email, role="staff")
    services.member_add(actor=lawyer, case=case, email=staff.email, role="staff")

    assert _roles(case) == {
        admin_user.email: Membership.Role.STAFF,
        lawyer.email: Membership.Role.LAWYER,
        staff.email: Membership.Role.STAFF,
    }


def test_admin_who_is_not_a_member_may_not_manage(admin_user: User, case: Case) -> None:
    newcomer = UserFactory(role=User.Role.STAFF)

    with pytest.raises(PermissionDenied):
        services.member_add(actor=admin_user, case=case, email=newcomer.email, role="staff")

    assert not Membership.objects.filter(user=newcomer).exists()


def test_staff_member_may_not_add_members(staff: User, case: Case) -> None:
    newcomer = UserFactory(role=User.Role.STAFF)

    with pytest.raises(PermissionDenied, match="Only lawyers on this case"):
        services.member_add(actor=staff, case=case, email=newcomer.email, role="staff")

    assert not Membership.objects.filter(user=newcomer).exists()
    assert not AuditEvent.objects.filter(action="case.member_add").exists()


def test_lawyer_who_is_staff_on_the_case_may_not_manage(case: Case, second_lawyer: User) -> None:
    MembershipFactory(case=case, user=second_lawyer, role=Membership.Role.STAFF)
    newcomer = UserFactory(role=User.Role.STAFF)

    with pytest.raises(PermissionDenied):
        services.member_add(actor=second_lawyer, case=case, email=newcomer.email, role="staff")

    assert not Membership.objects.filter(user=newcomer).exists()


def test_lawyer_of_another_case_may_not_manage(outsider: User, case: Case) -> None:
    with pytest.raises(PermissionDenied):
        services.member_add(actor=outsider, case=case, email=outsider.email, role="lawyer")

    assert not Membership.objects.filter(case=case, user=outsider).exists()


def test_staff_user_cannot_be_given_the_lawyer_role(lawyer: User, case: Case) -> None:
    newcomer = UserFactory(email="clerk@firm.test", role=User.Role.STAFF)

    with pytest.raises(DomainError, match="not a lawyer"):
        services.member_add(actor=lawyer, case=case, email=newcomer.email, role="lawyer")

    assert not Membership.objects.filter(user=newcomer).exists()


def test_unknown_role_is_refused(lawyer: User, case: Case, second_lawyer: User) -> None:
    with pytest.raises(DomainError, match="Unknown case role"):
        services.member_add(actor=lawyer, case=case, email=second_lawyer.email, role="owner")

    assert not Membership.objects.filter(user=second_lawyer).exists()


@pytest.mark.parametrize("email", ["staff@firm.test", "STAFF@FIRM.TEST", " staff@firm.test "])
def test_adding_an_existing_member_is_a_conflict(lawyer: User, case: Case, email: str) -> None:
    with pytest.raises(Conflict, match="already a member"):
        services.member_add(actor=lawyer, case=case, email=email, role="staff")

    assert Membership.objects.filter(case=case).count() == 2
    assert not AuditEvent.objects.filter(action="case.member_add").exists()


@pytest.mark.parametrize("email", ["nobody@firm.test", "", "not an address", "x" * 300])
def test_unknown_email_is_not_found(lawyer: User, case: Case, email: str) -> None:
    with pytest.raises(NotFound, match="No active user"):
        services.member_add(actor=lawyer, case=case, email=email, role="staff")

    assert Membership.objects.filter(case=case).count() == 2


def test_inactive_user_cannot_be_added(lawyer: User, case: Case) -> None:
    gone = UserFactory(email="gone@firm.test", is_active=False)

    with pytest.raises(NotFound):
        services.member_add(actor=lawyer, case=case, email="gone@firm.test", role="staff")

    assert not Membership.objects.filter(user=gone).exists()


def test_member_add_tells_the_case_stream_after_commit(
    lawyer: User,
    case: Case,
    second_lawyer: User,
    in_memory_layer: None,
    django_capture_on_commit_callbacks: object,
) -> None:
    channel = _listen(case)

    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[operator]
        services.member_add(actor=lawyer, case=case, email=second_lawyer.email, role="lawyer")

    event = _receive(channel)
    assert event["type"] == "cases.notice"
    assert event["case_id"] == case.pk
    assert "Lee Second joined the case as lawyer" in str(event["message"])


# --- member_change_role -----------------------------------------------------------------------


def test_lawyer_promotes_and_demotes_with_audit(
    lawyer: User, case: Case, second_lawyer: User
) -> None:
    MembershipFactory(case=case, user=second_lawyer, role=Membership.Role.STAFF)

    services.member_change_role(actor=lawyer, case=case, user_id=second_lawyer.pk, role="lawyer")
    assert _roles(case)[second_lawyer.email] == Membership.Role.LAWYER

    services.member_change_role(actor=lawyer, case=case, user_id=lawyer.pk, role="staff")
    assert _roles(case)[lawyer.email] == Membership.Role.STAFF

    events = _audit("case.member_role")
    assert [(e.case_id, e.detail["role"]) for e in events] == [
        (case.pk, "lawyer"),
        (case.pk, "staff"),
    ]


def test_sole_lawyer_cannot_be_demoted(lawyer: User, case: Case) -> None:
    with pytest.raises(Conflict, match="at least one lawyer"):
        services.member_change_role(actor=lawyer, case=case, user_id=lawyer.pk, role="staff")

    assert _roles(case)[lawyer.email] == Membership.Role.LAWYER
    assert not AuditEvent.objects.filter(action="case.member_role").exists()


def test_sole_lawyer_keeping_the_lawyer_role_is_fine(lawyer: User, case: Case) -> None:
    services.member_change_role(actor=lawyer, case=case, user_id=lawyer.pk, role="lawyer")

    assert _roles(case)[lawyer.email] == Membership.Role.LAWYER


def test_staff_user_cannot_be_promoted_to_lawyer(lawyer: User, staff: User, case: Case) -> None:
    with pytest.raises(DomainError, match="not a lawyer"):
        services.member_change_role(actor=lawyer, case=case, user_id=staff.pk, role="lawyer")

    assert _roles(case)[staff.email] == Membership.Role.STAFF


def test_staff_member_may_not_change_roles(lawyer: User, staff: User, case: Case) -> None:
    with pytest.raises(PermissionDenied):
        services.member_change_role(actor=staff, case=case, user_id=lawyer.pk, role="staff")

    assert _roles(case)[lawyer.email] == Membership.Role.LAWYER


def test_changing_role_of_a_non_member_is_not_found(
    lawyer: User, outsider: User, case: Case
) -> None:
    with pytest.raises(NotFound):
        services.member_change_role(actor=lawyer, case=case, user_id=outsider.pk, role="staff")
    with pytest.raises(NotFound):
        services.member_change_role(actor=lawyer, case=case, user_id=2**62, role="staff")

    assert not Membership.objects.filter(user=outsider, case=case).exists()


def test_unknown_role_on_change_is_refused(lawyer: User, staff: User, case: Case) -> None:
    with pytest.raises(DomainError, match="Unknown case role"):
        services.member_change_role(actor=lawyer, case=case, user_id=staff.pk, role="admin")

    assert _roles(case)[staff.email] == Membership.Role.STAFF


# --- member_remove ----------------------------------------------------------------------------


def test_lawyer_removes_a_member_with_audit(lawyer: User, staff: User, case: Case) -> None:
    services.member_remove(actor=lawyer, case=case, user_id=staff.pk)

    assert _roles(case) == {lawyer.email: Membership.Role.LAWYER}
    (event,) = _audit("case.member_remove")
    assert (event.case_id, event.actor_id) == (case.pk, lawyer.pk)
    assert event.target_type == "cases.membership"


def test_sole_lawyer_cannot_be_removed(lawyer: User, case: Case) -> None:
    with pytest.raises(Conflict, match="at least one lawyer"):
        services.member_remove(actor=lawyer, case=case, user_id=lawyer.pk)

    assert lawyer.email in _roles(case)
    assert not AuditEvent.objects.filter(action="case.member_remove").exists()


def test_one_of_two_lawyers_may_be_removed(lawyer: User, case: Case, second_lawyer: User) -> None:
    MembershipFactory(case=case, user=second_lawyer, role=Membership.Role.LAWYER)

    services.member_remove(actor=second_lawyer, case=case, user_id=lawyer.pk)

    assert lawyer.email not in _roles(case)
    with pytest.raises(Conflict):
        services.member_remove(actor=second_lawyer, case=case, user_id=second_lawyer.pk)
    assert second_lawyer.email in _roles(case)


def test_staff_member_may_not_remove_anyone(lawyer: User, staff: User, case: Case) -> None:
    with pytest.raises(PermissionDenied):
        services.member_remove(actor=staff, case=case, user_id=staff.pk)

    assert set(_roles(case)) == {lawyer.email, staff.email}


def test_removing_a_non_member_is_not_found(lawyer: User, outsider: User, case: Case) -> None:
    with pytest.raises(NotFound):
        services.member_remove(actor=lawyer, case=case, user_id=outsider.pk)

    assert Membership.objects.filter(case=case).count() == 2
    assert not AuditEvent.objects.filter(action="case.member_remove").exists()


def test_member_remove_revokes_the_stream_after_commit_only(
    lawyer: User,
    staff: User,
    case: Case,
    in_memory_layer: None,
    django_capture_on_commit_callbacks: object,
) -> None:
    channel = _listen(case)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:  # type: ignore[operator]
        with pytest.raises(Conflict):
            services.member_remove(actor=lawyer, case=case, user_id=lawyer.pk)
        assert callbacks == []
        services.member_remove(actor=lawyer, case=case, user_id=staff.pk)

    assert _receive(channel) == {
        "type": "cases.membership_revoked",
        "case_id": case.pk,
        "user_id": staff.pk,
    }


# --- worker check -----------------------------------------------------------------------------


def test_worker_check_request_queues_one_job_with_ids_only(lawyer: User, case: Case) -> None:
    job_id = services.case_worker_check_request(actor=lawyer, case=case)

    job = ProcrastinateJob.objects.get(id=job_id)
    assert (job.task_name, job.status, job.queue_name) == ("cases.worker_check", "todo", "cpu")
    assert job.args["case_id"] == case.pk
    assert job.args["requested_by"] == lawyer.pk
    assert isinstance(job.args["queued_at"], str)


def test_worker_check_run_on_a_deleted_case_is_a_no_op(
    lawyer: User, in_memory_layer: None, django_capture_on_commit_callbacks: object
) -> None:
    with django_capture_on_commit_callbacks(execute=True) as callbacks:  # type: ignore[operator]
        services.case_worker_check_run(
            case_id=2**62, requested_by=lawyer.pk, queued_at="not a time"
        )

    assert callbacks == []


def test_a_patch_that_changes_nothing_writes_and_audits_nothing(lawyer: User, case: Case) -> None:
    services.case_update(actor=lawyer, case=case, changes={"title": case.title, "status": "open"})

    assert not AuditEvent.objects.filter(action="case.update").exists()


def test_a_member_who_leaves_no_longer_reads_the_cases_audit_trail(
    lawyer: User, staff: User, case: Case
) -> None:
    from apps.accounts import selectors as account_selectors

    services.case_update(actor=staff, case=case, changes={"status": "stayed"})
    assert account_selectors.audit_list_for_user(user=staff).filter(case=case).exists()

    services.member_remove(actor=lawyer, case=case, user_id=staff.pk)

    assert not account_selectors.audit_list_for_user(user=staff).filter(case=case).exists()
