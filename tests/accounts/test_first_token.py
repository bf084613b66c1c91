"""The first token without a browser session of the token's owner (issue 22 req 1): the
command line, an admin issuing one for a person after their own password, an admin setting a
person's password, and the demo lawyer who can sign in."""

import re
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from django.utils import timezone

from apps.accounts import services
from apps.accounts.models import ApiToken, AuditEvent, User
from apps.accounts.reauth import REAUTH_SESSION_KEY
from tests.conftest import session_client
from tests.harness.commands import command_as_process

pytestmark = pytest.mark.django_db

SECRET = re.compile(r"lxw_[0-9a-f]{12}_[A-Za-z0-9_-]{43}")
NEW_PASSWORD = "Another-long-passphrase-93"


def _confirmed(client: Client, seconds_ago: float = 0) -> None:
    session = client.session
    at = timezone.now() - timedelta(seconds=seconds_ago)
    session[REAUTH_SESSION_KEY] = at.isoformat()
    session.save()


# --- manage.py token_create ---------------------------------------------------------------


def test_the_command_prints_the_secret_once_stores_its_hash_and_audits_the_command_line(
    lawyer: User,
) -> None:
    ran = command_as_process("token_create", "--user", "LAWYER@firm.test", "--name", "claude")

    assert ran.returncode == 0, ran.stderr
    secret = ran.stdout.strip().splitlines()[-1]
    assert SECRET.fullmatch(secret)
    assert "shown this once" in ran.stderr and "lawyer@firm.test" in ran.stderr
    token = ApiToken.objects.get(user=lawyer, name="claude")
    assert secret not in (token.digest, token.prefix) and token.prefix in secret
    assert services.token_authenticate(raw=secret) == lawyer
    event = AuditEvent.objects.get(action="token.create")
    assert event.actor is None
    assert event.actor_label == "command line (manage.py token_create)"
    assert event.detail == {"owner": "lawyer@firm.test", "issued_for_another": True}
    # It works on the API at once, as that person.
    bearer = Client(headers={"authorization": f"Bearer {secret}"})
    assert bearer.get("/api/v1/cases").status_code == 200


def test_the_command_takes_an_expiry_in_days(lawyer: User) -> None:
    ran = command_as_process(
        "token_create", "--user", lawyer.email, "--name", "ci", "--expires-days", "3"
    )
    assert ran.returncode == 0, ran.stderr
    left = ApiToken.objects.get(name="ci").expires_at - timezone.now()
    assert timedelta(days=2, hours=23) < left <= timedelta(days=3)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "nobody@firm.test", "--name", "x"], "No user with e-mail 'nobody@firm.test'."),
        (["--user", "x" * 5000, "--name", "x"], "No user with e-mail"),
        (["--user", "lawyer@firm.test", "--name", "   "], "A token needs a name"),
        (["--user", "lawyer@firm.test", "--name", "n" * 101], "at most 100 characters"),
        (["--user", "lawyer@firm.test", "--name", "x", "--expires-days", "0"], "from 1 to"),
        (["--user", "lawyer@firm.test", "--name", "x", "--expires-days", "99999"], "from 1 to"),
        (["--user", "lawyer@firm.test", "--name", "x", "--expires-days", "soon"], "whole number"),
        (["--name", "x"], "the following arguments are required: --user"),
    ],
)
def test_bad_arguments_are_one_clear_line_and_nothing_is_stored(
    lawyer: User, args: list[str], message: str
) -> None:
    ran = command_as_process("token_create", *args)

    assert ran.returncode != 0
    assert "Traceback" not in ran.stderr
    assert message in ran.stderr
    assert not SECRET.search(ran.stdout + ran.stderr)
    assert not ApiToken.objects.exists()
    assert not AuditEvent.objects.filter(action="token.create").exists()


def test_a_deactivated_person_gets_no_token(lawyer: User) -> None:
    lawyer.is_active = False
    lawyer.save()
    ran = command_as_process("token_create", "--user", lawyer.email, "--name", "x")
    assert ran.returncode == 1
    assert "is deactivated" in ran.stderr
    assert not ApiToken.objects.exists()


