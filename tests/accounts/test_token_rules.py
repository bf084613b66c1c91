"""Who may create and revoke API tokens: a token never mints or revokes other tokens (it may
revoke itself); creating one needs a browser session whose password was entered within
LEXWEB_REAUTH_SECONDS; revoking all of a person's tokens is one action, in the browser and in
the admin. All of it audited."""

from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from apps.accounts import services
from apps.accounts.models import ApiToken, AuditEvent, User
from apps.accounts.reauth import REAUTH_SESSION_KEY
from tests.conftest import session_client
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

REAUTH = 300  # the default LEXWEB_REAUTH_SECONDS


def _bearer(secret: str) -> Client:
    return Client(headers={"authorization": f"Bearer {secret}"})


def _confirmed_ago(client: Client, seconds: float) -> None:
    """Make the browser's last password entry `seconds` old."""
    session = client.session
    session[REAUTH_SESSION_KEY] = (timezone.now() - timedelta(seconds=seconds)).isoformat()
    session.save()


def _create_by_api(client: Client, name: str = "agent", **extra: Any) -> Any:
    return client.post("/api/v1/tokens", {"name": name, **extra}, content_type="application/json")


# --- A token cannot mint or revoke others -------------------------------------------------


def test_a_short_lived_token_cannot_mint_a_token_that_outlives_it(lawyer: User) -> None:
    parent = services.token_create(
        user=lawyer, name="two minutes", expires_at=timezone.now() + timedelta(minutes=2)
    )

    response = _create_by_api(_bearer(parent.secret), "child")

    assert response.status_code == 403
    assert response.json() == {
        "detail": "An API token cannot create tokens. Create one in the browser under API "
        "tokens (you will be asked for your password).",
        "code": "forbidden",
    }
    assert list(ApiToken.objects.values_list("name", flat=True)) == ["two minutes"]


def test_a_token_cannot_revoke_its_users_other_tokens_but_may_revoke_itself(
    lawyer: User,
) -> None:
    agent = services.token_create(user=lawyer, name="agent")
    other = services.token_create(user=lawyer, name="other")
    client = _bearer(agent.secret)

    refused = client.delete(f"/api/v1/tokens/{other.token.pk}")
    itself = client.delete(f"/api/v1/tokens/{agent.token.pk}")

    assert refused.status_code == 403
    assert refused.json()["detail"] == (
        "An API token can revoke only itself. Revoke other tokens in the browser under API tokens."
    )
    assert itself.status_code == 200 and itself.json()["revoked_at"] is not None
    other.token.refresh_from_db()
    assert other.token.revoked_at is None
    assert list(AuditEvent.objects.filter(action="token.revoke").values_list("target_id")) == [
        (str(agent.token.pk),)
    ]


def test_a_token_asking_to_revoke_another_persons_token_gets_404(lawyer: User, staff: User) -> None:
    theirs = services.token_create(user=lawyer, name="agent")
    mine = services.token_create(user=staff, name="agent")

    response = _bearer(mine.secret).delete(f"/api/v1/tokens/{theirs.token.pk}")

    assert response.status_code == 404


# --- Creating needs a recent password -----------------------------------------------------


@pytest.mark.parametrize(
    ("age", "created"),
    [(REAUTH - 60, True), (REAUTH - 1, True), (REAUTH + 1, False), (REAUTH + 3600, False)],
    ids=["well within", "just within", "just past", "long past"],
)
def test_the_api_creates_a_token_only_within_the_reauth_window(
    lawyer: User, age: int, created: bool
) -> None:
    browser = session_client(lawyer)
    _confirmed_ago(browser, age)

    response = _create_by_api(browser)

    if created:
        assert response.status_code == 201
        assert ApiToken.objects.filter(user=lawyer, name="agent").exists()
    else:
        assert response.status_code == 403
        assert response.json()["code"] == "reauth_required"
        assert response.json()["detail"] == (
            "Creating a token needs your password, entered within the last 5 minutes: "
            "confirm it at /accounts/reauth/, then try again."
        )
        assert not ApiToken.objects.exists()


def test_the_window_follows_the_setting(lawyer: User, settings: Any) -> None:
    settings.LEXWEB_REAUTH_SECONDS = 60
    now = timezone.now()

    at_limit = services.reauthentication_fresh(reauthenticated_at=now - timedelta(seconds=59.8))
    past = services.reauthentication_fresh(reauthenticated_at=now - timedelta(seconds=60.5))
    future = services.reauthentication_fresh(reauthenticated_at=now + timedelta(minutes=5))

    assert (at_limit, past, future) == (True, False, False)
    assert services.reauthentication_fresh(reauthenticated_at=None) is False


def test_a_session_that_never_entered_a_password_cannot_create_a_token(lawyer: User) -> None:
    browser = session_client(lawyer)
    session = browser.session
    del session[REAUTH_SESSION_KEY]
    session.save()

    assert _create_by_api(browser).status_code == 403
    page = browser.post("/accounts/tokens/", {"name": "agent"})
    assert page.status_code == 403


