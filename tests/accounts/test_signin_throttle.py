"""Sign-ins are throttled per account and per client address (the app's sign-in, the admin's,
the confirm-password page), and repeated bad bearer tokens from one address get 429 on the API.
Budgets are token buckets in PostgreSQL; a failed sign-in is audited once per attempt, keeping
what was typed only when it is an existing account's e-mail."""

import os
import subprocess
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.db.models import F
from django.test import Client

from apps.accounts import services
from apps.accounts.models import AuditEvent, ThrottleBucket, User
from tests.conftest import BASE_DIR, database_url_for_tests, session_client
from tests.factories import PASSWORD

pytestmark = pytest.mark.django_db

ACCOUNT, ADDRESS, REFILL = 3, 5, 300


@pytest.fixture(autouse=True)
def _small_budgets(settings: Any) -> None:
    settings.LEXWEB_SIGNIN_ACCOUNT_ATTEMPTS = ACCOUNT
    settings.LEXWEB_SIGNIN_ADDRESS_ATTEMPTS = ADDRESS
    settings.LEXWEB_SIGNIN_REFILL_SECONDS = REFILL
    settings.LEXWEB_API_BAD_TOKEN_ATTEMPTS = 3
    settings.LEXWEB_API_BAD_TOKEN_REFILL_SECONDS = 60


def _sign_in(email: str, password: str, *, address: str = "127.0.0.1", path: str = "") -> Any:
    client = Client(REMOTE_ADDR=address)
    return client.post(path or "/accounts/login/", {"username": email, "password": password})


def _assert_throttled(response: Any, minutes: int) -> None:
    assert response.status_code == 429
    body = response.content.decode()
    plural = "s" if minutes != 1 else ""
    assert f"Too many sign-in attempts: try again in {minutes} minute{plural}." in body
    assert 0 < int(response["Retry-After"]) <= minutes * 60


def _signed_in(response: Any) -> bool:
    return response.status_code == 302 and "_auth_user_id" in response.wsgi_request.session


def _let_time_pass(seconds: int) -> None:
    ThrottleBucket.objects.update(updated_at=F("updated_at") - timedelta(seconds=seconds))


# --- Per account --------------------------------------------------------------------------


def test_below_the_account_budget_the_right_password_still_signs_in(lawyer: User) -> None:
    for _ in range(ACCOUNT - 1):
        assert _sign_in(lawyer.email, "wrong-password").status_code == 200

    assert _signed_in(_sign_in(lawyer.email, PASSWORD))


def test_at_the_account_budget_even_the_right_password_is_refused(lawyer: User) -> None:
    for _ in range(ACCOUNT):
        assert _sign_in(lawyer.email, "wrong-password").status_code == 200

    refused = _sign_in(lawyer.email, PASSWORD)

    # One attempt comes back every REFILL seconds: 5 minutes.
    _assert_throttled(refused, minutes=5)
    assert "_auth_user_id" not in refused.wsgi_request.session


def test_the_account_budget_holds_from_every_address_and_in_any_letter_case(lawyer: User) -> None:
    for n in range(ACCOUNT):
        _sign_in(lawyer.email.upper() if n % 2 else lawyer.email, "wrong", address=f"10.0.0.{n}")

    _assert_throttled(_sign_in(lawyer.email, PASSWORD, address="10.9.9.9"), minutes=5)


def test_one_throttled_account_does_not_block_another(lawyer: User, staff: User) -> None:
    for _ in range(ACCOUNT):
        _sign_in(lawyer.email, "wrong-password")

    assert _signed_in(_sign_in(staff.email, PASSWORD))


def test_an_attempt_comes_back_after_the_refill_time(lawyer: User) -> None:
    for _ in range(ACCOUNT):
        _sign_in(lawyer.email, "wrong-password")
    _let_time_pass(REFILL - 30)
    _assert_throttled(_sign_in(lawyer.email, PASSWORD), minutes=1)

    _let_time_pass(30)

    assert _signed_in(_sign_in(lawyer.email, PASSWORD))


# --- Per address --------------------------------------------------------------------------


