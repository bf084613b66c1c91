"""The cases REST API under /api/v1/: bearer tokens and browser sessions, members only."""

import json

import pytest
from django.test import Client
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case, Membership
from tests.conftest import session_client, token_client
from tests.factories import CaseFactory, MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

JSON = "application/json"


def _post(client: Client, path: str, body: object) -> object:
    return client.post(path, json.dumps(body), content_type=JSON)


def _patch(client: Client, path: str, body: object) -> object:
    return client.patch(path, json.dumps(body), content_type=JSON)


def _assert_error(response: object, status: int, code: str) -> dict[str, object]:
    assert response.status_code == status, response.content  # type: ignore[attr-defined]
    body: dict[str, object] = response.json()  # type: ignore[attr-defined]
    assert body["code"] == code
    assert isinstance(body["detail"], str)
    assert body["detail"]
    return body


def _member_cases(user: User, count: int) -> list[Case]:
    cases = []
    for _ in range(count):
        case = CaseFactory(created_by=user)
        MembershipFactory(case=case, user=user, role=Membership.Role.LAWYER)
        MembershipFactory(case=case, role=Membership.Role.STAFF)
        cases.append(case)
    return cases


# --- list -------------------------------------------------------------------------------------


def test_list_returns_only_member_cases(lawyer_api: Client, case: Case, other_case: Case) -> None:
    response = lawyer_api.get("/api/v1/cases")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    assert [item["id"] for item in body["items"]] == [case.pk]
    assert set(body["items"][0]) == {
        "id",
        "title",
        "number",
        "court",
        "client",
        "status",
        "created_at",
    }
    assert body["items"][0]["number"] == "CV-2026-0001"


def test_outsider_sees_only_their_own_case(
    outsider_api: Client, case: Case, other_case: Case
) -> None:
    body = outsider_api.get("/api/v1/cases").json()

    assert [item["id"] for item in body["items"]] == [other_case.pk]


def test_user_without_cases_gets_an_empty_page(db: None) -> None:
    loner = UserFactory(role=User.Role.LAWYER)
    CaseFactory()

    body = session_client(loner).get("/api/v1/cases").json()

    assert body == {"items": [], "count": 0, "next": None}


def test_list_pages_with_limit_and_offset_newest_first(lawyer: User, lawyer_api: Client) -> None:
    cases = _member_cases(lawyer, 5)
    newest_first = [c.pk for c in sorted(cases, key=lambda c: (c.created_at, c.pk), reverse=True)]

    first = lawyer_api.get("/api/v1/cases", {"limit": 2}).json()
    second = lawyer_api.get("/api/v1/cases", {"limit": 2, "offset": 2}).json()
    last = lawyer_api.get("/api/v1/cases", {"limit": 2, "offset": 4}).json()
    beyond = lawyer_api.get("/api/v1/cases", {"limit": 2, "offset": 50}).json()

    assert first["count"] == second["count"] == last["count"] == 5
    pages = [item["id"] for page in (first, second, last) for item in page["items"]]
    assert pages == newest_first
    assert beyond == {"items": [], "count": 5, "next": None}


def test_default_page_size_is_fifty(lawyer: User, lawyer_api: Client) -> None:
    _member_cases(lawyer, 51)

    body = lawyer_api.get("/api/v1/cases").json()

    assert body["count"] == 51
    assert len(body["items"]) == 50


@pytest.mark.parametrize(
    "params",
    [{"limit": 201}, {"limit": 0}, {"limit": -1}, {"offset": -1}, {"limit": "ten"}],
)
def test_bad_pagination_is_422(lawyer_api: Client, case: Case, params: dict[str, object]) -> None:
    response = lawyer_api.get("/api/v1/cases", params)

    body = _assert_error(response, 422, "invalid")
    assert isinstance(body["errors"], list)
    assert body["errors"]


def test_limit_of_two_hundred_is_allowed(lawyer_api: Client, case: Case) -> None:
    response = lawyer_api.get("/api/v1/cases", {"limit": 200})

    assert response.status_code == 200
    assert response.json()["count"] == 1


