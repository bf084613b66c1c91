"""Writes for users, API tokens and the audit log."""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.password_validation import validate_password
from django.contrib.sessions.models import Session
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from apps.accounts.context import current_origin
from apps.accounts.events import publish_access_ended
from apps.accounts.models import ApiToken, AuditEvent, User
from lexweb.errors import Conflict, DomainError, NotFound, PermissionDenied

TOKEN_PREFIX = "lxw"  # noqa: S105  (the public marker of our tokens, not a secret)
# Writing last_used_at on every request would turn reads into writes; a minute is precise enough.
_LAST_USED_GRANULARITY = timedelta(minutes=1)


# --- Audit ------------------------------------------------------------------------------------


def audit_record(
    *,
    actor: User | None,
    action: str,
    case: models.Model | None = None,
    target: models.Model | None = None,
    detail: dict[str, str | int | bool | None] | None = None,
    actor_label: str = "",
) -> AuditEvent:
    """Append one event. The client address and edge come from the current request context."""
    where = current_origin()
    return AuditEvent.objects.create(
        actor=actor,
        actor_label=actor_label or (actor.email if actor is not None else ""),
        action=action,
        case_id=case.pk if case is not None else None,
        target_type=target._meta.label_lower if target is not None else "",
        target_id=str(target.pk) if target is not None else "",
        target_label=str(target)[:300] if target is not None else "",
        client_ip=where.client_ip,
        via=where.via,
        detail=detail or {},
    )


UNKNOWN_ACCOUNT = "unknown account"


def signin_failure_record(*, tried: str, action: str = "auth.login_failed") -> AuditEvent:
    """Audit one failed (or throttled) sign-in. What was typed is kept only when it is the
    e-mail of an existing account: anything else (a typo, a password typed into the e-mail
    field) is recorded as "unknown account"."""
    tried = tried.strip()
    account = None
    if tried and len(tried) <= 254 and "\x00" not in tried:
        account = User.objects.filter(email__iexact=tried).first()
    return audit_record(
        actor=None,
        action=action,
        target=account,
        actor_label=account.email if account is not None else UNKNOWN_ACCOUNT,
    )


def user_reauthenticate(*, user: User, password: str) -> None:
    """Confirm that the person at the browser knows `user`'s password (before creating a token).
    Audited either way; a wrong password raises DomainError."""
    if not password or not user.check_password(password):
        audit_record(actor=user, action="auth.reauth_failed")
        raise DomainError("That is not your password. Enter the password you sign in with.")
    audit_record(actor=user, action="auth.reauth")


# --- Users ------------------------------------------------------------------------------------


FULL_NAME_MAX = 200  # User.full_name's max_length


def user_can_manage_people(user: User) -> bool:
    """Whether `user` may create accounts, change them and set their passwords: active admins."""
    return bool(user.is_authenticated and user.is_active and user.role == User.Role.ADMIN)


def _clean_email(email: str) -> str:
    """The address as stored (trimmed, lower case), or DomainError saying what is wrong."""
    email = email.strip().lower()
    if not email:
        raise DomainError("Give an e-mail address.")
    if len(email) > 254:
        raise DomainError("An e-mail address is at most 254 characters.")
    try:
        validate_email(email)
    except ValidationError:
        raise DomainError(f"{email!r} is not an e-mail address.") from None
    return email


def _clean_full_name(full_name: str) -> str:
    """The name as stored (trimmed), or DomainError: at most 200 characters, no control
    characters (PostgreSQL refuses NUL; the others only hide what the name says)."""
    full_name = full_name.strip()
    if len(full_name) > FULL_NAME_MAX:
        raise DomainError(f"A name is at most {FULL_NAME_MAX} characters.")
    if any(ord(ch) < 32 or ord(ch) == 127 for ch in full_name):
        raise DomainError("A name cannot hold control characters.")
    return full_name


@transaction.atomic
def user_create(
    *,
    email: str,
    full_name: str,
    role: str,
    password: str | None,
    actor: User | None,
) -> User:
    """Create a user. Admins get the Django admin; a None password means "cannot sign in yet".
    `actor` None is the command line; a person who creates one must be an active admin."""
    if actor is not None and not user_can_manage_people(actor):
        raise PermissionDenied("Only an admin may create accounts.")
    email = _clean_email(email)
    if role not in User.Role.values:
        raise DomainError(f"Unknown role {role!r}; use one of {', '.join(User.Role.values)}.")
    full_name = _clean_full_name(full_name)
    if User.objects.filter(email__iexact=email).exists():
        raise Conflict(f"A user with e-mail {email} already exists.")
    is_admin = role == User.Role.ADMIN
    user = User(
        email=email,
        full_name=full_name,
        role=role,
        is_staff=is_admin,
        is_superuser=is_admin,
    )
    if password is None:
        user.set_unusable_password()
    else:
        try:
            validate_password(password, user)
        except ValidationError as exc:
            raise DomainError(" ".join(exc.messages)) from None
        user.set_password(password)
    user.save()
    audit_record(actor=actor, action="user.create", target=user, detail={"role": role})
    return user


