"""When the person at a browser last entered their password, kept in their session.

Creating an API token needs a recent confirmation (`services.token_issue`); signing in counts,
and so does the confirm-password page (`views.reauthenticate`).
"""

from datetime import datetime

from django.contrib.sessions.backends.base import SessionBase
from django.utils import timezone

REAUTH_SESSION_KEY = "lexweb_reauthenticated_at"


def session_time_mark(session: SessionBase, key: str) -> None:
    """Keep now under `key` in the session."""
    session[key] = timezone.now().isoformat()


def session_time(session: SessionBase, key: str) -> datetime | None:
    """The time kept under `key` in the session (by session_time_mark), or None when there is
    none or it is not an aware ISO time (a session is the client's to send back)."""
    raw = session.get(key)
    if not isinstance(raw, str):
        return None
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return when if timezone.is_aware(when) else None


def mark_reauthenticated(session: SessionBase) -> None:
    session_time_mark(session, REAUTH_SESSION_KEY)


def reauthenticated_at(session: SessionBase) -> datetime | None:
    return session_time(session, REAUTH_SESSION_KEY)


# Flags a sign-in request carries for SignInGuardMiddleware, set by the receivers and views
# that know how the attempt went, so each attempt is counted and audited exactly once.
SIGNED_IN = "_lexweb_signed_in"
CONFIRMED = "_lexweb_password_confirmed"
FAILURE_RECORDED = "_lexweb_signin_failure_recorded"
# Set by the sign-in link's view before it signs the person in: the login is audited as made
# with a link, and it is no password confirmation (creating an API token still asks for one).
SIGNED_IN_BY_LINK = "_lexweb_signed_in_by_link"