def test_the_address_budget_spans_accounts(db: None) -> None:
    for n in range(ADDRESS):
        assert _sign_in(f"guess{n}@firm.test", "wrong").status_code == 200

    _assert_throttled(_sign_in("guess-next@firm.test", "wrong"), minutes=5)
    # Another address is not affected.
    assert _sign_in("guess-next@firm.test", "wrong", address="10.0.0.7").status_code == 200


def test_signing_in_to_ones_own_account_does_not_refill_the_address_budget(staff: User) -> None:
    for n in range(ADDRESS - 1):
        _sign_in(f"victim{n}@firm.test", "wrong")

    assert _signed_in(_sign_in(staff.email, PASSWORD))
    assert _signed_in(_sign_in(staff.email, PASSWORD))

    # One attempt was left before the sign-ins, and it still is: exactly one more guess.
    assert _sign_in("victim-a@firm.test", "wrong").status_code == 200
    _assert_throttled(_sign_in("victim-b@firm.test", "wrong"), minutes=5)


@pytest.mark.slow
def test_the_budget_is_shared_by_every_process(transactional_db: None, lawyer: User) -> None:
    for _ in range(ACCOUNT):
        _sign_in(lawyer.email, "wrong-password")
    code = (
        "from apps.accounts import throttle; "
        "print(throttle.signin_attempt_begin(email='lawyer@firm.test', client_ip='10.5.5.5'))"
    )

    result = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "shell", "-c", code],
        cwd=BASE_DIR,
        env={
            **os.environ,
            "DATABASE_URL": database_url_for_tests(),
            "LEXWEB_SIGNIN_ACCOUNT_ATTEMPTS": str(ACCOUNT),
            "LEXWEB_SIGNIN_REFILL_SECONDS": str(REFILL),
        },
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )

    # Another process sees the spent budget: it must wait (seconds > 0).
    assert 0 < int(result.stdout.strip().splitlines()[-1]) <= REFILL


def test_no_e_mail_or_address_is_stored_in_the_buckets(lawyer: User) -> None:
    _sign_in(lawyer.email, "wrong-password", address="10.1.2.3")

    keys = " ".join(ThrottleBucket.objects.values_list("key", flat=True))
    assert ThrottleBucket.objects.count() == 2
    assert "lawyer" not in keys and "10.1.2.3" not in keys


def test_buckets_that_are_full_again_are_dropped_when_new_ones_are_made(db: None) -> None:
    _sign_in("first@firm.test", "wrong", address="10.0.0.1")
    assert ThrottleBucket.objects.count() == 2  # the account's and the address's
    _let_time_pass(ACCOUNT * REFILL - 10)
    _sign_in("second@firm.test", "wrong", address="10.0.0.1")
    assert ThrottleBucket.objects.count() == 3  # the first account's is not full yet

    _let_time_pass(ADDRESS * REFILL)
    _sign_in("third@firm.test", "wrong", address="10.0.0.2")

    # Only the third attempt's buckets are left: every other one had refilled.
    assert ThrottleBucket.objects.count() == 2


# --- The admin's sign-in and the confirm page ---------------------------------------------


def test_the_admin_sign_in_is_throttled_too(admin_user: User) -> None:
    for _ in range(ACCOUNT):
        assert _sign_in(admin_user.email, "wrong", path="/admin/login/").status_code == 200

    _assert_throttled(_sign_in(admin_user.email, PASSWORD, path="/admin/login/"), minutes=5)
    # The same account's budget on the app's page.
    _assert_throttled(_sign_in(admin_user.email, PASSWORD), minutes=5)


def test_the_confirm_password_page_is_throttled_per_account(lawyer: User) -> None:
    browser = session_client(lawyer)
    for _ in range(ACCOUNT):
        assert browser.post("/accounts/reauth/", {"password": "wrong"}).status_code == 400

    _assert_throttled(browser.post("/accounts/reauth/", {"password": PASSWORD}), minutes=5)


# --- Audit --------------------------------------------------------------------------------


def _events(action: str) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(action=action).order_by("pk"))