# token: token, count, page; session: session, user, count, page.
@pytest.mark.parametrize(("how", "ceiling"), [("token", 3), ("session", 4)])
def test_case_list_queries_do_not_grow_with_cases(
    lawyer: User, django_assert_max_num_queries: object, how: str, ceiling: int
) -> None:
    _member_cases(lawyer, 30)
    client = session_client(lawyer) if how == "session" else token_client(lawyer)
    client.get("/api/v1/cases")  # first use of a token records last_used_at

    with django_assert_max_num_queries(ceiling):  # type: ignore[operator]
        response = client.get("/api/v1/cases", {"limit": 200})

    assert len(response.json()["items"]) == 30


def test_member_list_queries_do_not_grow_with_members(
    lawyer: User, lawyer_api: Client, case: Case, django_assert_max_num_queries: object
) -> None:
    for _ in range(25):
        MembershipFactory(case=case, role=Membership.Role.STAFF)
    lawyer_api.get("/api/v1/me")

    # token, case membership check, the read's audit row, count, page (users joined, not
    # fetched one by one)
    with django_assert_max_num_queries(5):  # type: ignore[operator]
        response = lawyer_api.get(f"/api/v1/cases/{case.pk}/members", {"limit": 200})

    assert response.json()["count"] == 27


# --- create -----------------------------------------------------------------------------------


def test_lawyer_creates_a_case(lawyer: User, lawyer_api: Client) -> None:
    response = _post(
        lawyer_api,
        "/api/v1/cases",
        {"title": " Acme  v. Widget ", "number": "CV-9", "client": "Acme", "court": "High"},
    )

    assert response.status_code == 201
    body = response.json()
    case = Case.objects.get(pk=body["id"])
    assert body["title"] == case.title == "Acme v. Widget"
    assert (body["number"], body["client"], body["court"], body["status"]) == (
        "CV-9",
        "Acme",
        "High",
        "open",
    )
    assert Membership.objects.get(case=case).user == lawyer
    event = AuditEvent.objects.get(action="case.create")
    assert (event.case_id, event.via) == (case.pk, "api")


def test_court_is_optional(lawyer_api: Client) -> None:
    response = _post(lawyer_api, "/api/v1/cases", {"title": "T", "number": "N", "client": "C"})

    assert response.status_code == 201
    assert response.json()["court"] == ""


def test_staff_cannot_create_a_case(staff_api: Client) -> None:
    response = _post(staff_api, "/api/v1/cases", {"title": "T", "number": "N", "client": "C"})

    _assert_error(response, 403, "forbidden")
    assert not Case.objects.exists()


def test_duplicate_number_is_409(lawyer_api: Client, case: Case) -> None:
    response = _post(
        lawyer_api,
        "/api/v1/cases",
        {"title": "T", "number": "cv-2026-0001", "client": "C", "court": "SUPERIOR COURT"},
    )

    _assert_error(response, 409, "conflict")
    assert Case.objects.count() == 1


def test_blank_after_trimming_is_400(lawyer_api: Client) -> None:
    response = _post(lawyer_api, "/api/v1/cases", {"title": "   ", "number": "N", "client": "C"})

    body = _assert_error(response, 400, "invalid")
    assert "title" in str(body["detail"])
    assert not Case.objects.exists()


# --- get and patch ----------------------------------------------------------------------------


def test_member_gets_a_case(staff_api: Client, case: Case) -> None:
    response = staff_api.get(f"/api/v1/cases/{case.pk}")

    assert response.status_code == 200
    assert response.json()["id"] == case.pk
    assert response.json()["title"] == "Acme v. Widget"


def test_unknown_case_is_404(lawyer_api: Client, case: Case) -> None:
    _assert_error(lawyer_api.get(f"/api/v1/cases/{case.pk + 1000}"), 404, "not_found")


def test_patch_changes_only_what_is_sent(lawyer_api: Client, case: Case) -> None:
    response = _patch(lawyer_api, f"/api/v1/cases/{case.pk}", {"status": "closed"})

    assert response.status_code == 200
    assert response.json()["status"] == "closed"
    case.refresh_from_db()
    assert (case.status, case.title, case.client) == ("closed", "Acme v. Widget", "Acme Corp.")
    assert AuditEvent.objects.get(action="case.update").detail == {"fields": "status"}


