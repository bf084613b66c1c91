"""Writes for users, API tokens and the audit log."""

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, models, transaction
from django.utils import timezone

from apps.accounts.context import current_origin
from apps.accounts.models import ApiToken, AuditEvent, User
from lexweb.errors import Conflict, DomainError, NotFound

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


# --- Users ------------------------------------------------------------------------------------


@transaction.atomic
def user_create(
    *,
    email: str,
    full_name: str,
    role: str,
    password: str | None,
    actor: User | None,
) -> User:
    """Create a user. Admins get the Django admin; a None password means "cannot sign in yet"."""
    email = email.strip().lower()
    try:
        validate_email(email)
    except ValidationError:
        raise DomainError(f"{email!r} is not an e-mail address.") from None
    if role not in User.Role.values:
        raise DomainError(f"Unknown role {role!r}; use one of {', '.join(User.Role.values)}.")
    if User.objects.filter(email__iexact=email).exists():
        raise Conflict(f"A user with e-mail {email} already exists.")
    is_admin = role == User.Role.ADMIN
    user = User(
        email=email,
        full_name=full_name.strip(),
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


USER_EDITABLE_FIELDS = ("email", "full_name", "role", "is_active")


def user_update_validate(*, user: User, changes: dict[str, str | bool]) -> None:
    """Raise DomainError if `changes` may not be applied to `user`. Writes nothing."""
    unknown = set(changes) - set(USER_EDITABLE_FIELDS)
    if unknown:
        raise DomainError(f"Cannot change {', '.join(sorted(unknown))}.")
    if "role" in changes and changes["role"] not in User.Role.values:
        raise DomainError(f"Unknown role {changes['role']!r}.")
    loses_admin = user.role == User.Role.ADMIN and (
        changes.get("role", user.role) != User.Role.ADMIN or changes.get("is_active") is False
    )
    others = User.objects.filter(role=User.Role.ADMIN, is_active=True).exclude(pk=user.pk)
    if loses_admin and not others.exists():
        raise Conflict("This is the last active admin; make someone else an admin first.")


@transaction.atomic
def user_update(*, actor: User, user_id: int, changes: dict[str, str | bool]) -> User:
    """Change a user's name, e-mail, role or active flag. Admin-site access follows the role."""
    user = User.objects.select_for_update().filter(pk=user_id).first()
    if user is None:
        raise NotFound(f"No user {user_id}.")
    user_update_validate(user=user, changes=changes)
    for name, value in changes.items():
        setattr(user, name, value)
    user.is_staff = user.is_superuser = user.role == User.Role.ADMIN
    user.save()
    audit_record(
        actor=actor,
        action="user.update",
        target=user,
        detail={"fields": ",".join(sorted(changes)), "role": user.role, "active": user.is_active},
    )
    return user


# --- API tokens -------------------------------------------------------------------------------


@dataclass(frozen=True)
class IssuedToken:
    """A freshly created token. `secret` exists only here: it is shown once, never stored."""

    token: ApiToken
    secret: str


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@transaction.atomic
def token_create(*, user: User, name: str, expires_at: datetime | None = None) -> IssuedToken:
    name = name.strip()
    if not name:
        raise DomainError("A token needs a name, e.g. the agent or machine that will use it.")
    if len(name) > 100:
        raise DomainError("A token name is at most 100 characters.")
    now = timezone.now()
    if expires_at is not None:
        if timezone.is_naive(expires_at):
            raise DomainError("The expiry needs a time zone.")
        if expires_at <= now:
            raise DomainError("The expiry must be in the future.")
        if expires_at > now + timedelta(days=settings.LEXWEB_TOKEN_MAX_DAYS):
            raise DomainError(f"A token may live at most {settings.LEXWEB_TOKEN_MAX_DAYS} days.")
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
    audit_record(actor=user, action="token.create", target=token)
    return IssuedToken(token=token, secret=raw)


@transaction.atomic
def token_revoke(*, user: User, token_id: int) -> ApiToken:
    """Revoke one of `user`'s tokens. Idempotent: revoking a revoked token changes nothing."""
    token = ApiToken.objects.select_for_update().filter(pk=token_id, user=user).first()
    if token is None:
        raise NotFound(f"No token {token_id}.")
    if token.revoked_at is None:
        token.revoked_at = timezone.now()
        token.save(update_fields=["revoked_at"])
        audit_record(actor=user, action="token.revoke", target=token)
    return token


def token_authenticate(*, raw: str) -> User | None:
    """Return the live token's active user, or None. Records when the token was last used."""
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
    return token.user
