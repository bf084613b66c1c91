"""Sign-in events come from Django's auth signals: they fire for every way in (our sign-in page,
the admin's, a test client), which one view-level hook would miss. Each receiver only calls a
service.

Access ending is housekeeping of the same kind: a deactivated account or a deleted session
(signed out, `clearsessions`, the shell) must close the open websockets that used it, whichever
code path changed the row, so saves of users and deletes of sessions tell those sockets.
"""

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.contrib.sessions.models import Session
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver
from django.http import HttpRequest

from apps.accounts import services
from apps.accounts.events import publish_access_ended
from apps.accounts.models import User
from apps.accounts.reauth import (
    FAILURE_RECORDED,
    SIGNED_IN,
    SIGNED_IN_BY_LINK,
    mark_reauthenticated,
)


@receiver(user_logged_in)
def _audit_login(sender: Any, request: HttpRequest | None, user: User, **kwargs: Any) -> None:
    by_link = request is not None and getattr(request, SIGNED_IN_BY_LINK, False)
    services.audit_record(
        actor=user, action="auth.login", detail={"by": "sign-in link"} if by_link else None
    )
    if request is not None:
        setattr(request, SIGNED_IN, True)
        # Signing in is entering the password: it counts as a fresh confirmation (a sign-in
        # link is not).
        if hasattr(request, "session") and not by_link:
            mark_reauthenticated(request.session)


@receiver(user_logged_out)
def _audit_logout(
    sender: Any, request: HttpRequest | None, user: User | None, **kwargs: Any
) -> None:
    if user is None:
        return
    services.audit_record(actor=user, action="auth.logout")
    session = getattr(request, "session", None)
    if session is not None and session.session_key:
        publish_access_ended(user_id=user.pk, reason="signed_out", session_key=session.session_key)


@receiver(user_login_failed)
def _audit_login_failed(
    sender: Any, credentials: dict[str, str], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    tried = str(credentials.get("username") or credentials.get("email") or "")
    services.signin_failure_record(tried=tried)
    if request is not None:
        setattr(request, FAILURE_RECORDED, True)


@receiver(post_save, sender=User)
def _deactivated_user_loses_sockets(sender: Any, instance: User, **kwargs: Any) -> None:
    if not instance.is_active:
        publish_access_ended(user_id=instance.pk, reason="user_deactivated")


@receiver(post_delete, sender=Session)
def _deleted_session_loses_sockets(sender: Any, instance: Session, **kwargs: Any) -> None:
    try:
        user_id = int(instance.get_decoded().get("_auth_user_id") or 0)
    except (TypeError, ValueError):
        return
    if user_id:
        publish_access_ended(
            user_id=user_id, reason="session_ended", session_key=instance.session_key
        )