@transaction.atomic
def user_password_set(*, actor: User, user_id: int, password: str) -> User:
    """An admin sets a person's password (a first one, or a new one they forgot). The
    password rules apply; the person's browser sessions end (Django's session hash changes,
    and their open sockets close at the next check); their API tokens stay. Audited, without
    the password."""
    if actor.role != User.Role.ADMIN or not actor.is_active:
        raise PermissionDenied("Only an admin may set another person's password.")
    user = User.objects.select_for_update().filter(pk=user_id).first()
    if user is None:
        raise NotFound("No such user.")
    had_one = password_store(user=user, password=password)
    audit_record(actor=actor, action="user.password_set", target=user, detail={"replaced": had_one})
    return user


def password_store(*, user: User, password: str) -> bool:
    """Store `password` as `user`'s after the password rules (and a length cap), and say
    whether it replaced one. The caller audits it, never with the password."""
    if len(password) > 4096:
        raise DomainError("A password is at most 4,096 characters.")
    try:
        validate_password(password, user)
    except ValidationError as exc:
        raise DomainError(" ".join(exc.messages)) from None
    had_one = user.has_usable_password()
    user.set_password(password)
    user.save(update_fields=["password"])
    return had_one


USER_EDITABLE_FIELDS = ("email", "full_name", "role", "is_active")


def user_update_validate(*, user: User, changes: dict[str, str | bool]) -> None:
    """Raise DomainError if `changes` may not be applied to `user`. Writes nothing."""
    unknown = set(changes) - set(USER_EDITABLE_FIELDS)
    if unknown:
        raise DomainError(f"Cannot change {', '.join(sorted(unknown))}.")
    if "role" in changes and changes["role"] not in User.Role.values:
        raise DomainError(f"Unknown role {changes['role']!r}.")
    if "full_name" in changes:
        _clean_full_name(str(changes["full_name"]))
    if "email" in changes:
        email = _clean_email(str(changes["email"]))
        if User.objects.filter(email__iexact=email).exclude(pk=user.pk).exists():
            raise Conflict(f"A user with e-mail {email} already exists.")
    loses_admin = user.role == User.Role.ADMIN and (
        changes.get("role", user.role) != User.Role.ADMIN or changes.get("is_active") is False
    )
    others = User.objects.filter(role=User.Role.ADMIN, is_active=True).exclude(pk=user.pk)
    if loses_admin and not others.exists():
        raise Conflict("This is the last active admin; make someone else an admin first.")


def _sessions_end(*, user_id: int) -> int:
    """Delete the person's live browser sessions; how many. The session table does not say whose
    a session is until it is decoded: as many are decoded as people signed in within
    LEXWEB_SESSION_SECONDS. Each delete tells the session's sockets (receivers.py)."""
    ended = 0
    for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator():
        if session.get_decoded().get(SESSION_KEY) == str(user_id):
            session.delete()
            ended += 1
    return ended


@transaction.atomic
def user_update(*, actor: User, user_id: int, changes: dict[str, str | bool]) -> User:
    """Change a user's name, e-mail, role or active flag. Admin-site access follows the role.
    Deactivating ends the person's browser sessions (else reactivating would let an old one,
    on a lost laptop say, back in) and closes their open websockets (receivers.py, on every
    save of an inactive user, whoever saves it)."""
    if not user_can_manage_people(actor):
        raise PermissionDenied("Only an admin may change accounts.")
    user = User.objects.select_for_update().filter(pk=user_id).first()
    if user is None:
        raise NotFound(f"No user {user_id}.")
    user_update_validate(user=user, changes=changes)
    changes = dict(changes)
    if "full_name" in changes:
        changes["full_name"] = _clean_full_name(str(changes["full_name"]))
    if "email" in changes:
        changes["email"] = _clean_email(str(changes["email"]))
    for name, value in changes.items():
        setattr(user, name, value)
    user.is_staff = user.is_superuser = user.role == User.Role.ADMIN
    user.save()
    if changes.get("is_active") is False:
        _sessions_end(user_id=user.pk)
    audit_record(
        actor=actor,
        action="user.update",
        target=user,
        detail={"fields": ",".join(sorted(changes)), "role": user.role, "active": user.is_active},
    )
    return user


