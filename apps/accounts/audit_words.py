"""What an audit event's action says in words, for the admin's audit log.

The log stores a code per action ("document.upload", "token.create"); the admin's list and page
of an event say what happened ("uploaded contract.pdf", "created API token laptop"). Most codes
are written by apps above accounts, whose words live there (the case page's activity,
`apps.cases.activity`), so each app registers the codes it writes from its `AppConfig.ready`
(docs/architecture/modules.md, "The order of the apps"): accounts its own, below; the cases app
every code its activity tells, with the activity's sentences; the cluster its own. A later
registration of a code replaces an earlier one (the cases app tells the admin's own codes with
a case's words). A code nobody registered is shown as its code; `tests/test_audit_words.py`
walks the code base for every code it writes and fails on one without words.
"""

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol


class Event(Protocol):
    """What the words read of an audit event (apps.accounts.models.AuditEvent, whose `__str__`
    calls `action_text`: named here by what it has, so the two modules import no loop)."""

    @property
    def action(self) -> str: ...

    @property
    def target_label(self) -> str: ...


# A teller receives the AuditEvent itself (an app's teller may read more of it than Event).
Teller = Callable[[Any], str]

_tellers: dict[str, Teller] = {}


def register(codes: Iterable[str], tell: Teller) -> None:
    """`tell(event)` says what happened, after the actor's name, for events of these codes."""
    for code in codes:
        _tellers[code] = tell


def register_words(words: Mapping[str, str]) -> None:
    """Codes told by one sentence each; `{target}` is the event's target ("an item" if none)."""
    table = dict(words)

    def tell(event: Event) -> str:
        return table[event.action].format(target=event.target_label or "an item")

    register(table, tell)


def action_text(event: Event) -> str:
    """What the event's action says in words; its code when no app told it."""
    tell = _tellers.get(event.action)
    return tell(event) if tell is not None else event.action


def registered_codes() -> frozenset[str]:
    return frozenset(_tellers)


# The codes accounts writes: sign-ins, people, tokens, and every change made in the admin.
ACCOUNTS_WORDS = {
    "auth.login": "signed in",
    "auth.logout": "signed out",
    "auth.login_failed": "failed to sign in (wrong password, or no such account)",
    "auth.login_throttled": "was refused signing in: too many attempts",
    "auth.reauth": "confirmed their password",
    "auth.reauth_failed": "typed a wrong password when asked to confirm it",
    "auth.login_link_failed": "opened a sign-in link that does not work (unknown, expired, "
    "used or replaced)",
    "auth.password_choose": "chose their own password after signing in with a link",
    "user.create": "created the account of {target}",
    "user.password_set": "set the password of {target}",
    "user.signin_link_send": "sent a sign-in link to {target}",
    "user.update": "changed the account of {target}",
    "token.create": "created API token {target}",
    "token.revoke": "revoked API token {target}",
    "token.revoke_all": "revoked every API token of {target}",
    "admin.add": "added {target} in the admin",
    "admin.change": "changed {target} in the admin",
    "admin.delete": "deleted {target} in the admin",
    "admin.action": "ran an admin action on {target}",
}
