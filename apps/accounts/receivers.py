"""Sign-in events come from Django's auth signals: they fire for every way in (our sign-in page,
the admin's, a test client), which one view-level hook would miss. Each receiver only calls the
audit service."""

from typing import Any

from django.contrib.auth.signals import user_logged_in, user_logged_out, user_login_failed
from django.dispatch import receiver
from django.http import HttpRequest

from apps.accounts import services
from apps.accounts.models import User


@receiver(user_logged_in)
def _audit_login(sender: Any, request: HttpRequest | None, user: User, **kwargs: Any) -> None:
    services.audit_record(actor=user, action="auth.login")


@receiver(user_logged_out)
def _audit_logout(
    sender: Any, request: HttpRequest | None, user: User | None, **kwargs: Any
) -> None:
    if user is not None:
        services.audit_record(actor=user, action="auth.logout")


@receiver(user_login_failed)
def _audit_login_failed(
    sender: Any, credentials: dict[str, str], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    tried = str(credentials.get("username") or credentials.get("email") or "")[:254]
    services.audit_record(actor=None, action="auth.login_failed", actor_label=tried)