def test_the_tokens_page_asks_for_the_password_and_keeps_what_was_typed(lawyer: User) -> None:
    browser = session_client(lawyer)
    _confirmed_ago(browser, REAUTH + 1)

    page = browser.get("/accounts/tokens/")
    refused = browser.post("/accounts/tokens/", {"name": "claude on ws-12"})

    assert "Confirm your password" in page.content.decode()
    assert "/accounts/reauth/?next=/accounts/tokens/" in page.content.decode()
    assert refused.status_code == 403
    body = refused.content.decode()
    assert "Your password confirmation has expired (it lasts 5 minutes)" in body
    assert 'value="claude on ws-12"' in body
    assert not ApiToken.objects.exists()


def test_confirming_the_password_lets_the_browser_create_a_token(lawyer: User) -> None:
    browser = session_client(lawyer)
    _confirmed_ago(browser, REAUTH + 1)

    wrong = browser.post("/accounts/reauth/", {"password": "not-it", "next": "/accounts/tokens/"})
    right = browser.post("/accounts/reauth/", {"password": PASSWORD, "next": "/accounts/tokens/"})
    created = browser.post("/accounts/tokens/", {"name": "agent"})

    assert wrong.status_code == 400
    assert "That is not your password." in wrong.content.decode()
    assert (right.status_code, right["Location"]) == (302, "/accounts/tokens/")
    assert created.status_code == 200 and "lxw_" in created.content.decode()
    actions = list(AuditEvent.objects.order_by("pk").values_list("action", "actor"))
    assert actions[-3:] == [
        ("auth.reauth_failed", lawyer.pk),
        ("auth.reauth", lawyer.pk),
        ("token.create", lawyer.pk),
    ]


def test_the_confirm_page_never_sends_the_browser_elsewhere(lawyer: User) -> None:
    browser = session_client(lawyer)

    response = browser.post(
        "/accounts/reauth/", {"password": PASSWORD, "next": "https://evil.test/steal"}
    )

    assert (response.status_code, response["Location"]) == (302, "/accounts/tokens/")


def test_the_confirm_page_needs_a_signed_in_browser(db: None) -> None:
    response = Client().get("/accounts/reauth/")

    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")


def test_signing_in_with_the_password_counts_as_a_confirmation(lawyer: User) -> None:
    browser = Client()
    browser.post("/accounts/login/", {"username": lawyer.email, "password": PASSWORD})

    assert _create_by_api(browser).status_code == 201


# --- Revoking all -------------------------------------------------------------------------


def test_revoke_all_on_the_tokens_page_is_one_audited_action(lawyer: User, staff: User) -> None:
    first = services.token_create(user=lawyer, name="one")
    second = services.token_create(user=lawyer, name="two")
    services.token_revoke(user=lawyer, token_id=second.token.pk)
    third = services.token_create(user=lawyer, name="three")
    theirs = services.token_create(user=staff, name="one")
    browser = session_client(lawyer)

    response = browser.post("/accounts/tokens/revoke-all/", follow=True)

    assert "Revoked 2 tokens" in response.content.decode()
    assert not ApiToken.objects.filter(user=lawyer, revoked_at__isnull=True).exists()
    assert ApiToken.objects.get(pk=theirs.token.pk).revoked_at is None
    event = AuditEvent.objects.get(action="token.revoke_all")
    assert (event.actor, event.target_id, event.via) == (lawyer, str(lawyer.pk), "web")
    assert event.detail == {"count": 2, "token_ids": f"{first.token.pk},{third.token.pk}"}
    for issued in (first, third):
        assert _bearer(issued.secret).get("/api/v1/me").status_code == 401


def test_revoke_all_with_nothing_live_says_so_and_records_nothing(lawyer: User) -> None:
    response = session_client(lawyer).post("/accounts/tokens/revoke-all/", follow=True)

    assert "You have no live tokens to revoke." in response.content.decode()
    assert not AuditEvent.objects.filter(action="token.revoke_all").exists()


def test_revoke_all_is_a_post(lawyer: User) -> None:
    services.token_create(user=lawyer, name="one")

    response = session_client(lawyer).get("/accounts/tokens/revoke-all/")

    assert response.status_code == 405
    assert ApiToken.objects.filter(revoked_at__isnull=True).count() == 1


def test_the_admin_revokes_all_tokens_of_selected_users_in_one_action(
    admin_user: User, lawyer: User, staff: User
) -> None:
    services.token_create(user=lawyer, name="one")
    services.token_create(user=lawyer, name="two")
    services.token_create(user=staff, name="one")

    response = session_client(admin_user).post(
        "/admin/accounts/user/",
        {"action": "revoke_all_tokens", "_selected_action": [lawyer.pk, staff.pk]},
        follow=True,
    )

    assert "Revoked 3 tokens." in response.content.decode()
    assert not ApiToken.objects.filter(revoked_at__isnull=True).exists()
    events = AuditEvent.objects.filter(action="token.revoke_all").order_by("target_id")
    assert sorted((e.actor, e.target_id, e.detail["count"]) for e in events) == sorted(
        [(admin_user, str(lawyer.pk), 2), (admin_user, str(staff.pk), 1)]
    )


def test_an_admin_revoking_a_token_is_recorded_as_the_admin(admin_user: User, lawyer: User) -> None:
    issued = services.token_create(user=lawyer, name="agent")

    session_client(admin_user).post(
        "/admin/accounts/apitoken/", {"action": "revoke", "_selected_action": [issued.token.pk]}
    )

    event = AuditEvent.objects.get(action="token.revoke")
    assert (event.actor, event.target_id) == (admin_user, str(issued.token.pk))
