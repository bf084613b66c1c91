"""The admin's people page (issue 25 req 5): create, change, deactivate, set a password, in the
app rather than the Django admin; only admins reach it; bad input gets a form error."""

import pytest
from django.test import Client

from apps.accounts import services
from apps.accounts.models import AuditEvent, User
from lexweb.errors import DomainError
from tests.conftest import session_client
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

PEOPLE = "/accounts/people/"
GOOD = "A-good-long-passphrase-7"


def _create(client: Client, **fields: str) -> object:
    data = {
        "full_name": "Nora New",
        "email": "nora.new@firm.test",
        "role": "lawyer",
        "password": GOOD,
        "again": GOOD,
    }
    data.update(fields)
    return client.post(PEOPLE, data)


# --- who reaches it ---------------------------------------------------------------------------


def test_anonymous_is_sent_to_sign_in(client: Client, admin_user: User) -> None:
    for path in (PEOPLE, f"{PEOPLE}{admin_user.pk}/"):
        response = client.get(path)
        assert response.status_code == 302
        assert response["Location"].startswith("/accounts/login/")


@pytest.mark.parametrize("who", ["lawyer", "staff"])
def test_lawyer_and_staff_get_403_and_change_nothing(
    who: str, lawyer: User, staff: User, admin_user: User
) -> None:
    client = session_client(lawyer if who == "lawyer" else staff)
    target = staff if who == "lawyer" else lawyer
    responses = [
        client.get(PEOPLE),
        _create(client),
        client.get(f"{PEOPLE}{target.pk}/"),
        client.post(
            f"{PEOPLE}{target.pk}/", {"full_name": "X", "email": target.email, "role": "admin"}
        ),
        client.post(f"{PEOPLE}{target.pk}/password/", {"password": GOOD, "again": GOOD}),
        client.post(f"{PEOPLE}{target.pk}/active/", {"active": "0"}),
    ]

    assert [r.status_code for r in responses] == [403] * 6
    assert not User.objects.filter(email="nora.new@firm.test").exists()
    target.refresh_from_db()
    assert target.is_active and target.role != "admin" and target.check_password(PASSWORD)
    assert not AuditEvent.objects.filter(action__startswith="user.").exists()


def test_only_admins_see_the_people_link(lawyer: User, admin_user: User) -> None:
    assert 'href="/accounts/people/"' not in session_client(lawyer).get("/").content.decode()
    assert 'href="/accounts/people/"' in session_client(admin_user).get("/").content.decode()


# --- creating ---------------------------------------------------------------------------------


def test_admin_creates_a_lawyer_with_a_password_audited(admin_user: User) -> None:
    client = session_client(admin_user)
    response = _create(client)

    created = User.objects.get(email="nora.new@firm.test")
    assert response.status_code == 302
    assert response["Location"] == f"{PEOPLE}{created.pk}/"
    assert created.role == "lawyer" and created.is_active and not created.is_staff
    assert created.check_password(GOOD)
    event = AuditEvent.objects.get(action="user.create")
    assert event.actor == admin_user and event.target_id == str(created.pk)
    assert GOOD not in str(event.detail)
    listing = client.get(PEOPLE).content.decode()
    assert "Nora New" in listing and "nora.new@firm.test" in listing


def test_admin_creates_an_account_without_a_password(admin_user: User) -> None:
    response = _create(session_client(admin_user), password="", again="")

    created = User.objects.get(email="nora.new@firm.test")
    assert response.status_code == 302
    assert not created.has_usable_password()


def test_the_page_says_no_mail_is_configured(admin_user: User) -> None:
    html = session_client(admin_user).get(PEOPLE).content.decode()
    assert "no mail server is configured" in html


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"email": "staff@firm.test"}, "already exists"),
        ({"email": "STAFF@firm.test"}, "already exists"),
        ({"role": "judge"}, "Select a valid choice"),
        ({"role": ""}, "This field is required"),
        ({"full_name": "N" * 201}, "at most 200 characters"),
        ({"full_name": ""}, "This field is required"),
        ({"full_name": "Nora\x00New"}, "Null characters are not allowed"),
        ({"full_name": "Nora\x1bNew"}, "control characters"),
        ({"email": "not an address"}, "Enter a valid email address"),
        ({"email": "x" * 250 + "@firm.test"}, "at most 254 characters"),
        ({"password": "short", "again": "short"}, "too short"),
        ({"password": GOOD, "again": GOOD + "x"}, "The two passwords differ"),
    ],
)
def test_bad_input_gets_a_form_error_and_creates_nothing(
    admin_user: User, staff: User, fields: dict[str, str], error: str
) -> None:
    before = User.objects.count()

    response = _create(session_client(admin_user), **fields)

    assert response.status_code == 400
    assert error in response.content.decode()
    assert User.objects.count() == before
    assert not AuditEvent.objects.filter(action="user.create").exists()


