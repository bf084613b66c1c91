from datetime import datetime, timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone

from apps.accounts import services
from apps.accounts.models import ApiToken, AuditEvent, User
from lexweb.errors import Conflict, DomainError

pytestmark = pytest.mark.django_db


def test_token_secret_is_shown_once_and_only_its_hash_is_stored(lawyer: User) -> None:
    issued = services.token_create(user=lawyer, name="claude on ws-12")

    stored = ApiToken.objects.get(pk=issued.token.pk)
    with connection.cursor() as cursor:
        cursor.execute("SELECT * FROM accounts_apitoken WHERE id = %s", [stored.pk])
        row = cursor.fetchone()
    assert issued.secret.startswith(f"lxw_{stored.prefix}_")
    assert all(issued.secret not in str(value) for value in row)
    assert len(stored.digest) == 64
    assert services.token_authenticate(raw=issued.secret) == lawyer


def test_bearer_token_authenticates_api_and_records_last_use(lawyer: User) -> None:
    issued = services.token_create(user=lawyer, name="agent")
    client = Client(headers={"authorization": f"Bearer {issued.secret}"})

    response = client.get("/api/v1/me")

    assert response.status_code == 200
    assert response.json()["email"] == "lawyer@firm.test"
    issued.token.refresh_from_db()
    assert issued.token.last_used_at is not None


@pytest.mark.parametrize(
    "header",
    [
        "Bearer lxw_nothing_here",
        "Bearer ",
        "Bearer " + "x" * 5000,
        "Basic dXNlcjpwYXNz",
        "Bearer lxw_a_b_c",
        "Bearer lxw_\u00e9\u00e9_\u00e9",
    ],
)
def test_bad_tokens_get_401_with_the_error_shape(lawyer: User, header: str) -> None:
    response = Client(headers={"authorization": header}).get("/api/v1/me")

    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    assert response["WWW-Authenticate"] == "Bearer"


def test_right_prefix_wrong_secret_is_refused(lawyer: User) -> None:
    issued = services.token_create(user=lawyer, name="agent")
    forged = issued.secret[:-4] + ("aaaa" if not issued.secret.endswith("aaaa") else "bbbb")

    response = Client(headers={"authorization": f"Bearer {forged}"}).get("/api/v1/me")

    assert response.status_code == 401


def test_revoked_token_stops_working_at_once_and_revocation_is_audited(lawyer: User) -> None:
    issued = services.token_create(user=lawyer, name="agent")
    client = Client(headers={"authorization": f"Bearer {issued.secret}"})
    assert client.get("/api/v1/me").status_code == 200

    services.token_revoke(user=lawyer, token_id=issued.token.pk)

    assert client.get("/api/v1/me").status_code == 401
    actions = list(AuditEvent.objects.filter(actor=lawyer).values_list("action", flat=True))
    assert "token.create" in actions and "token.revoke" in actions


def test_expired_token_is_refused(lawyer: User) -> None:
    issued = services.token_create(
        user=lawyer, name="short", expires_at=timezone.now() + timedelta(hours=1)
    )
    ApiToken.objects.filter(pk=issued.token.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )

    response = Client(headers={"authorization": f"Bearer {issued.secret}"}).get("/api/v1/me")

    assert response.status_code == 401


def test_token_of_deactivated_user_is_refused(lawyer: User) -> None:
    issued = services.token_create(user=lawyer, name="agent")
    User.objects.filter(pk=lawyer.pk).update(is_active=False)

    assert services.token_authenticate(raw=issued.secret) is None


def test_token_names_are_unique_among_live_tokens_only(lawyer: User) -> None:
    first = services.token_create(user=lawyer, name="agent")
    with pytest.raises(Conflict):
        services.token_create(user=lawyer, name="agent")
    services.token_revoke(user=lawyer, token_id=first.token.pk)

    again = services.token_create(user=lawyer, name="agent")

    assert again.token.pk != first.token.pk


@pytest.mark.parametrize(
    "name, expires_at",
    [
        ("", None),
        ("   ", None),
        ("x" * 101, None),
        ("past", timezone.now() - timedelta(days=1)),
        ("too far", timezone.now() + timedelta(days=10_000)),
    ],
)
def test_invalid_token_requests_are_refused_and_store_nothing(
    lawyer: User, name: str, expires_at: object
) -> None:
    with pytest.raises(DomainError):
        services.token_create(user=lawyer, name=name, expires_at=expires_at)  # type: ignore[arg-type]

    assert not ApiToken.objects.exists()


def test_token_api_create_list_revoke(lawyer_client: Client) -> None:
    created = lawyer_client.post(
        "/api/v1/tokens", {"name": "ci agent"}, content_type="application/json"
    )
    assert created.status_code == 201
    body = created.json()
    assert body["secret"].startswith("lxw_")

    listed = lawyer_client.get("/api/v1/tokens").json()
    assert listed["count"] == 1 and "secret" not in listed["items"][0]

    revoked = lawyer_client.delete(f"/api/v1/tokens/{body['id']}")
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None


def test_nobody_can_revoke_another_persons_token(lawyer: User, staff_client: Client) -> None:
    issued = services.token_create(user=lawyer, name="agent")

    response = staff_client.delete(f"/api/v1/tokens/{issued.token.pk}")

    assert response.status_code == 404
    issued.token.refresh_from_db()
    assert issued.token.revoked_at is None


