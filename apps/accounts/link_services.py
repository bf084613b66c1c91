"""Sign-in links (issue 25 req 5): where a mail server is configured, an admin sends a person a
link by mail that signs them in once, within LEXWEB_SIGN_IN_LINK_MINUTES; a person without a
password is then asked to choose one.

The secret is random (256 bits) and only its SHA-256 digest is stored, as for API tokens. A
person has at most one open link: sending another voids the earlier one. Opening the link
(GET) changes nothing, since mail scanners fetch links; signing in is a POST from the page it
shows. Every opening is a sign-in attempt of the client address (the sign-in throttle); one
that does not work (unknown, expired, used, replaced, or the account deactivated) is audited
as a failed sign-in, never with the secret.
"""

import hashlib
import logging
import re
import secrets
import smtplib
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.sessions.backends.base import SessionBase
from django.core.mail import EmailMessage
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from apps.accounts import throttle
from apps.accounts.models import SignInLink, User
from apps.accounts.reauth import session_time, session_time_mark
from apps.accounts.services import (
    UNKNOWN_ACCOUNT,
    audit_record,
    password_store,
    user_can_manage_people,
)
from lexweb.errors import Conflict, DomainError, NotFound, PermissionDenied

logger = logging.getLogger(__name__)

# secrets.token_urlsafe(32): 43 characters of the URL-safe base64 alphabet. Anything else in
# the URL is refused before the database is asked.
_SECRET = re.compile(r"[A-Za-z0-9_-]{43}")
# When this session was opened with a sign-in link (it may then choose a new password without
# typing the old one, for LEXWEB_SIGN_IN_LINK_MINUTES).
LINK_SESSION_KEY = "lexweb_signed_in_by_link_at"


class MailNotSent(DomainError):
    """The mail server refused the message or could not be reached (502)."""

    code = "mail_not_sent"
    status = 502