def test_a_hostile_name_is_shown_as_text(admin_user: User) -> None:
    client = session_client(admin_user)
    _create(client, full_name='<script>alert("x")</script>')

    html = client.get(PEOPLE).content.decode()
    assert '<script>alert("x")</script>' not in html
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html


def test_the_list_finds_people_by_name_or_e_mail(
    admin_user: User, lawyer: User, staff: User
) -> None:
    client = session_client(admin_user)
    by_name = client.get(PEOPLE, {"q": lawyer.full_name.split()[0].lower()}).content.decode()
    by_mail = client.get(PEOPLE, {"q": "STAFF@"}).content.decode()
    assert lawyer.email in by_name and staff.email not in by_name
    assert staff.email in by_mail and lawyer.email not in by_mail
    assert client.get(PEOPLE, {"q": "%\x00_"}).status_code == 200


# --- changing, deactivating, passwords ----------------------------------------------------------


def test_admin_changes_a_role_and_admin_site_access_follows(admin_user: User, staff: User) -> None:
    response = session_client(admin_user).post(
        f"{PEOPLE}{staff.pk}/", {"full_name": "Sam Staff", "email": staff.email, "role": "admin"}
    )

    staff.refresh_from_db()
    assert response.status_code == 302
    assert staff.role == "admin" and staff.is_staff and staff.full_name == "Sam Staff"
    assert AuditEvent.objects.get(action="user.update").actor == admin_user


def test_changing_to_another_persons_e_mail_is_a_form_error(
    admin_user: User, lawyer: User, staff: User
) -> None:
    response = session_client(admin_user).post(
        f"{PEOPLE}{staff.pk}/",
        {"full_name": staff.full_name, "email": lawyer.email.upper(), "role": "staff"},
    )

    assert response.status_code == 400
    assert "already exists" in response.content.decode()
    staff.refresh_from_db()
    assert staff.email == "staff@firm.test"


def test_admin_deactivates_and_reactivates(admin_user: User, staff: User) -> None:
    client = session_client(admin_user)
    staff_client = session_client(staff)

    response = client.post(f"{PEOPLE}{staff.pk}/active/", {"active": "0"})

    staff.refresh_from_db()
    assert response.status_code == 302 and not staff.is_active
    assert staff_client.get("/").status_code == 302  # their session no longer works
    client.post(f"{PEOPLE}{staff.pk}/active/", {"active": "1"})
    staff.refresh_from_db()
    assert staff.is_active
    assert AuditEvent.objects.filter(action="user.update", actor=admin_user).count() == 2
    # Their session ended with the deactivation: reactivated, it does not come back (found by
    # tests/e2e/test_people_access_browser.py); they sign in again.
    assert staff_client.get("/").status_code == 302
    assert session_client(staff).get("/").status_code == 200
    # The admin's own session was not touched.
    assert client.get(PEOPLE).status_code == 200


def test_admin_cannot_deactivate_themselves(admin_user: User) -> None:
    client = session_client(admin_user)
    response = client.post(f"{PEOPLE}{admin_user.pk}/active/", {"active": "0"}, follow=True)

    admin_user.refresh_from_db()
    assert admin_user.is_active
    assert "You cannot deactivate your own account" in response.content.decode()


def test_the_last_admin_cannot_lose_the_role(admin_user: User) -> None:
    response = session_client(admin_user).post(
        f"{PEOPLE}{admin_user.pk}/",
        {"full_name": admin_user.full_name, "email": admin_user.email, "role": "staff"},
    )
    assert response.status_code == 400
    assert "last active admin" in response.content.decode()