def test_patch_text_is_normalised(lawyer_api: Client, case: Case) -> None:
    response = _patch(lawyer_api, f"/api/v1/cases/{case.pk}", {"title": "  Renamed\t case "})

    assert response.json()["title"] == "Renamed case"
    case.refresh_from_db()
    assert case.title == "Renamed case"


def test_patch_with_null_changes_nothing(lawyer_api: Client, case: Case) -> None:
    response = _patch(lawyer_api, f"/api/v1/cases/{case.pk}", {"title": None})

    assert response.status_code == 200
    case.refresh_from_db()
    assert case.title == "Acme v. Widget"


def test_patch_bad_status_is_422(lawyer_api: Client, case: Case) -> None:
    response = _patch(lawyer_api, f"/api/v1/cases/{case.pk}", {"status": "archived"})

    _assert_error(response, 422, "invalid")
    case.refresh_from_db()
    assert case.status == "open"


def test_patch_to_a_taken_number_is_409(lawyer: User, lawyer_api: Client, case: Case) -> None:
    # Taken by another case of the lawyer's (one they cannot see is allowed: test_case_number_leak)
    MembershipFactory(case=CaseFactory(number="CV-TAKEN", court="Superior Court"), user=lawyer)

    response = _patch(lawyer_api, f"/api/v1/cases/{case.pk}", {"number": "cv-taken"})

    _assert_error(response, 409, "conflict")
    case.refresh_from_db()
    assert case.number == "CV-2026-0001"


def test_outsider_cannot_patch(outsider_api: Client, case: Case) -> None:
    response = _patch(outsider_api, f"/api/v1/cases/{case.pk}", {"title": "Mine now"})

    _assert_error(response, 404, "not_found")
    case.refresh_from_db()
    assert case.title == "Acme v. Widget"


# --- members ----------------------------------------------------------------------------------


def test_members_list_shows_users_and_roles(staff_api: Client, case: Case) -> None:
    response = staff_api.get(f"/api/v1/cases/{case.pk}/members")

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 2
    assert [(m["user"]["email"], m["role"]) for m in body["items"]] == [
        ("lawyer@firm.test", "lawyer"),
        ("staff@firm.test", "staff"),
    ]
    assert set(body["items"][0]["user"]) == {"id", "email", "full_name", "role"}


def test_members_list_pages(lawyer_api: Client, case: Case) -> None:
    body = lawyer_api.get(f"/api/v1/cases/{case.pk}/members", {"limit": 1, "offset": 1}).json()

    assert body["count"] == 2
    assert [m["user"]["email"] for m in body["items"]] == ["staff@firm.test"]


def test_outsider_cannot_list_members(outsider_api: Client, case: Case) -> None:
    _assert_error(outsider_api.get(f"/api/v1/cases/{case.pk}/members"), 404, "not_found")


def test_lawyer_adds_a_member(lawyer_api: Client, case: Case) -> None:
    colleague = UserFactory(email="colleague@firm.test", role=User.Role.LAWYER)

    response = _post(
        lawyer_api,
        f"/api/v1/cases/{case.pk}/members",
        {"email": "Colleague@Firm.test", "role": "lawyer"},
    )

    assert response.status_code == 201
    assert response.json()["user"]["id"] == colleague.pk
    assert response.json()["role"] == "lawyer"
    assert Membership.objects.get(case=case, user=colleague).role == "lawyer"


def test_member_role_defaults_to_staff(lawyer_api: Client, case: Case) -> None:
    colleague = UserFactory(role=User.Role.LAWYER)

    response = _post(lawyer_api, f"/api/v1/cases/{case.pk}/members", {"email": colleague.email})

    assert response.status_code == 201
    assert Membership.objects.get(case=case, user=colleague).role == "staff"


def test_staff_cannot_add_members(staff_api: Client, case: Case) -> None:
    colleague = UserFactory()

    response = _post(staff_api, f"/api/v1/cases/{case.pk}/members", {"email": colleague.email})

    _assert_error(response, 403, "forbidden")
    assert not Membership.objects.filter(user=colleague).exists()