class LinkRefused(DomainError):
    """A sign-in link that does not work; `reason` is what the audit log records."""

    code = "link_refused"

    def __init__(self, message: str, *, reason: str, status: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.status = status  # type: ignore[misc]  # per refusal: 404 unknown, 410 spent


def mail_configured() -> bool:
    """Whether lexweb may send mail: a mail server is named (LEXWEB_EMAIL_HOST)."""
    return bool(settings.EMAIL_HOST)


def link_minutes() -> int:
    return int(settings.LEXWEB_SIGN_IN_LINK_MINUTES)


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def when_text(moment: datetime) -> str:
    """A moment as the mail and pages say it: '5 Dec 2026, 20:15 UTC' (LEXWEB_TIME_ZONE)."""
    local = timezone.localtime(moment)
    return f"{local.day} {local:%b %Y, %H:%M %Z}"


# --- Sending ------------------------------------------------------------------------------------


def signin_link_send(*, actor: User, user_id: int, site_url: str) -> SignInLink:
    """An admin sends a person a sign-in link by mail. Their earlier open link stops working.
    `site_url` is the scheme and host the link names ('https://lexweb.firm.lan'). Audited
    (user.signin_link_send, without the secret). If the mail server refuses or cannot be
    reached, MailNotSent and nothing changes (the earlier link keeps working)."""
    if not user_can_manage_people(actor):
        raise PermissionDenied("Only an admin may send a sign-in link.")
    if not mail_configured():
        raise Conflict(
            "No mail server is configured (LEXWEB_EMAIL_HOST), so lexweb cannot send a sign-in "
            "link. Set a password for the person instead."
        )
    with transaction.atomic():
        user = User.objects.select_for_update().filter(pk=user_id).first()
        if user is None:
            raise NotFound("No such person.")
        if not user.is_active:
            raise Conflict(
                f"{user.email} is deactivated: a sign-in link would not work. Reactivate the "
                f"account first."
            )
        now = timezone.now()
        replaced = SignInLink.objects.filter(
            user=user, used_at__isnull=True, voided_at__isnull=True
        ).update(voided_at=now)
        secret = secrets.token_urlsafe(32)
        link = SignInLink.objects.create(
            user=user,
            sent_by=actor,
            digest=_digest(secret),
            created_at=now,
            expires_at=now + timedelta(minutes=link_minutes()),
        )
        audit_record(
            actor=actor,
            action="user.signin_link_send",
            target=user,
            detail={
                "link": link.pk,
                "expires_at": link.expires_at.isoformat(),
                "replaced": replaced,
            },
        )
        url = site_url.rstrip("/") + reverse("accounts:sign_in_link", kwargs={"secret": secret})
        # Last, inside the transaction: a message that was not sent leaves no link behind.
        _mail(user=user, actor=actor, link=link, url=url)
    return link


def _mail(*, user: User, actor: User, link: SignInLink, url: str) -> None:
    sender = f"{actor.full_name} ({actor.email})" if actor.full_name else actor.email
    then = (
        "After you sign in, lexweb asks you to choose a password."
        if not user.has_usable_password()
        else "After you sign in you can choose a new password, for as long as the link lasted."
    )
    body = (
        f"Hello {user.full_name or user.email},\n\n"
        f"{sender}, an admin of lexweb, sent you this link on {when_text(link.created_at)} to sign "
        f"in as {user.email}:\n\n"
        f"{url}\n\n"
        f"It works once, until {when_text(link.expires_at)} ({link_minutes()} minutes after it was "
        f"sent). Opening it shows a page with a button that signs you in. {then} A newer link "
        f"replaces this one.\n\n"
        f"If you did not expect this message, do not open the link: tell {sender}.\n"
    )
    message = EmailMessage(
        subject="Your sign-in link for lexweb",
        body=body,
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=[user.email],
        headers={"Auto-Submitted": "auto-generated"},
    )
    try:
        message.send(fail_silently=False)
    except (smtplib.SMTPException, OSError) as exc:
        logger.warning("sign-in link for user %s not sent: %s", user.pk, exc)
        raise MailNotSent(
            f"The mail server ({settings.EMAIL_HOST}) did not take the message, so no link was "
            f"sent and an earlier one still works: {exc.__class__.__name__}. Try again later, "
            f"or set a password for the person."
        ) from None


# --- Opening ------------------------------------------------------------------------------------

_REFUSALS = {
    "unknown": (
        404,
        "This is not a working sign-in link. Check that the whole link from the mail was "
        "opened, or ask an admin for a new one.",
    ),
    "expired": (410, "This sign-in link expired at {expired}. Ask an admin for a new one."),
    "used": (
        410,
        "This sign-in link was already used: each link works once. If it was not you who "
        "used it, tell an admin at once. Ask an admin for a new link if you need one.",
    ),
    "replaced": (
        410,
        "A newer sign-in link was sent to you, so this one no longer works. Use the newest "
        "link in your mail.",
    ),
}


def _find(secret: str, *, for_update: bool) -> SignInLink | None:
    if not _SECRET.fullmatch(secret):
        return None
    rows = SignInLink.objects.select_related("user")
    if for_update:
        rows = rows.select_for_update(of=("self",))
    return rows.filter(digest=_digest(secret)).first()


def _refusal(link: SignInLink | None, now: datetime) -> str | None:
    """Why `link` does not work now, or None when it does."""
    if link is None:
        return "unknown"
    if link.used_at is not None:
        return "used"
    if link.voided_at is not None:
        return "replaced"
    if link.expires_at <= now:
        return "expired"
    if not link.user.is_active:
        return "inactive"
    return None


def _refuse(link: SignInLink | None, reason: str) -> LinkRefused:
    """Audit a link that did not work (never its secret) and say why to the person."""
    audit_record(
        actor=None,
        action="auth.login_link_failed",
        target=link.user if link is not None else None,
        actor_label=link.user.email if link is not None else UNKNOWN_ACCOUNT,
        detail={"reason": reason, "link": link.pk if link is not None else None},
    )
    # A deactivated account's link reads as any link that does not work: it gets nothing.
    status, text = _REFUSALS["unknown" if reason == "inactive" else reason]
    expired = when_text(link.expires_at) if link is not None else ""
    return LinkRefused(text.format(expired=expired), reason=reason, status=status)


def _attempt(client_ip: str | None) -> None:
    wait = throttle.signin_link_attempt_begin(client_ip=client_ip)
    if wait:
        audit_record(
            actor=None,
            action="auth.login_throttled",
            actor_label=UNKNOWN_ACCOUNT,
            detail={"by": "sign-in link"},
        )
        raise throttle.TooManyAttempts(
            f"Too many sign-in attempts: try again in {throttle.minutes_text(wait)}.",
            retry_after=wait,
        )


def signin_link_check(*, secret: str, client_ip: str | None) -> SignInLink:
    """The link behind `secret`, if it works now, for the page that asks to confirm: it
    changes nothing of the link (mail scanners open links). Throttled and, when refused,
    audited like a sign-in: TooManyAttempts or LinkRefused."""
    _attempt(client_ip)
    link = _find(secret, for_update=False)
    reason = _refusal(link, timezone.now())
    if reason is not None:
        raise _refuse(link, reason)
    throttle.signin_link_attempt_succeeded(client_ip=client_ip)
    assert link is not None  # noqa: S101  (_refusal said "unknown" otherwise)
    return link


def signin_link_use(*, secret: str, client_ip: str | None) -> User:
    """Spend the link behind `secret`: return the person it signs in (the caller signs them in
    at once; the login receiver audits auth.login "by sign-in link"). Works once: two requests
    at the same moment lock the row, the second finds it used. TooManyAttempts or LinkRefused
    (audited) otherwise."""
    _attempt(client_ip)
    with transaction.atomic():
        link = _find(secret, for_update=True)
        now = timezone.now()
        reason = _refusal(link, now)
        if link is not None and reason is None:
            link.used_at = now
            link.save(update_fields=["used_at"])
    if reason is not None:
        raise _refuse(link, reason)
    throttle.signin_link_attempt_succeeded(client_ip=client_ip)
    assert link is not None  # noqa: S101
    return link.user


# --- The session a link opened ------------------------------------------------------------------


def session_mark_signed_in_by_link(session: SessionBase) -> None:
    session_time_mark(session, LINK_SESSION_KEY)


def signed_in_by_link_at(session: SessionBase) -> datetime | None:
    return session_time(session, LINK_SESSION_KEY)


def password_choose_allowed(*, user: User, link_signed_in_at: datetime | None) -> bool:
    """Whether `user` may choose a password without typing a current one: they have none, or
    their session was opened with a sign-in link within LEXWEB_SIGN_IN_LINK_MINUTES (the link
    stood for the password they forgot)."""
    if not user.is_active:
        return False
    if not user.has_usable_password():
        return True
    if link_signed_in_at is None:
        return False
    age = timezone.now() - link_signed_in_at
    return timedelta(0) <= age <= timedelta(minutes=link_minutes())


def password_choose(*, user: User, password: str, link_signed_in_at: datetime | None) -> User:
    """A person chooses their own password after signing in with a link. The password rules
    apply; audited (auth.password_choose, without the password). The caller keeps the
    person's current session (update_session_auth_hash); their other sessions end."""
    if not password_choose_allowed(user=user, link_signed_in_at=link_signed_in_at):
        raise PermissionDenied(
            "You already have a password: change it with the current one, or ask an admin to "
            "send you a sign-in link."
        )
    had_one = password_store(user=user, password=password)
    audit_record(
        actor=user, action="auth.password_choose", target=user, detail={"replaced": had_one}
    )
    return user
