"""Throttles for guessing: sign-ins per account and per client address, bad API tokens per
address. Token buckets in PostgreSQL (`ThrottleBucket`), so the budget holds across every web
process and host; each take is one statement, so two processes cannot both spend the last one.

A bucket holds up to its budget; an attempt takes one; one comes back every `refill` seconds.
Sign-in attempts take from both buckets before the password is checked (so a throttled client
learns nothing, not even with the right password) and a successful sign-in gives back what its
own attempt took, nothing more: signing in to one's own account never refills the address's
budget that was spent guessing at others.
"""

import hashlib
import hmac
import math
from dataclasses import dataclass

from django.conf import settings
from django.db import connection

from apps.accounts.models import ThrottleBucket
from lexweb.errors import DomainError


class TooManyAttempts(DomainError):
    """Throttled (429, with Retry-After: `retry_after` seconds)."""

    code = "throttled"

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass(frozen=True)
class Budget:
    kind: str
    size: int
    refill_seconds: int


def signin_account_budget() -> Budget:
    return Budget(
        "signin-account",
        settings.LEXWEB_SIGNIN_ACCOUNT_ATTEMPTS,
        settings.LEXWEB_SIGNIN_REFILL_SECONDS,
    )


def signin_address_budget() -> Budget:
    return Budget(
        "signin-address",
        settings.LEXWEB_SIGNIN_ADDRESS_ATTEMPTS,
        settings.LEXWEB_SIGNIN_REFILL_SECONDS,
    )


def api_token_budget() -> Budget:
    return Budget(
        "api-token-address",
        settings.LEXWEB_API_BAD_TOKEN_ATTEMPTS,
        settings.LEXWEB_API_BAD_TOKEN_REFILL_SECONDS,
    )


def minutes(seconds: int) -> int:
    """Seconds to wait, as the whole minutes a page says ("try again in N minutes")."""
    return max(1, math.ceil(seconds / 60))


def minutes_text(seconds: int) -> str:
    n = minutes(seconds)
    return f"{n} minute{'s' if n != 1 else ''}"


# --- Sign-in --------------------------------------------------------------------------------


def signin_attempt_begin(*, email: str, client_ip: str | None) -> int:
    """Take one attempt from the account's and the address's budgets. Return 0 when the attempt
    may go ahead, else the seconds until it may (nothing is taken then)."""
    account, address = _account(email), _address(client_ip)
    wait = _take(signin_account_budget(), account)
    if wait:
        return wait
    wait = _take(signin_address_budget(), address)
    if wait:
        _give_back(signin_account_budget(), account)
    return wait


def signin_attempt_succeeded(*, email: str, client_ip: str | None) -> None:
    """The attempt signed in: give back what it took (and only that)."""
    _give_back(signin_account_budget(), _account(email))
    _give_back(signin_address_budget(), _address(client_ip))


def signin_link_attempt_begin(*, client_ip: str | None) -> int:
    """Opening a sign-in link is an attempt of `client_ip`'s sign-in budget (a link names no
    account until it is found). Return 0 when it may go ahead, else the seconds to wait."""
    return _take(signin_address_budget(), _address(client_ip))


def signin_link_attempt_succeeded(*, client_ip: str | None) -> None:
    """The link worked: give back what its attempt took."""
    _give_back(signin_address_budget(), _address(client_ip))


# --- API tokens -----------------------------------------------------------------------------


def api_token_failed(*, client_ip: str | None) -> int:
    """A bad bearer token from `client_ip`: take one from its budget. Return 0 while the
    budget lasted, else the seconds until it has one again."""
    return _take(api_token_budget(), _address(client_ip))


# --- Buckets --------------------------------------------------------------------------------


def _account(email: str) -> str:
    return "account:" + email.strip().lower()


def _address(client_ip: str | None) -> str:
    return "address:" + (client_ip or "unknown")


def _key(budget: Budget, value: str) -> str:
    digest = hmac.new(settings.SECRET_KEY.encode(), value.encode(), hashlib.sha256).hexdigest()
    return f"{budget.kind}:{digest}"


_TABLE = ThrottleBucket._meta.db_table
# What the bucket holds now: what it held, plus the refill since, up to the budget.
_NOW = (
    "LEAST(%(size)s, b.tokens + GREATEST(0, EXTRACT(EPOCH FROM clock_timestamp() - b.updated_at))"
    " / %(refill)s)"
)
# Built once from the table name and the expression above; values only ever go as parameters.
_TAKE = (
    f"INSERT INTO {_TABLE} AS b (key, tokens, updated_at) "  # noqa: S608
    f"VALUES (%(key)s, %(size)s - 1, clock_timestamp()) "
    f"ON CONFLICT (key) DO UPDATE SET tokens = {_NOW} - 1, updated_at = clock_timestamp() "
    f"WHERE {_NOW} >= 1 RETURNING (b.xmax = 0) AS inserted"
)
# A bucket untouched for long enough to be full again is the same as no bucket.
_PRUNE = (
    f"DELETE FROM {_TABLE} WHERE key LIKE %(kind)s "  # noqa: S608
    f"AND updated_at < clock_timestamp() - make_interval(secs => %(full_after)s)"
)
_GIVE_BACK = (
    f"UPDATE {_TABLE} AS b SET tokens = LEAST(%(size)s, {_NOW} + 1), "  # noqa: S608
    f"updated_at = clock_timestamp() WHERE b.key = %(key)s"
)
_LEFT = f"SELECT {_NOW} FROM {_TABLE} AS b WHERE b.key = %(key)s"  # noqa: S608


def _params(budget: Budget, value: str) -> dict[str, str | int]:
    return {"key": _key(budget, value), "size": budget.size, "refill": budget.refill_seconds}


def _take(budget: Budget, value: str) -> int:
    """Take one; 0 if taken, else the seconds until one is there."""
    with connection.cursor() as cursor:
        cursor.execute(_TAKE, _params(budget, value))
        row = cursor.fetchone()
        if row is not None and row[0]:
            # A new bucket: drop this kind's full ones, so the table stays as small as the
            # attempts of the last refill period.
            full_after = budget.size * budget.refill_seconds
            cursor.execute(_PRUNE, {"kind": f"{budget.kind}:%", "full_after": full_after})
    return 0 if row is not None else _wait(budget, value)


def _give_back(budget: Budget, value: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(_GIVE_BACK, _params(budget, value))


def _wait(budget: Budget, value: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(_LEFT, _params(budget, value))
        row = cursor.fetchone()
    if row is None or float(row[0]) >= 1:
        return 0
    return max(1, math.ceil((1 - float(row[0])) * budget.refill_seconds))
