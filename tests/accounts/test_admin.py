"""The Django admin is for admins; its forms go through the services and refuse bad input."""

import re

import pytest
from django.test import Client

from apps.accounts import services
from apps.accounts.models import ApiToken, AuditEvent, User
from tests.conftest import session_client

pytestmark = pytest.mark.django_db

ADD_URL = "/admin/accounts/user/add/"


def _add(client: Client, **fields: str) -> object:
    data = {
        "email": "new.person@firm.test",
        "full_name": "New Person",
        "role": "lawyer",
        "password": "A-good-long-passphrase-7",
    }
    data.update(fields)
    return client.post(ADD_URL, data)


def test_admin_creates_a_user_through_the_service_and_it_is_audited(admin_user: User) -> None:
    response = _add(session_client(admin_user))

    assert response.status_code == 302
    created = User.objects.get(email="new.person@firm.test")
    assert created.role == "lawyer" and not created.is_staff
    assert created.check_password("A-good-long-passphrase-7")
    assert AuditEvent.objects.filter(action="user.create", actor=admin_user).count() == 1


@pytest.mark.parametrize(
    "fields",
    [
        {"email": "not-an-email"},
        {"email": ""},
        {"email": "x" * 250 + "@firm.test"},
        {"password": "short"},
        {"password": "12345678901234"},
        {"role": "superhero"},
        {"full_name": "N" * 201},
    ],
)
def test_bad_user_forms_show_errors_and_store_nothing(
    admin_user: User, fields: dict[str, str]
) -> None:
    before = User.objects.count()

    response = _add(session_client(admin_user), **fields)

    assert response.status_code == 200
    assert response.context["adminform"].form.errors
    assert User.objects.count() == before


def test_duplicate_email_differing_only_in_case_is_refused(admin_user: User, lawyer: User) -> None:
    response = _add(session_client(admin_user), email="LAWYER@firm.test")

    assert response.status_code == 200
    assert User.objects.filter(email__iexact="lawyer@firm.test").count() == 1


def test_changing_a_role_to_admin_grants_the_admin_site_and_back(
    admin_user: User, lawyer: User
) -> None:
    client = session_client(admin_user)
    url = f"/admin/accounts/user/{lawyer.pk}/change/"
    data = {
        "email": lawyer.email,
        "full_name": lawyer.full_name,
        "role": "admin",
        "is_active": "on",
    }

    assert client.post(url, data).status_code == 302
    lawyer.refresh_from_db()
    assert lawyer.is_staff and lawyer.is_superuser

    assert client.post(url, {**data, "role": "staff"}).status_code == 302
    lawyer.refresh_from_db()
    assert not lawyer.is_staff and not lawyer.is_superuser


def test_people_who_are_not_admins_never_reach_the_admin(lawyer: User, staff: User) -> None:
    for user in (lawyer, staff):
        response = session_client(user).get("/admin/")
        assert response.status_code == 302 and "/admin/login/" in response["Location"]


def test_database_refuses_admin_site_access_for_non_admin_roles(lawyer: User) -> None:
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        User.objects.filter(pk=lawyer.pk).update(is_staff=True)


def test_admin_sees_token_metadata_never_secrets_and_can_revoke(
    admin_user: User, lawyer: User
) -> None:
    issued = services.token_create(user=lawyer, name="agent")
    client = session_client(admin_user)

    page = client.get("/admin/accounts/apitoken/").content.decode()
    assert "agent" in page and issued.secret not in page and issued.token.digest not in page

    response = client.post(
        "/admin/accounts/apitoken/",
        {"action": "revoke", "_selected_action": [issued.token.pk]},
    )
    assert response.status_code == 302
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is not None
    assert client.get(f"/admin/accounts/apitoken/{issued.token.pk}/delete/").status_code == 403


def test_the_last_active_admin_cannot_be_demoted_or_deactivated(admin_user: User) -> None:
    client = session_client(admin_user)
    url = f"/admin/accounts/user/{admin_user.pk}/change/"
    data = {"email": admin_user.email, "full_name": admin_user.full_name, "role": "admin"}

    demoted = client.post(url, {**data, "role": "lawyer", "is_active": "on"})
    deactivated = client.post(url, data)  # is_active unticked

    for response in (demoted, deactivated):
        assert response.status_code == 200
        assert "last active admin" in response.content.decode()
    admin_user.refresh_from_db()
    assert admin_user.role == "admin" and admin_user.is_active and admin_user.is_staff


def test_editing_a_case_in_the_admin_goes_through_the_service_and_is_audited(
    admin_user: User, case: object
) -> None:
    from apps.cases.models import Case, Membership

    assert isinstance(case, Case)
    Membership.objects.create(case=case, user=admin_user, role="staff")
    client = session_client(admin_user)
    url = f"/admin/cases/case/{case.pk}/change/"
    # Submit what the page holds (inline management form included), as a browser would.
    page = client.get(url).content.decode()
    data = dict(re.findall(r'name="([^"]+)"[^>]*value="([^"]*)"', page))
    data.update(title="  Acme   v. Widget (amended) ", status="stayed")

    response = client.post(url, data)

    assert response.status_code == 302
    case.refresh_from_db()
    assert (case.title, case.status) == ("Acme v. Widget (amended)", "stayed")
    event = AuditEvent.objects.get(action="case.update", case=case)
    assert event.actor == admin_user and event.detail["fields"] == "status,title"
