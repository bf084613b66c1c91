"""Reads for users, tokens and the audit log."""

from django.db.models import QuerySet

from apps.accounts.models import ApiToken, AuditEvent, User


def token_list_for_user(*, user: User) -> QuerySet[ApiToken]:
    """The user's own tokens, newest first. Nobody sees another person's tokens."""
    return ApiToken.objects.filter(user=user).order_by("revoked_at", "-created_at")


def audit_list_for_user(*, user: User, case_id: int | None = None) -> QuerySet[AuditEvent]:
    """Audit events the user may read: those of cases they belong to now, and their own events
    that concern no case (sign-ins, tokens). Events of a case they have left stay behind."""
    from apps.cases.models import Membership

    member_cases = Membership.objects.filter(user=user).values("case_id")
    events = AuditEvent.objects.select_related("actor", "case")
    if case_id is not None:
        return events.filter(case_id=case_id, case_id__in=member_cases)
    return events.filter(case_id__in=member_cases) | events.filter(actor=user, case__isnull=True)


def user_list_active() -> QuerySet[User]:
    """People who can be added to a case (only names and e-mails leave this function's callers)."""
    return User.objects.filter(is_active=True).order_by("full_name", "email")