def test_a_second_live_token_of_the_same_name_is_refused(lawyer: User) -> None:
    assert command_as_process("token_create", "--user", lawyer.email, "--name", "a").returncode == 0
    again = command_as_process("token_create", "--user", lawyer.email, "--name", "a")
    assert again.returncode == 1 and "already have a live token named 'a'" in again.stderr
    assert ApiToken.objects.count() == 1


# --- The admin issues a token for a person -----------------------------------------------------


def _issue_url(user: User) -> str:
    return f"/admin/accounts/user/{user.pk}/issue-token/"


def test_an_admin_issues_a_token_for_a_person_after_their_own_password(
    admin_user: User, lawyer: User
) -> None:
    admin = session_client(admin_user)
    page = admin.get(f"/admin/accounts/user/{lawyer.pk}/change/").content.decode()
    assert _issue_url(lawyer) in page and f"/admin/accounts/user/{lawyer.pk}/password/" in page

    # Without a recent password (signing in counted as one, an hour ago): refused, nothing
    # made, the page says how to confirm.
    _confirmed(admin, seconds_ago=3600)
    assert "confirm your password" in admin.get(_issue_url(lawyer)).content.decode()
    refused = admin.post(_issue_url(lawyer), {"name": "agent"})
    assert refused.status_code == 403
    assert "confirm it at /accounts/reauth/" in refused.content.decode()
    assert not ApiToken.objects.exists()

    _confirmed(admin)
    issued = admin.post(_issue_url(lawyer), {"name": "agent", "expires_in_days": "7"})
    assert issued.status_code == 200
    secret = SECRET.search(issued.content.decode())
    assert secret is not None
    assert services.token_authenticate(raw=secret.group()) == lawyer
    token = ApiToken.objects.get()
    assert token.user == lawyer and token.name == "agent"
    event = AuditEvent.objects.get(action="token.create")
    assert event.actor == admin_user
    assert event.detail == {"owner": "lawyer@firm.test", "issued_for_another": True}
    # Shown once: the page read again has no secret.
    assert not SECRET.search(admin.get(_issue_url(lawyer)).content.decode())


def test_issuing_for_a_person_refuses_bad_input_and_other_roles(
    admin_user: User, lawyer: User, staff: User
) -> None:
    admin = session_client(admin_user)
    _confirmed(admin)
    for data in ({"name": ""}, {"name": "x" * 101}, {"name": "x", "expires_in_days": "-1"}):
        assert admin.post(_issue_url(lawyer), data).status_code == 400
    assert admin.post("/admin/accounts/user/999999/issue-token/", {"name": "x"}).status_code == 404
    assert not ApiToken.objects.exists()
    # The service itself refuses a non-admin, whatever calls it.
    with pytest.raises(services.PermissionDenied):
        services.token_issue_for(
            admin=staff,
            user_id=lawyer.pk,
            name="x",
            expires_at=None,
            reauthenticated_at=timezone.now(),
        )
    # And the admin pages are closed to lawyers and staff.
    for person in (lawyer, staff):
        client = session_client(person)
        _confirmed(client)
        response = client.post(_issue_url(lawyer), {"name": "x"})
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not ApiToken.objects.exists()


# --- The admin sets a person's password --------------------------------------------------------


def test_an_admin_sets_a_password_and_the_person_signs_in_with_it(
    admin_user: User,
) -> None:
    person = services.user_create(
        email="no.password@firm.test",
        full_name="No Password",
        role=User.Role.LAWYER,
        password=None,
        actor=admin_user,
    )
    admin = session_client(admin_user)
    url = f"/admin/accounts/user/{person.pk}/password/"
    assert (
        "no password yet" in admin.get(f"/admin/accounts/user/{person.pk}/change/").content.decode()
    )

    done = admin.post(url, {"password": NEW_PASSWORD, "again": NEW_PASSWORD})

    assert done.status_code == 302
    assert Client().login(email=person.email, password=NEW_PASSWORD)
    event = AuditEvent.objects.get(action="user.password_set")
    assert event.actor == admin_user and event.target_id == str(person.pk)
    assert event.detail == {"replaced": False}
    assert NEW_PASSWORD not in str(event.detail) + event.target_label