def test_adding_an_existing_member_is_409(lawyer_api: Client, case: Case) -> None:
    response = _post(lawyer_api, f"/api/v1/cases/{case.pk}/members", {"email": "staff@firm.test"})

    _assert_error(response, 409, "conflict")
    assert Membership.objects.filter(case=case).count() == 2


def test_adding_an_unknown_email_is_404(lawyer_api: Client, case: Case) -> None:
    response = _post(lawyer_api, f"/api/v1/cases/{case.pk}/members", {"email": "no@firm.test"})

    _assert_error(response, 404, "not_found")
    assert Membership.objects.filter(case=case).count() == 2


def test_staff_user_as_lawyer_is_400(lawyer_api: Client, case: Case) -> None:
    clerk = UserFactory(role=User.Role.STAFF)

    response = _post(
        lawyer_api, f"/api/v1/cases/{case.pk}/members", {"email": clerk.email, "role": "lawyer"}
    )

    _assert_error(response, 400, "invalid")
    assert not Membership.objects.filter(user=clerk).exists()


def test_lawyer_changes_a_role(lawyer_api: Client, case: Case) -> None:
    colleague = UserFactory(role=User.Role.LAWYER)
    MembershipFactory(case=case, user=colleague, role=Membership.Role.STAFF)

    response = _patch(
        lawyer_api, f"/api/v1/cases/{case.pk}/members/{colleague.pk}", {"role": "lawyer"}
    )

    assert response.status_code == 200
    assert response.json()["role"] == "lawyer"
    assert response.json()["user"]["email"] == colleague.email
    assert Membership.objects.get(case=case, user=colleague).role == "lawyer"


def test_demoting_the_last_lawyer_is_409(lawyer: User, lawyer_api: Client, case: Case) -> None:
    response = _patch(lawyer_api, f"/api/v1/cases/{case.pk}/members/{lawyer.pk}", {"role": "staff"})

    body = _assert_error(response, 409, "conflict")
    assert "at least one lawyer" in str(body["detail"])
    assert Membership.objects.get(case=case, user=lawyer).role == "lawyer"


def test_staff_cannot_change_roles(lawyer: User, staff_api: Client, case: Case) -> None:
    response = _patch(staff_api, f"/api/v1/cases/{case.pk}/members/{lawyer.pk}", {"role": "staff"})

    _assert_error(response, 403, "forbidden")
    assert Membership.objects.get(case=case, user=lawyer).role == "lawyer"


def test_changing_a_non_member_is_404(outsider: User, lawyer_api: Client, case: Case) -> None:
    response = _patch(
        lawyer_api, f"/api/v1/cases/{case.pk}/members/{outsider.pk}", {"role": "staff"}
    )

    _assert_error(response, 404, "not_found")
    assert not Membership.objects.filter(case=case, user=outsider).exists()


def test_lawyer_removes_a_member(staff: User, lawyer_api: Client, case: Case) -> None:
    response = lawyer_api.delete(f"/api/v1/cases/{case.pk}/members/{staff.pk}")

    assert response.status_code == 204
    assert response.content == b""
    assert not Membership.objects.filter(case=case, user=staff).exists()
    assert AuditEvent.objects.get(action="case.member_remove").case_id == case.pk


def test_removing_the_last_lawyer_is_409(lawyer: User, lawyer_api: Client, case: Case) -> None:
    response = lawyer_api.delete(f"/api/v1/cases/{case.pk}/members/{lawyer.pk}")

    _assert_error(response, 409, "conflict")
    assert Membership.objects.filter(case=case, user=lawyer).exists()


def test_staff_cannot_remove_members(lawyer: User, staff_api: Client, case: Case) -> None:
    response = staff_api.delete(f"/api/v1/cases/{case.pk}/members/{lawyer.pk}")

    _assert_error(response, 403, "forbidden")
    assert Membership.objects.filter(case=case).count() == 2


def test_removed_member_loses_access_at_once(staff: User, lawyer_api: Client, case: Case) -> None:
    staff_api = token_client(staff)
    assert staff_api.get(f"/api/v1/cases/{case.pk}").status_code == 200

    lawyer_api.delete(f"/api/v1/cases/{case.pk}/members/{staff.pk}")

    _assert_error(staff_api.get(f"/api/v1/cases/{case.pk}"), 404, "not_found")
    assert staff_api.get("/api/v1/cases").json()["count"] == 0


