"""Payloads sent to a person's channel group (`user.<id>`), and the one way to send them.

Every websocket of a signed-in person joins their group; `accounts.access_ended` tells those
sockets that a way in has ended (a token revoked, the account deactivated, a session signed out
or deleted), so they close at once instead of at the next credential check.
"""

import hashlib
from typing import Literal, TypedDict

from lexweb.live import publish_on_commit

AccessEndedReason = Literal[
    "token_revoked", "token_expired", "user_deactivated", "signed_out", "session_ended"
]


class AccessEnded(TypedDict):
    """`user_id` lost one way in. Empty `token_ids` and `session_hash` mean every socket of the
    user; otherwise only the sockets opened with one of those tokens or with that session.
    The session is named by a digest: channel messages are stored in PostgreSQL for a while,
    and a session key is a credential."""

    type: Literal["accounts.access_ended"]
    user_id: int
    reason: AccessEndedReason
    token_ids: list[int]
    session_hash: str


def user_group(user_id: int) -> str:
    return f"user.{user_id}"


def session_hash(session_key: str) -> str:
    return hashlib.sha256(session_key.encode("utf-8")).hexdigest()


def publish_access_ended(
    *,
    user_id: int,
    reason: AccessEndedReason,
    token_ids: list[int] | None = None,
    session_key: str = "",
) -> None:
    """Tell `user_id`'s open sockets (in every process) once the current transaction commits."""
    event: AccessEnded = {
        "type": "accounts.access_ended",
        "user_id": user_id,
        "reason": reason,
        "token_ids": list(token_ids or []),
        "session_hash": session_hash(session_key) if session_key else "",
    }
    publish_on_commit(user_group(user_id), event)
