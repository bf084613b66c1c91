"""The audit log: sign-ins, sign-outs and tokens are recorded with who, from where and through
which edge; nothing (ORM, raw SQL, the admin) can change or delete an entry."""

from collections.abc import Callable
from typing import Any

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.test import Client

from apps.accounts import services
from apps.accounts.models import ApiToken, AuditEvent, AuditLogImmutableError, User
from tests.conftest import session_client, token_client
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db


def _new_events(since: int) -> list[AuditEvent]:
    """Events written after the one with id `since`, oldest first."""
    return list(AuditEvent.objects.filter(pk__gt=since).order_by("pk"))


def _last_id() -> int:
    last = AuditEvent.objects.order_by("-pk").first()
    return last.pk if last is not None else 0


def _row(event: AuditEvent) -> tuple[object, ...]:
    """The stored row, read past the model."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_auditevent WHERE id = %s", [event.pk])
        row = cursor.fetchone()
    assert row is not None
    return tuple(row)


# --- What is recorded ---------------------------------------------------------------------


def test_sign_in_writes_one_event_with_address_and_edge(lawyer: User) -> None:
    since = _last_id()

    response = Client().post("/accounts/login/", {"username": lawyer.email, "password": PASSWORD})

    assert response.status_code == 302
    [event] = _new_events(since)
    assert (event.action, event.actor, event.actor_label) == ("auth.login", lawyer, lawyer.email)
    assert (event.client_ip, event.via) == ("127.0.0.1", "web")


@pytest.mark.parametrize(
    ("email", "password", "label"),
    [
        ("lawyer@firm.test", "not-the-password", "lawyer@firm.test"),
        ("LAWYER@firm.test", "not-the-password", "lawyer@firm.test"),
        ("nobody@firm.test", PASSWORD, "unknown account"),
    ],
    ids=["wrong password", "e-mail in other case", "unknown e-mail"],
)
def test_failed_sign_in_writes_one_event_naming_only_an_existing_account(
    lawyer: User, email: str, password: str, label: str
) -> None:
    since = _last_id()

    response = Client().post("/accounts/login/", {"username": email, "password": password})

    assert response.status_code == 200
    assert "_auth_user_id" not in response.wsgi_request.session
    [event] = _new_events(since)
    assert (event.action, event.actor, event.actor_label) == ("auth.login_failed", None, label)
    assert (event.client_ip, event.via) == ("127.0.0.1", "web")
    assert password not in str(_row(event))
    if label == "unknown account":
        assert email not in str(_row(event))


def test_sign_out_writes_one_event(lawyer: User) -> None:
    client = session_client(lawyer)
    since = _last_id()

    response = client.post("/accounts/logout/")

    assert response.status_code == 302
    [event] = _new_events(since)
    assert (event.action, event.actor, event.actor_label) == ("auth.logout", lawyer, lawyer.email)
    assert (event.client_ip, event.via) == ("127.0.0.1", "web")


def test_signing_out_when_not_signed_in_writes_nothing(db: None) -> None:
    since = _last_id()

    Client().post("/accounts/logout/")

    assert _new_events(since) == []


def test_token_created_and_revoked_on_the_tokens_page_is_audited(lawyer: User) -> None:
    client = session_client(lawyer)
    since = _last_id()

    client.post("/accounts/tokens/", {"name": "claude on ws-12"})
    token = ApiToken.objects.get(user=lawyer, name="claude on ws-12")
    client.post(f"/accounts/tokens/{token.pk}/revoke/")
    client.post(f"/accounts/tokens/{token.pk}/revoke/")  # already revoked: nothing to record

    events = _new_events(since)
    assert [(e.action, e.actor, e.target_id, e.via) for e in events] == [
        ("token.create", lawyer, str(token.pk), "web"),
        ("token.revoke", lawyer, str(token.pk), "web"),
    ]
    assert all(e.client_ip == "127.0.0.1" and e.case_id is None for e in events)


def test_token_created_through_the_api_and_revoked_with_itself_is_audited(lawyer: User) -> None:
    browser = session_client(lawyer)  # signed in just now: the password counts as confirmed
    since = _last_id()

    created = browser.post("/api/v1/tokens", {"name": "agent 2"}, content_type="application/json")
    token_id = created.json()["id"]
    agent = Client(headers={"authorization": f"Bearer {created.json()['secret']}"})
    revoked = agent.delete(f"/api/v1/tokens/{token_id}")

    assert (created.status_code, revoked.status_code) == (201, 200)
    events = _new_events(since)
    assert [(e.action, e.actor, e.target_id, e.via) for e in events] == [
        ("token.create", lawyer, str(token_id), "api"),
        ("token.revoke", lawyer, str(token_id), "api"),
    ]
    assert created.json()["secret"] not in str([_row(e) for e in events])


def test_revoking_another_persons_token_is_404_and_not_audited(lawyer: User, staff: User) -> None:
    issued = services.token_create(user=lawyer, name="agent")
    by_session, by_token = session_client(staff), token_client(staff)
    since = _last_id()

    page = by_session.post(f"/accounts/tokens/{issued.token.pk}/revoke/")
    api = by_token.delete(f"/api/v1/tokens/{issued.token.pk}")

    assert (page.status_code, api.status_code) == (404, 404)
    assert _new_events(since) == []
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is None


# --- Append-only --------------------------------------------------------------------------


@pytest.fixture
def event(lawyer: User) -> AuditEvent:
    issued = services.token_create(user=lawyer, name="agent")
    return AuditEvent.objects.get(action="token.create", target_id=str(issued.token.pk))


def _save_changed(event: AuditEvent) -> None:
    event.action = "tampered"
    event.save()


ORM_CHANGES: dict[str, Callable[[AuditEvent], Any]] = {
    "instance save": _save_changed,
    "instance delete": lambda e: e.delete(),
    "queryset update": lambda e: AuditEvent.objects.filter(pk=e.pk).update(action="tampered"),
    "queryset delete": lambda e: AuditEvent.objects.filter(pk=e.pk).delete(),
    "delete everything": lambda e: AuditEvent.objects.all().delete(),
    "bulk update": lambda e: AuditEvent.objects.bulk_update(
        [AuditEvent(pk=e.pk, action="tampered")], ["action"]
    ),
    "update_or_create": lambda e: AuditEvent.objects.update_or_create(
        pk=e.pk, defaults={"action": "tampered"}
    ),
}


@pytest.mark.parametrize("change", ORM_CHANGES.values(), ids=ORM_CHANGES.keys())
def test_the_orm_refuses_to_change_or_delete_an_event(
    event: AuditEvent, change: Callable[[AuditEvent], Any]
) -> None:
    before = _row(event)

    with pytest.raises(AuditLogImmutableError):
        change(event)

    assert _row(event) == before


@pytest.mark.parametrize(
    ("sql", "operation"),
    [
        ("UPDATE accounts_auditevent SET action = 'tampered' WHERE id = %s", "UPDATE"),
        ("UPDATE accounts_auditevent SET client_ip = NULL WHERE id >= %s", "UPDATE"),
        ("DELETE FROM accounts_auditevent WHERE id = %s", "DELETE"),
    ],
)
def test_the_database_refuses_raw_sql_changes_and_deletes(
    event: AuditEvent, sql: str, operation: str
) -> None:
    before = _row(event)

    with (
        pytest.raises(DatabaseError, match=f"append-only \\({operation} refused\\)"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        cursor.execute(sql, [event.pk])

    assert _row(event) == before


@pytest.mark.parametrize(
    "sql",
    [
        "TRUNCATE accounts_auditevent",
        "TRUNCATE accounts_auditevent RESTART IDENTITY CASCADE",
        "TRUNCATE accounts_throttlebucket, accounts_auditevent",
    ],
)
def test_the_database_refuses_truncate_as_the_applications_role(
    event: AuditEvent, sql: str
) -> None:
    before = _row(event)

    with (
        pytest.raises(DatabaseError, match=r"append-only \(TRUNCATE refused\)"),
        transaction.atomic(),
        connection.cursor() as cursor,
    ):
        # What every session of the application has: the test database's own allowance
        # (tests/conftest.py, for the runner's flush) switched off.
        cursor.execute("SET LOCAL lexweb.audit_truncate = ''")
        # The event was written in this test's transaction: its deferred foreign-key checks
        # run now, or PostgreSQL refuses the TRUNCATE for them rather than for the trigger.
        cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
        cursor.execute(sql)

    assert _row(event) == before


@pytest.mark.django_db(transaction=True)
def test_only_the_test_databases_flush_may_truncate_the_audit_log(lawyer: User) -> None:
    services.audit_record(actor=lawyer, action="auth.login", actor_label=lawyer.email)
    with connection.cursor() as cursor:
        cursor.execute("SHOW lexweb.audit_truncate")
        assert cursor.fetchone() == ("allowed",)

    # Django's flush, as the runner does it after this test: one TRUNCATE of every table.
    call_command("flush", verbosity=0, interactive=False)

    assert not AuditEvent.objects.exists()


def test_new_events_can_still_be_appended_after_a_refused_change(event: AuditEvent) -> None:
    with pytest.raises(AuditLogImmutableError):
        event.delete()

    appended = services.audit_record(actor=None, action="auth.login_failed", actor_label="x@y.z")

    assert AuditEvent.objects.filter(pk=appended.pk).exists()


# --- The admin ----------------------------------------------------------------------------


def test_admin_cannot_add_audit_events(admin_user: User) -> None:
    client = session_client(admin_user)
    count = AuditEvent.objects.count()

    get = client.get("/admin/accounts/auditevent/add/")
    post = client.post("/admin/accounts/auditevent/add/", {"action": "forged", "via": "web"})

    assert (get.status_code, post.status_code) == (403, 403)
    assert AuditEvent.objects.count() == count


def test_admin_cannot_delete_an_audit_event(admin_user: User, event: AuditEvent) -> None:
    client = session_client(admin_user)
    before = _row(event)

    get = client.get(f"/admin/accounts/auditevent/{event.pk}/delete/")
    post = client.post(f"/admin/accounts/auditevent/{event.pk}/delete/", {"post": "yes"})

    assert (get.status_code, post.status_code) == (403, 403)
    assert _row(event) == before


def test_admin_sees_an_audit_event_read_only(admin_user: User, event: AuditEvent) -> None:
    client = session_client(admin_user)
    before = _row(event)
    url = f"/admin/accounts/auditevent/{event.pk}/change/"

    page = client.get(url)
    post = client.post(url, {"action": "tampered", "actor_label": "someone else"})

    assert page.status_code == 200
    body = page.content.decode()
    assert event.action in body and event.target_label in body
    assert 'name="_save"' not in body and 'name="_continue"' not in body
    assert 'name="action"' not in body
    assert post.status_code == 403
    assert _row(event) == before


def test_admin_changelist_offers_no_add_and_no_bulk_actions(
    admin_user: User, event: AuditEvent
) -> None:
    body = session_client(admin_user).get("/admin/accounts/auditevent/").content.decode()

    assert event.action in body
    assert "/admin/accounts/auditevent/add/" not in body
    assert "delete_selected" not in body


def test_admin_cannot_delete_a_user(admin_user: User, lawyer: User) -> None:
    client = session_client(admin_user)

    get = client.get(f"/admin/accounts/user/{lawyer.pk}/delete/")
    post = client.post(f"/admin/accounts/user/{lawyer.pk}/delete/", {"post": "yes"})

    assert (get.status_code, post.status_code) == (403, 403)
    assert User.objects.filter(pk=lawyer.pk).exists()