def user_set_active(*, actor: User, user_id: int, active: bool) -> User:
    """Deactivate a person (they can no longer sign in, their open sockets close, their API
    tokens stop working; nothing of theirs is deleted) or let them back in. Not oneself: an
    admin who locks themselves out needs another admin anyway. Audited as user.update."""
    if user_id == actor.pk and not active:
        raise Conflict("You cannot deactivate your own account; ask another admin.")
    return user_update(actor=actor, user_id=user_id, changes={"is_active": active})


# --- API tokens -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedToken:
    """A freshly created token. `secret` exists only here: it is shown once, never stored."""

    token: ApiToken
    secret: str


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def token_default_days() -> int:
    """Days a token lives when its maker names no expiry: LEXWEB_TOKEN_DEFAULT_DAYS, never
    more than LEXWEB_TOKEN_MAX_DAYS."""
    return min(settings.LEXWEB_TOKEN_DEFAULT_DAYS, settings.LEXWEB_TOKEN_MAX_DAYS)


def _token_expiry(expires_at: datetime | None, *, now: datetime) -> datetime:
    if expires_at is None:
        return now + timedelta(days=token_default_days())
    if timezone.is_naive(expires_at):
        raise DomainError("The expiry needs a time zone.")
    if expires_at <= now:
        raise DomainError("The expiry must be in the future.")
    if expires_at > now + timedelta(days=settings.LEXWEB_TOKEN_MAX_DAYS):
        raise DomainError(f"A token may live at most {settings.LEXWEB_TOKEN_MAX_DAYS} days.")
    return expires_at


@transaction.atomic
def token_create(
    *,
    user: User,
    name: str,
    expires_at: datetime | None = None,
    issuer: User | None = None,
    issuer_label: str = "",
) -> IssuedToken:
    """Make a token. Every token expires: at `expires_at` (within LEXWEB_TOKEN_MAX_DAYS), or
    when none is given, after token_default_days(). Made by its owner unless `issuer` (an
    admin in the admin site) or `issuer_label` (the command line) says who made it for them:
    the audit row names that maker as the actor and the owner in its detail."""
    if not user.is_active:
        raise DomainError(f"{user.email} is deactivated; a token for them would not work.")
    name = name.strip()
    if not name:
        raise DomainError("A token needs a name, e.g. the agent or machine that will use it.")
    if len(name) > 100:
        raise DomainError("A token name is at most 100 characters.")
    expires_at = _token_expiry(expires_at, now=timezone.now())
    if ApiToken.objects.filter(user=user, name=name, revoked_at__isnull=True).exists():
        raise Conflict(f"You already have a live token named {name!r}.")
    prefix = secrets.token_hex(6)
    raw = f"{TOKEN_PREFIX}_{prefix}_{secrets.token_urlsafe(32)}"
    try:
        with transaction.atomic():
            token = ApiToken.objects.create(
                user=user, name=name, prefix=prefix, digest=_digest(raw), expires_at=expires_at
            )
    except IntegrityError:
        raise Conflict(f"You already have a live token named {name!r}.") from None
    if issuer is None and not issuer_label:
        audit_record(actor=user, action="token.create", target=token)
    else:
        audit_record(
            actor=issuer,
            actor_label=issuer_label,
            action="token.create",
            target=token,
            detail={"owner": user.email, "issued_for_another": True},
        )
    return IssuedToken(token=token, secret=raw)


def token_issue_for(
    *,
    admin: User,
    user_id: int,
    name: str,
    expires_at: datetime | None,
    reauthenticated_at: datetime | None,
) -> IssuedToken:
    """An admin makes a token for a person (e.g. the account an agent works as), in the admin
    site, within LEXWEB_REAUTH_SECONDS of entering their own password."""
    if admin.role != User.Role.ADMIN or not admin.is_active:
        raise PermissionDenied("Only an admin may issue a token for someone else.")
    if not reauthentication_fresh(reauthenticated_at=reauthenticated_at):
        raise ReauthenticationRequired(
            f"Issuing a token needs your password, entered within the last {reauth_minutes()} "
            f"minutes: confirm it at /accounts/reauth/, then try again."
        )
    user = User.objects.filter(pk=user_id).first()
    if user is None:
        raise NotFound("No such user.")
    return token_create(user=user, name=name, expires_at=expires_at, issuer=admin)