def test_bad_active_value_changes_nothing(admin_user: User, staff: User) -> None:
    session_client(admin_user).post(f"{PEOPLE}{staff.pk}/active/", {"active": "maybe"})
    staff.refresh_from_db()
    assert staff.is_active
    assert not AuditEvent.objects.filter(action="user.update").exists()


def test_admin_sets_a_password_and_the_persons_sessions_end(admin_user: User, staff: User) -> None:
    staff_client = session_client(staff)
    assert staff_client.get("/").status_code == 200

    response = session_client(admin_user).post(
        f"{PEOPLE}{staff.pk}/password/", {"password": GOOD, "again": GOOD}
    )

    staff.refresh_from_db()
    assert response.status_code == 302 and staff.check_password(GOOD)
    assert staff_client.get("/").status_code == 302
    event = AuditEvent.objects.get(action="user.password_set")
    assert event.actor == admin_user and GOOD not in str(event.detail)


@pytest.mark.parametrize(
    ("password", "again", "error"),
    [
        ("short", "short", "too short"),
        (GOOD, "other", "The two passwords differ"),
        ("", "", "required"),
    ],
)
def test_a_refused_password_is_a_form_error(
    admin_user: User, staff: User, password: str, again: str, error: str
) -> None:
    response = session_client(admin_user).post(
        f"{PEOPLE}{staff.pk}/password/", {"password": password, "again": again}
    )

    assert response.status_code == 400
    assert error in response.content.decode()
    staff.refresh_from_db()
    assert staff.check_password(PASSWORD)


def test_unknown_person_is_404(admin_user: User) -> None:
    client = session_client(admin_user)
    assert client.get(f"{PEOPLE}987654/").status_code == 404
    assert client.post(f"{PEOPLE}987654/active/", {"active": "0"}).status_code == 404


# --- the admin's own password -----------------------------------------------------------------


def test_the_admins_own_password_page_changes_it_and_keeps_them_signed_in(
    admin_user: User,
) -> None:
    client = session_client(admin_user)
    assert client.get("/admin/password_change/").status_code == 200

    response = client.post(
        "/admin/password_change/",
        {"old_password": PASSWORD, "new_password1": GOOD, "new_password2": GOOD},
    )

    assert response.status_code == 302
    assert response["Location"] == "/admin/password_change/done/"
    assert client.get(response["Location"]).status_code == 200
    admin_user.refresh_from_db()
    assert admin_user.check_password(GOOD)
    assert client.get(PEOPLE).status_code == 200


def test_own_person_page_links_to_the_password_change_page(admin_user: User) -> None:
    html = session_client(admin_user).get(f"{PEOPLE}{admin_user.pk}/").content.decode()
    assert 'href="/admin/password_change/"' in html
    assert "another admin can deactivate it" in html


# --- the services behind the page (the admin site and the command line use them too) ----------


def test_services_refuse_what_the_database_would_choke_on(admin_user: User, staff: User) -> None:
    with pytest.raises(DomainError, match="at most 200 characters"):
        services.user_create(
            email="long@firm.test",
            full_name="N" * 201,
            role="staff",
            password=None,
            actor=admin_user,
        )
    with pytest.raises(DomainError, match="control characters"):
        services.user_update(actor=admin_user, user_id=staff.pk, changes={"full_name": "A\x00B"})
    with pytest.raises(DomainError, match="at most 254 characters"):
        services.user_update(
            actor=admin_user, user_id=staff.pk, changes={"email": "x" * 250 + "@firm.test"}
        )
    staff.refresh_from_db()
    assert staff.full_name != "A\x00B" and staff.email == "staff@firm.test"


def test_services_refuse_people_who_are_not_admins(lawyer: User, staff: User) -> None:
    with pytest.raises(DomainError, match="Only an admin"):
        services.user_create(
            email="sneaky@firm.test", full_name="Sneaky", role="admin", password=None, actor=lawyer
        )
    with pytest.raises(DomainError, match="Only an admin"):
        services.user_update(actor=lawyer, user_id=staff.pk, changes={"role": "admin"})
    assert not User.objects.filter(role="admin").exists()