@pytest.mark.parametrize("path", ["/accounts/login/", "/admin/login/"])
def test_a_password_typed_into_the_e_mail_field_is_never_stored(
    admin_user: User, path: str
) -> None:
    _sign_in("Tr0ub4dor&3-my-password", "", path=path)
    _sign_in(admin_user.email, "wrong", path=path)

    [typo, wrong] = _events("auth.login_failed")
    assert (typo.actor, typo.actor_label, typo.target_id) == (None, "unknown account", "")
    assert (wrong.actor_label, wrong.target_id) == (admin_user.email, str(admin_user.pk))
    stored = str(list(AuditEvent.objects.values()))
    assert "Tr0ub4dor" not in stored


@pytest.mark.parametrize(
    "data",
    [
        {"username": "lawyer@firm.test", "password": "wrong"},
        {"username": "not an e-mail", "password": "whatever"},
        {"username": "", "password": ""},
        {},
    ],
    ids=["wrong password", "not an e-mail", "empty", "nothing"],
)
def test_every_failed_sign_in_is_audited_exactly_once(lawyer: User, data: dict[str, str]) -> None:
    response = Client().post("/accounts/login/", data)

    assert response.status_code == 200
    [event] = _events("auth.login_failed")
    assert (event.client_ip, event.via) == ("127.0.0.1", "web")


def test_a_throttled_attempt_is_audited_once_as_throttled(lawyer: User) -> None:
    for _ in range(ACCOUNT):
        _sign_in(lawyer.email, "wrong")

    _sign_in(lawyer.email, PASSWORD)

    assert len(_events("auth.login_failed")) == ACCOUNT
    [throttled] = _events("auth.login_throttled")
    assert throttled.actor_label == lawyer.email
    assert not _events("auth.login")


def test_a_failed_sign_in_naming_no_account_with_nul_bytes_is_recorded(db: None) -> None:
    event = services.signin_failure_record(tried="x\x00y")

    assert event.actor_label == "unknown account"


# --- API: bad bearer tokens ---------------------------------------------------------------


def test_repeated_bad_bearer_tokens_from_one_address_get_429_with_retry_after(
    lawyer: User,
) -> None:
    good = services.token_create(user=lawyer, name="agent")
    bad = Client(headers={"authorization": "Bearer lxw_nothing_here"})

    answers = [bad.get("/api/v1/me").status_code for _ in range(3)]
    throttled = bad.get("/api/v1/me")
    good_same_address = Client(headers={"authorization": f"Bearer {good.secret}"}).get("/api/v1/me")
    good_elsewhere = Client(
        REMOTE_ADDR="10.0.0.9", headers={"authorization": f"Bearer {good.secret}"}
    ).get("/api/v1/me")

    assert answers == [401, 401, 401]
    assert throttled.status_code == 429
    assert throttled.json() == {
        "detail": "Too many requests with bad tokens from this address: try again in 1 "
        "minute, with a valid token.",
        "code": "throttled",
    }
    assert 0 < int(throttled["Retry-After"]) <= 60
    # A valid token is never held up by someone else's bad ones.
    assert good_same_address.status_code == 200
    assert good_elsewhere.status_code == 200
    assert bad.get("/api/v1/me").status_code == 429


def test_good_tokens_and_sessions_never_spend_the_bad_token_budget(lawyer: User) -> None:
    good = services.token_create(user=lawyer, name="agent")
    agent = Client(headers={"authorization": f"Bearer {good.secret}"})
    browser = session_client(lawyer)

    answers = {agent.get("/api/v1/me").status_code for _ in range(10)}
    answers |= {browser.get("/api/v1/me").status_code for _ in range(10)}

    assert answers == {200}
    assert not ThrottleBucket.objects.exists()


def test_the_bad_token_budget_refills(lawyer: User) -> None:
    bad = Client(headers={"authorization": "Bearer lxw_nothing_here"})
    for _ in range(3):
        bad.get("/api/v1/me")
    assert bad.get("/api/v1/me").status_code == 429

    _let_time_pass(60)

    assert bad.get("/api/v1/me").status_code == 401
