"""The web pages: sign-in, case list, case form, case detail and member management."""

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case, Membership
from tests.conftest import session_client
from tests.factories import PASSWORD, CaseFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db


def _messages(response: object) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]  # type: ignore[attr-defined]


def _roles(case: Case) -> dict[str, str]:
    return {
        m.user.email: m.role for m in Membership.objects.filter(case=case).select_related("user")
    }


@pytest.fixture
def colleague(db: None) -> User:
    return UserFactory(email="colleague@firm.test", full_name="Cora Colleague", role="lawyer")


# --- sign-in ----------------------------------------------------------------------------------


def test_sign_in_page_renders_a_form_with_csrf(db: None) -> None:
    response = Client().get("/accounts/login/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "Sign in to lexweb" in html
    assert 'name="username"' in html
    assert 'name="password"' in html
    assert 'name="csrfmiddlewaretoken"' in html


def test_sign_in_with_the_right_password_opens_the_case_list(lawyer: User) -> None:
    client = Client()

    response = client.post(
        "/accounts/login/", {"username": "lawyer@firm.test", "password": PASSWORD}
    )

    assert response.status_code == 302
    assert response["Location"] == "/"
    assert client.get("/").status_code == 200


@pytest.mark.parametrize(
    ("email", "password"),
    [
        ("lawyer@firm.test", "wrong-password-123"),
        ("nobody@firm.test", PASSWORD),
        ("lawyer@firm.test", ""),
    ],
)
def test_sign_in_with_wrong_credentials_shows_an_error(
    lawyer: User, email: str, password: str
) -> None:
    client = Client()

    response = client.post("/accounts/login/", {"username": email, "password": password})

    assert response.status_code == 200
    assert response.context["form"].errors
    assert 'role="alert"' in response.content.decode() or "errorlist" in response.content.decode()
    assert "_auth_user_id" not in client.session
    assert client.get("/").status_code == 302


def test_wrong_password_names_no_reason(lawyer: User) -> None:
    response = Client().post(
        "/accounts/login/", {"username": "lawyer@firm.test", "password": "wrong-password-123"}
    )

    assert "Please enter a correct e-mail address and password" in response.content.decode()


def test_anonymous_is_sent_to_sign_in(case: Case) -> None:
    client = Client()

    for path in ("/", "/cases/new/", f"/cases/{case.pk}/"):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/?next=")


# --- case list --------------------------------------------------------------------------------


def test_case_list_shows_only_member_cases(
    lawyer_client: Client, case: Case, other_case: Case
) -> None:
    response = lawyer_client.get("/")

    assert response.status_code == 200
    html = response.content.decode()
    assert "CV-2026-0001" in html
    assert "Acme v. Widget" in html
    assert "CV-2026-0999" not in html
    assert "Other v. Matter" not in html
    assert [c.pk for c in response.context["cases"]] == [case.pk]


def test_case_list_counts_every_member_of_each_case(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    MembershipFactory(case=case, role=Membership.Role.STAFF)

    response = lawyer_client.get("/")

    (listed,) = response.context["cases"]
    assert listed.member_count == 3
    assert '<td class="num">3</td>' in response.content.decode()


def test_case_list_queries_do_not_grow_with_cases(
    lawyer: User, lawyer_client: Client, django_assert_max_num_queries: object
) -> None:
    for _ in range(20):
        case = CaseFactory(created_by=lawyer)
        MembershipFactory(case=case, user=lawyer, role=Membership.Role.LAWYER)

    # session, user, cases (with their member counts)
    with django_assert_max_num_queries(3):  # type: ignore[operator]
        response = lawyer_client.get("/")

    assert len(response.context["cases"]) == 20


def test_only_lawyers_see_the_open_a_case_button(
    lawyer_client: Client, staff_client: Client, case: Case
) -> None:
    assert 'href="/cases/new/"' in lawyer_client.get("/").content.decode()
    assert 'href="/cases/new/"' not in staff_client.get("/").content.decode()


# --- case form --------------------------------------------------------------------------------


def test_lawyer_opens_a_case_with_the_form(lawyer: User, lawyer_client: Client) -> None:
    assert lawyer_client.get("/cases/new/").status_code == 200

    response = lawyer_client.post(
        "/cases/new/",
        {"title": "  Acme  v. Widget ", "number": "CV-77", "court": "", "client": "Acme"},
    )

    case = Case.objects.get(number="CV-77")
    assert response.status_code == 302
    assert response["Location"] == f"/cases/{case.pk}/"
    assert case.title == "Acme v. Widget"
    assert _roles(case) == {"lawyer@firm.test": "lawyer"}
    assert "Case CV-77 is open." in _messages(response)


def test_staff_cannot_open_a_case(staff_client: Client) -> None:
    shown = staff_client.get("/cases/new/")
    posted = staff_client.post("/cases/new/", {"title": "T", "number": "N", "client": "C"})

    for response in (shown, posted):
        assert response.status_code == 302
        assert response["Location"] == "/"
        assert "Only lawyers and admins open cases." in _messages(response)
    assert not Case.objects.exists()


# --- case detail ------------------------------------------------------------------------------


def test_case_detail_shows_members_and_the_event_stream(lawyer_client: Client, case: Case) -> None:
    response = lawyer_client.get(f"/cases/{case.pk}/")

    assert response.status_code == 200
    html = response.content.decode()
    assert f'data-case-stream="/ws/cases/{case.pk}/events/"' in html
    for text in ("Laura Lawyer", "lawyer@firm.test", "Sam Staff", "staff@firm.test"):
        assert text in html
    assert f'action="/cases/{case.pk}/members/"' in html


def test_case_detail_view_is_audited(lawyer: User, lawyer_client: Client, case: Case) -> None:
    lawyer_client.get(f"/cases/{case.pk}/")

    event = AuditEvent.objects.get(action="case.view")
    assert (event.case_id, event.actor_id, event.via) == (case.pk, lawyer.pk, "web")


def test_staff_sees_members_but_no_management_forms(staff_client: Client, case: Case) -> None:
    response = staff_client.get(f"/cases/{case.pk}/")

    html = response.content.decode()
    assert response.status_code == 200
    assert "Laura Lawyer" in html
    assert f'action="/cases/{case.pk}/members/"' not in html
    assert "/remove/" not in html
    assert "/role/" not in html


# --- member management ------------------------------------------------------------------------


def test_lawyer_adds_a_member(lawyer_client: Client, case: Case, colleague: User) -> None:
    response = lawyer_client.post(
        f"/cases/{case.pk}/members/", {"email": "Colleague@firm.test", "role": "lawyer"}
    )

    assert response.status_code == 302
    assert response["Location"] == f"/cases/{case.pk}/"
    assert _roles(case)["colleague@firm.test"] == "lawyer"
    assert "Cora Colleague now has access to this case." in _messages(response)
    assert "Cora Colleague" in lawyer_client.get(f"/cases/{case.pk}/").content.decode()


def test_lawyer_changes_a_role(lawyer_client: Client, case: Case, colleague: User) -> None:
    MembershipFactory(case=case, user=colleague, role=Membership.Role.STAFF)

    response = lawyer_client.post(
        f"/cases/{case.pk}/members/{colleague.pk}/role/", {"role": "lawyer"}
    )

    assert response.status_code == 302
    assert _roles(case)["colleague@firm.test"] == "lawyer"
    assert "Role changed." in _messages(response)


def test_lawyer_removes_a_member(lawyer_client: Client, staff: User, case: Case) -> None:
    response = lawyer_client.post(f"/cases/{case.pk}/members/{staff.pk}/remove/")

    assert response.status_code == 302
    assert "staff@firm.test" not in _roles(case)
    assert "Member removed; their access ended now." in _messages(response)
    assert session_client(staff).get(f"/cases/{case.pk}/").status_code == 404


def test_last_lawyer_cannot_leave_or_be_demoted(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    removed = lawyer_client.post(f"/cases/{case.pk}/members/{lawyer.pk}/remove/")
    demoted = lawyer_client.post(f"/cases/{case.pk}/members/{lawyer.pk}/role/", {"role": "staff"})

    for response in (removed, demoted):
        assert response.status_code == 302
        assert "A case keeps at least one lawyer." in _messages(response)
    assert _roles(case)["lawyer@firm.test"] == "lawyer"


def test_staff_user_cannot_be_made_lawyer(lawyer_client: Client, staff: User, case: Case) -> None:
    response = lawyer_client.post(f"/cases/{case.pk}/members/{staff.pk}/role/", {"role": "lawyer"})

    assert any("cannot hold the lawyer role" in m for m in _messages(response))
    assert _roles(case)["staff@firm.test"] == "staff"


def test_staff_cannot_manage_members(
    staff_client: Client, lawyer: User, staff: User, case: Case, colleague: User
) -> None:
    before = _roles(case)

    responses = [
        staff_client.post(
            f"/cases/{case.pk}/members/", {"email": colleague.email, "role": "staff"}
        ),
        staff_client.post(f"/cases/{case.pk}/members/{lawyer.pk}/role/", {"role": "staff"}),
        staff_client.post(f"/cases/{case.pk}/members/{lawyer.pk}/remove/"),
        staff_client.post(f"/cases/{case.pk}/members/{staff.pk}/remove/"),
    ]

    for response in responses:
        assert response.status_code == 302
        assert response["Location"] == f"/cases/{case.pk}/"
        assert "Only lawyers on this case manage its members." in _messages(response)
    assert _roles(case) == before
    assert not AuditEvent.objects.filter(action__startswith="case.member").exists()


def test_member_pages_refuse_get(lawyer_client: Client, staff: User, case: Case) -> None:
    for path in (
        f"/cases/{case.pk}/members/",
        f"/cases/{case.pk}/members/{staff.pk}/role/",
        f"/cases/{case.pk}/members/{staff.pk}/remove/",
        f"/cases/{case.pk}/worker-check/",
    ):
        assert lawyer_client.get(path).status_code == 405
    assert "staff@firm.test" in _roles(case)


def test_worker_check_button_queues_a_job(staff: User, staff_client: Client, case: Case) -> None:
    response = staff_client.post(f"/cases/{case.pk}/worker-check/")

    assert response.status_code == 302
    job = ProcrastinateJob.objects.get(task_name="cases.worker_check")
    assert job.status == "todo"
    assert (job.args["case_id"], job.args["requested_by"]) == (case.pk, staff.pk)
    assert any("Check queued" in m for m in _messages(response))


def test_web_post_without_csrf_token_is_refused(lawyer: User, staff: User, case: Case) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(lawyer)

    response = client.post(f"/cases/{case.pk}/members/{staff.pk}/remove/")

    assert response.status_code == 403
    assert "staff@firm.test" in _roles(case)


# --- outsiders --------------------------------------------------------------------------------


def test_outsider_gets_404_on_every_case_page(
    outsider_client: Client, lawyer: User, staff: User, case: Case
) -> None:
    before = _roles(case)
    responses = [
        outsider_client.get(f"/cases/{case.pk}/"),
        outsider_client.post(f"/cases/{case.pk}/members/", {"email": "outsider@firm.test"}),
        outsider_client.post(f"/cases/{case.pk}/members/{staff.pk}/role/", {"role": "lawyer"}),
        outsider_client.post(f"/cases/{case.pk}/members/{staff.pk}/remove/"),
        outsider_client.post(f"/cases/{case.pk}/members/{lawyer.pk}/remove/"),
        outsider_client.post(f"/cases/{case.pk}/worker-check/"),
    ]

    for response in responses:
        assert response.status_code == 404
        assert "Acme v. Widget" not in response.content.decode()
    assert _roles(case) == before
    assert not ProcrastinateJob.objects.exists()
    assert not AuditEvent.objects.filter(case=case).exists()


@pytest.mark.parametrize("case_id", ["0", "987654321", str(2**63), str(2**70)])
def test_unknown_or_huge_case_ids_are_404(lawyer_client: Client, case: Case, case_id: str) -> None:
    assert lawyer_client.get(f"/cases/{case_id}/").status_code == 404
    assert lawyer_client.post(f"/cases/{case_id}/worker-check/").status_code == 404


def test_huge_user_id_is_a_message_not_an_error(lawyer_client: Client, case: Case) -> None:
    response = lawyer_client.post(f"/cases/{case.pk}/members/{2**70}/remove/")

    assert response.status_code == 302
    assert any("is not a member of this case" in m for m in _messages(response))
    assert Membership.objects.filter(case=case).count() == 2