# --- worker check -----------------------------------------------------------------------------


@pytest.mark.parametrize("who", ["lawyer", "staff"])
def test_worker_check_queues_a_job(who: str, lawyer: User, staff: User, case: Case) -> None:
    user = lawyer if who == "lawyer" else staff

    response = token_client(user).post(f"/api/v1/cases/{case.pk}/worker-check")

    assert response.status_code == 202
    job_id = response.json()["job_id"]
    job = ProcrastinateJob.objects.get(id=job_id)
    assert (job.task_name, job.status) == ("cases.worker_check", "todo")
    assert job.args["case_id"] == case.pk
    assert job.args["requested_by"] == user.pk


def test_worker_check_on_a_foreign_case_queues_nothing(outsider_api: Client, case: Case) -> None:
    response = outsider_api.post(f"/api/v1/cases/{case.pk}/worker-check")

    _assert_error(response, 404, "not_found")
    assert not ProcrastinateJob.objects.filter(task_name="cases.worker_check").exists()


# --- authentication ---------------------------------------------------------------------------


def test_anonymous_gets_401_everywhere(case: Case) -> None:
    client = Client()

    for response in (
        client.get("/api/v1/cases"),
        client.get(f"/api/v1/cases/{case.pk}"),
        _post(client, "/api/v1/cases", {"title": "T", "number": "N", "client": "C"}),
        client.delete(f"/api/v1/cases/{case.pk}/members/1"),
    ):
        _assert_error(response, 401, "unauthenticated")
        assert response["WWW-Authenticate"] == "Bearer"
    assert Case.objects.count() == 1


def test_session_client_reads_and_writes_with_a_csrf_token(lawyer: User, case: Case) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(lawyer)
    client.get("/")  # the page sets the CSRF cookie, as a browser would get it
    csrf = client.cookies["csrftoken"].value

    listed = client.get("/api/v1/cases")
    created = client.post(
        "/api/v1/cases",
        json.dumps({"title": "T", "number": "N", "client": "C"}),
        content_type=JSON,
        headers={"x-csrftoken": csrf},
    )

    assert listed.json()["count"] == 1
    assert created.status_code == 201


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("post", "/api/v1/cases", {"title": "T", "number": "N", "client": "C"}),
        ("patch", "/api/v1/cases/{case}", {"title": "Changed"}),
        ("post", "/api/v1/cases/{case}/members", {"email": "outsider@firm.test"}),
        ("patch", "/api/v1/cases/{case}/members/{staff}", {"role": "lawyer"}),
        ("delete", "/api/v1/cases/{case}/members/{staff}", None),
        ("post", "/api/v1/cases/{case}/worker-check", None),
    ],
)
def test_session_writes_without_csrf_token_are_refused(
    lawyer: User,
    staff: User,
    outsider: User,
    case: Case,
    method: str,
    path: str,
    body: object,
) -> None:
    client = Client(enforce_csrf_checks=True)
    client.force_login(lawyer)
    staff.role = User.Role.LAWYER
    staff.save()
    url = path.format(case=case.pk, staff=staff.pk)
    data = json.dumps(body) if body is not None else ""

    response = getattr(client, method)(url, data, content_type=JSON)

    _assert_error(response, 403, "forbidden")
    case.refresh_from_db()
    assert case.title == "Acme v. Widget"
    assert Case.objects.count() == 1
    assert Membership.objects.get(case=case, user=staff).role == "staff"
    assert not Membership.objects.filter(user=outsider).exists()
    assert not ProcrastinateJob.objects.exists()


def test_bearer_token_needs_no_csrf_token(lawyer: User) -> None:
    from apps.accounts import services as account_services

    issued = account_services.token_create(user=lawyer, name="agent")
    client = Client(enforce_csrf_checks=True, headers={"authorization": f"Bearer {issued.secret}"})

    response = _post(client, "/api/v1/cases", {"title": "T", "number": "N", "client": "C"})

    assert response.status_code == 201