class ReauthenticationRequired(PermissionDenied):
    """The action needs the password entered again, recently (403, code reauth_required)."""

    code = "reauth_required"


def reauthentication_fresh(*, reauthenticated_at: datetime | None) -> bool:
    """Whether a password entered at `reauthenticated_at` still counts (LEXWEB_REAUTH_SECONDS)."""
    if reauthenticated_at is None:
        return False
    age = timezone.now() - reauthenticated_at
    return timedelta(0) <= age <= timedelta(seconds=settings.LEXWEB_REAUTH_SECONDS)


def reauth_minutes() -> int:
    return max(1, -(-settings.LEXWEB_REAUTH_SECONDS // 60))


def token_issue(
    *,
    user: User,
    name: str,
    expires_at: datetime | None,
    via_token: ApiToken | None,
    reauthenticated_at: datetime | None,
) -> IssuedToken:
    """Create a token for a person at a browser: never for a request made with a token (a
    token must not outlive or outrank itself), and only within LEXWEB_REAUTH_SECONDS of the
    person entering their password (at sign-in or on the confirm-password page)."""
    if via_token is not None:
        raise PermissionDenied(
            "An API token cannot create tokens. Create one in the browser under API tokens "
            "(you will be asked for your password)."
        )
    if not reauthentication_fresh(reauthenticated_at=reauthenticated_at):
        raise ReauthenticationRequired(
            f"Creating a token needs your password, entered within the last {reauth_minutes()} "
            f"minutes: confirm it at /accounts/reauth/, then try again."
        )
    return token_create(user=user, name=name, expires_at=expires_at)


@transaction.atomic
def token_revoke(
    *,
    user: User,
    token_id: int,
    actor: User | None = None,
    via_token: ApiToken | None = None,
) -> ApiToken:
    """Revoke one of `user`'s tokens (`actor`: who does it, default the user). Idempotent:
    revoking a revoked token changes nothing. A request made with a token may revoke only that
    token. Sockets opened with the token close at once."""
    if via_token is not None and via_token.pk != token_id:
        if not ApiToken.objects.filter(pk=token_id, user=user).exists():
            raise NotFound(f"No token {token_id}.")
        raise PermissionDenied(
            "An API token can revoke only itself. Revoke other tokens in the browser under "
            "API tokens."
        )
    token = ApiToken.objects.select_for_update().filter(pk=token_id, user=user).first()
    if token is None:
        raise NotFound(f"No token {token_id}.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(actor=actor or user, action="token.revoke", target=token)
        publish_access_ended(user_id=user.pk, reason="token_revoked", token_ids=[token.pk])
    return token


@transaction.atomic
def token_revoke_all(*, user: User, actor: User) -> int:
    """Revoke every live token of `user` in one step; return how many. One audit event names
    them all; their sockets close at once."""
    tokens = list(
        ApiToken.objects.select_for_update()
        .filter(user=user, revoked_at__isnull=True)
        .order_by("pk")
    )
    if not tokens:
        return 0
    now = timezone.now()
    ApiToken.objects.filter(pk__in=[t.pk for t in tokens]).update(revoked_at=now)
    audit_record(
        actor=actor,
        action="token.revoke_all",
        target=user,
        detail={"count": len(tokens), "token_ids": ",".join(str(t.pk) for t in tokens)},
    )
    publish_access_ended(user_id=user.pk, reason="token_revoked", token_ids=[t.pk for t in tokens])
    return len(tokens)


def token_authenticate_full(*, raw: str) -> ApiToken | None:
    """Return the live token (its user loaded and active), or None. Records when the token was
    last used."""
    # PostgreSQL refuses NUL in text: such a header would be a database error, not a 401.
    if len(raw) > 200 or "\x00" in raw:
        return None
    parts = raw.split("_", 2)
    if len(parts) != 3 or parts[0] != TOKEN_PREFIX:
        return None
    token = ApiToken.objects.select_related("user").filter(prefix=parts[1]).first()
    if token is None or not hmac.compare_digest(token.digest, _digest(raw)):
        return None
    now = timezone.now()
    if not token.is_live(now) or not token.user.is_active:
        return None
    if token.last_used_at is None or now - token.last_used_at > _LAST_USED_GRANULARITY:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
    return token


def token_authenticate(*, raw: str) -> User | None:
    """Return the live token's active user, or None. Records when the token was last used."""
    token = token_authenticate_full(raw=raw)
    return token.user if token is not None else None
