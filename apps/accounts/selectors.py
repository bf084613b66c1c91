"""Reads for users, tokens, the audit log and what open websockets may still see."""

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from datetime import datetime

from django.contrib.sessions.models import Session
from django.db.models import Q, QuerySet
from django.utils import timezone

from apps.accounts.case_access import case_access
from apps.accounts.models import ApiToken, AuditEvent, User


def token_list_for_user(*, user: User) -> QuerySet[ApiToken]:
    """The user's own tokens, newest first. Nobody sees another person's tokens."""
    return ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at")


def audit_list_for_user(*, user: User, case_id: int | None = None) -> QuerySet[AuditEvent]:
    """Audit events the user may read: those of cases they belong to now, and their own events
    that concern no case (sign-ins, tokens). Events of a case they have left stay behind."""
    member_cases = case_access().member_case_ids(user_id=user.pk)
    events = AuditEvent.objects.select_related("actor", "case")
    if case_id is not None:
        return events.filter(case_id=case_id, case_id__in=member_cases)
    return events.filter(case_id__in=member_cases) | events.filter(actor=user, case__isnull=True)


def user_list_active() -> QuerySet[User]:
    """People who can be added to a case (only names and e-mails leave this function's callers)."""
    return User.objects.filter(is_active=True).order_by("full_name", "email")


PEOPLE_PAGE_MAX = 500


def user_list_for_admin(*, query: str = "") -> QuerySet[User]:
    """Everyone with an account, for the people page (admins only; the view checks), active
    people first; `query` narrows to names or e-mails that contain it."""
    people = User.objects.all()
    query = query.replace("\x00", "").strip()[:254]
    if query:
        people = people.filter(Q(full_name__icontains=query) | Q(email__icontains=query))
    return people.order_by("-is_active", "full_name", "email")


def user_get_for_admin(*, user_id: int) -> User | None:
    """One account, active or not, for an admin's page about it (the People page and the
    Django admin's tools; the caller checks that an admin asks); None when there is none."""
    return User.objects.filter(pk=user_id).first()


# --- Open websockets ------------------------------------------------------------------------


@dataclass(frozen=True)
class SocketAccess:
    """How one open websocket got in: with an API token (`token_id`) or a browser session
    (`session_key`), as `user_id`; for a case stream also the case it follows."""

    user_id: int
    token_id: int | None = None
    token_expires_at: datetime | None = None
    session_key: str = ""
    case_id: int | None = None


# Why a socket's access no longer holds: an events.AccessEndedReason or "membership_ended".
SocketAccessEnded = dict[SocketAccess, str]


def socket_access_ended(*, accesses: Collection[SocketAccess]) -> SocketAccessEnded:
    """Of `accesses`, those that no longer hold, each with the reason (the account first, then
    the token or session, then the membership). Five queries whatever the number of sockets
    (six when a member left a case): the websocket watch checks every socket of a process at
    once."""
    now = timezone.now()
    active = dict(
        User.objects.filter(pk__in={a.user_id for a in accesses}).values_list("pk", "is_active")
    )
    token_ids = {a.token_id for a in accesses if a.token_id is not None}
    tokens = {
        pk: (revoked_at, expires_at)
        for pk, revoked_at, expires_at in ApiToken.objects.filter(pk__in=token_ids).values_list(
            "pk", "revoked_at", "expires_at"
        )
    }
    session_keys = {a.session_key for a in accesses if a.session_key}
    live_sessions = set(
        Session.objects.filter(session_key__in=session_keys, expire_date__gt=now).values_list(
            "session_key", flat=True
        )
    )
    case_ids = {a.case_id for a in accesses if a.case_id is not None}
    case_user_ids = {a.user_id for a in accesses if a.case_id is not None}
    members: set[tuple[int, int]] = set()
    if case_ids:
        # Memberships, and an admin's live break-glass grant until it expires.
        members = case_access().member_pairs(user_ids=case_user_ids, case_ids=case_ids)
    ended: SocketAccessEnded = {}
    for access in accesses:
        reason = _ended_reason(access, active, tokens, live_sessions, members, now)
        if reason:
            ended[access] = reason
    left = [a for a, reason in ended.items() if reason == "membership_ended"]
    if left:
        # Say "break-glass access ended" to an admin who was in by a grant, not as a member.
        by_grant = case_access().grant_pairs(
            user_ids={a.user_id for a in left},
            case_ids={a.case_id for a in left if a.case_id is not None},
        )
        for access in left:
            if (access.user_id, access.case_id) in by_grant:
                ended[access] = "break_glass_ended"
    return ended


def _ended_reason(
    access: SocketAccess,
    active: dict[int, bool],
    tokens: Mapping[int, tuple[datetime | None, datetime | None]],
    live_sessions: set[str],
    members: set[tuple[int, int]],
    now: datetime,
) -> str:
    if not active.get(access.user_id, False):
        return "user_deactivated"
    if access.token_id is not None:
        revoked_at, expires_at = tokens.get(access.token_id, (now, None))
        if revoked_at is not None:
            return "token_revoked"
        if expires_at is not None and expires_at <= now:
            return "token_expired"
    elif access.session_key not in live_sessions:
        return "session_ended"
    if access.case_id is not None and (access.user_id, access.case_id) not in members:
        return "membership_ended"
    return ""