def test_tokens_page_shows_new_secret_once(lawyer_client: Client) -> None:
    response = lawyer_client.post("/accounts/tokens/", {"name": "laptop agent"})

    assert response.status_code == 200
    secret = response.context["issued"].secret
    assert secret in response.content.decode()
    assert secret not in lawyer_client.get("/accounts/tokens/").content.decode()


def test_empty_token_form_is_a_400_naming_the_missing_field(lawyer_client: Client) -> None:
    response = lawyer_client.post("/accounts/tokens/", {})

    assert response.status_code == 400
    assert "name" in response.context["form"].errors
    assert not ApiToken.objects.exists()


# --- Every token expires --------------------------------------------------------------------


def _days_from_now(moment: datetime) -> float:
    return (moment - timezone.now()).total_seconds() / 86400


def test_a_token_made_without_an_expiry_expires_after_the_default_days(lawyer: User) -> None:
    issued = services.token_create(user=lawyer, name="agent")

    stored = ApiToken.objects.get(pk=issued.token.pk)
    assert stored.expires_at is not None
    assert 89.99 < _days_from_now(stored.expires_at) <= 90


def test_the_default_follows_its_setting_and_never_passes_the_maximum(
    lawyer: User, settings: Any
) -> None:
    settings.LEXWEB_TOKEN_DEFAULT_DAYS = 7
    week = services.token_create(user=lawyer, name="a week").token
    settings.LEXWEB_TOKEN_MAX_DAYS = 3
    capped = services.token_create(user=lawyer, name="capped").token

    assert 6.99 < _days_from_now(week.expires_at) <= 7
    assert 2.99 < _days_from_now(capped.expires_at) <= 3


def test_the_database_refuses_a_token_without_an_expiry(lawyer: User) -> None:
    issued = services.token_create(user=lawyer, name="agent")

    with pytest.raises(IntegrityError), transaction.atomic():
        ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=None)


def test_the_api_gives_the_default_expiry_or_an_earlier_one_never_a_later_one(
    lawyer_client: Client,
) -> None:
    def create(name: str, **extra: Any) -> Any:
        return lawyer_client.post(
            "/api/v1/tokens", {"name": name, **extra}, content_type="application/json"
        )

    default = create("default")
    earlier = create("earlier", expires_at=(timezone.now() + timedelta(days=2)).isoformat())
    later = create("later", expires_at=(timezone.now() + timedelta(days=366)).isoformat())
    never = create("never", expires_at=None)

    assert default.status_code == 201
    assert 89.99 < _days_from_now(datetime.fromisoformat(default.json()["expires_at"])) <= 90
    assert earlier.status_code == 201
    assert 1.99 < _days_from_now(datetime.fromisoformat(earlier.json()["expires_at"])) <= 2
    assert later.status_code == 400
    assert later.json()["detail"] == "A token may live at most 365 days."
    assert never.status_code == 201 and never.json()["expires_at"] is not None
    assert ApiToken.objects.filter(expires_at__isnull=True).count() == 0


def test_the_api_schema_states_the_default_expiry(lawyer_client: Client) -> None:
    schema = lawyer_client.get("/api/v1/openapi.json").json()

    field = schema["components"]["schemas"]["TokenIn"]["properties"]["expires_at"]
    assert "Every token expires" in field["description"]
    assert "90 days from now (LEXWEB_TOKEN_DEFAULT_DAYS)" in field["description"]


def test_the_tokens_page_states_the_default_and_shows_when_the_new_token_expires(
    lawyer_client: Client,
) -> None:
    page = lawyer_client.get("/accounts/tokens/").content.decode()
    default = lawyer_client.post("/accounts/tokens/", {"name": "laptop agent"})
    short = lawyer_client.post("/accounts/tokens/", {"name": "short", "expires_in_days": "5"})
    too_long = lawyer_client.post("/accounts/tokens/", {"name": "long", "expires_in_days": "400"})

    assert "Every token expires. Leave empty for the default, 90 days; at most 365." in page
    made = default.context["issued"].token
    assert 89.99 < _days_from_now(made.expires_at) <= 90
    assert f'datetime="{timezone.localtime(made.expires_at).isoformat()}"' in (
        default.content.decode()
    )
    assert 4.99 < _days_from_now(short.context["issued"].token.expires_at) <= 5
    assert too_long.status_code == 400
    assert "A token may live at most 365 days." in too_long.content.decode()
    assert not ApiToken.objects.filter(name="long").exists()


@pytest.mark.django_db(transaction=True)
def test_the_migration_gives_tokens_without_an_expiry_the_maximum(lawyer: User) -> None:
    """Run for real: back to 0005 (the column may be empty), a token without an expiry stored
    there, forward again."""
    executor = MigrationExecutor(connection)
    target = [("accounts", "0005_auditevent_no_truncate")]
    leaves = executor.loader.graph.leaf_nodes()
    executor.migrate(target)
    try:
        old = MigrationExecutor(connection).loader.project_state(target).apps
        old_token = old.get_model("accounts", "ApiToken").objects.create(
            user_id=lawyer.pk, name="old", prefix="0123456789ab", digest="0" * 64, expires_at=None
        )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(leaves)

    token = ApiToken.objects.get(pk=old_token.pk)
    assert 364.99 < _days_from_now(token.expires_at) <= 365
    assert not token.is_live(now=timezone.now() + timedelta(days=366))