def test_a_new_password_ends_the_persons_browser_sessions_but_not_their_tokens(
    admin_user: User, lawyer: User
) -> None:
    browser = session_client(lawyer)
    assert browser.get("/").status_code == 200
    issued = services.token_create(user=lawyer, name="agent")
    services.user_password_set(actor=admin_user, user_id=lawyer.pk, password=NEW_PASSWORD)

    assert browser.get("/").status_code == 302  # signed out
    assert services.token_authenticate(raw=issued.secret) == lawyer
    assert AuditEvent.objects.get(action="user.password_set").detail == {"replaced": True}


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"password": "short", "again": "short"}, "too short"),
        ({"password": NEW_PASSWORD, "again": NEW_PASSWORD + "x"}, "The two passwords differ."),
        ({"password": "", "again": ""}, "This field is required."),
        ({"password": "p" * 5000, "again": "p" * 5000}, "at most 4096 characters"),
        ({"password": "lawyer@firm.test1", "again": "lawyer@firm.test1"}, "too similar"),
    ],
)
def test_a_bad_password_is_refused_and_nothing_changes(
    admin_user: User, lawyer: User, data: dict[str, str], message: str
) -> None:
    before = User.objects.get(pk=lawyer.pk).password
    response = session_client(admin_user).post(f"/admin/accounts/user/{lawyer.pk}/password/", data)

    assert response.status_code == 400
    assert message in response.content.decode()
    assert User.objects.get(pk=lawyer.pk).password == before
    assert not AuditEvent.objects.filter(action="user.password_set").exists()


def test_only_an_admin_sets_passwords(lawyer: User, staff: User) -> None:
    with pytest.raises(services.PermissionDenied):
        services.user_password_set(actor=staff, user_id=lawyer.pk, password=NEW_PASSWORD)
    response = session_client(staff).post(
        f"/admin/accounts/user/{lawyer.pk}/password/",
        {"password": NEW_PASSWORD, "again": NEW_PASSWORD},
    )
    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not Client().login(email=lawyer.email, password=NEW_PASSWORD)


# --- The demo lawyer can sign in ---------------------------------------------------------------


@override_settings(LEXWEB_DEMO_DATA=True, LEXWEB_DEMO_LAWYER_PASSWORD="")
def test_the_demo_lawyer_gets_a_password_printed_once(admin_user: User) -> None:
    from lexweb_dev import demo

    first = command_as_process("seed_demo")
    assert first.returncode == 0, first.stderr
    printed = re.search(r"Sign in as (\S+) with password:\s+(\S+)", first.stdout)
    assert printed is not None and printed.group(1) == demo.DEMO_LAWYER
    assert Client().login(email=demo.DEMO_LAWYER, password=printed.group(2))
    again = command_as_process("seed_demo")
    assert printed.group(2) not in again.stdout + again.stderr


@override_settings(LEXWEB_DEMO_DATA=True, LEXWEB_DEMO_LAWYER_PASSWORD=NEW_PASSWORD)
def test_the_demo_lawyers_password_may_come_from_the_environment(admin_user: User) -> None:
    from lexweb_dev import demo

    ran = command_as_process("seed_demo")
    assert ran.returncode == 0, ran.stderr
    assert NEW_PASSWORD not in ran.stdout
    assert "password from the environment" in ran.stdout
    assert Client().login(email=demo.DEMO_LAWYER, password=NEW_PASSWORD)


@override_settings(LEXWEB_DEMO_DATA=True, LEXWEB_DEMO_LAWYER_PASSWORD="short")
def test_a_demo_lawyer_password_the_rules_refuse_is_one_clear_line(admin_user: User) -> None:
    ran = command_as_process("seed_demo")
    assert ran.returncode == 1
    assert "Cannot create the demo lawyer: This password is too short." in ran.stderr
    assert "Traceback" not in ran.stderr
