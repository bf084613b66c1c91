from datetime import datetime

from django.conf import settings
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone


class Case(models.Model):
    """A matter the firm works on. Everything client-related hangs off a case."""

    class Status(models.TextChoices):
        OPEN = "open", "Open"
        STAYED = "stayed", "Stayed"
        CLOSED = "closed", "Closed"

    title = models.CharField(max_length=300)
    number = models.CharField("case number", max_length=100)
    court = models.CharField(max_length=200, blank=True)
    client = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        # A court number is unique only among the cases one person can see (checked by
        # case_create/case_update): a firm-wide constraint would tell anyone who tries that the
        # firm has a matter they are not on.
        indexes = [models.Index(Lower("court"), Lower("number"), name="cases_case_court_number")]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(title="") & ~models.Q(number="") & ~models.Q(client=""),
                name="cases_case_required_text",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.number} — {self.title}"


class Membership(models.Model):
    """Who may see a case, and as what. No membership, no access: not even to its existence."""

    class Role(models.TextChoices):
        LAWYER = "lawyer", "Lawyer"
        STAFF = "staff", "Staff"

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STAFF)
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["case", "user__full_name"]
        constraints = [
            models.UniqueConstraint("case", "user", name="cases_membership_once_per_case"),
        ]

    def __str__(self) -> str:
        return f"{self.user} on {self.case.number} as {self.role}"


class BreakGlassGrant(models.Model):
    """An admin's time-limited way into a case they are not a member of, for a written reason.

    Created only by `services.case_break_glass`, which audits it on the case; shown on the case
    page to its members. Never edited: a grant ends when `expires_at` passes.
    """

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="break_glass_grants")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.TextField()
    granted_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()

    class Meta:
        ordering = ["-granted_at", "-id"]
        indexes = [
            models.Index(fields=["case", "user", "-expires_at"], name="cases_breakglass_lookup")
        ]
        constraints = [
            models.CheckConstraint(condition=~models.Q(reason=""), name="cases_breakglass_reason"),
            models.CheckConstraint(
                condition=models.Q(expires_at__gt=models.F("granted_at")),
                name="cases_breakglass_expires_after_grant",
            ),
        ]

    def __str__(self) -> str:
        until = timezone.localtime(self.expires_at)
        return f"break-glass by {self.user} until {until:%Y-%m-%d %H:%M %Z}: {self.reason}"

    def is_live(self, now: datetime) -> bool:
        return now < self.expires_at


class CaseEvent(models.Model):
    """One event of a case's feed (ingest progress, productions, renderings, verification,
    notices): stored in the transaction that made it happen, numbered 1, 2, 3, ... per case in
    the order of their commits just after (`seq` is NULL until then; apps/cases/events.py).
    Readers see numbered events only, so a reader that saw number N has seen every number
    below it."""

    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField(null=True, blank=True)
    kind = models.CharField(max_length=64)
    payload = models.JSONField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["case", "seq"]
        constraints = [
            models.UniqueConstraint("case", "seq", name="cases_caseevent_seq_once_per_case"),
        ]
        indexes = [
            models.Index(
                "case",
                "id",
                condition=models.Q(seq__isnull=True),
                name="cases_caseevent_unnumbered",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.case_id} #{self.seq or '-'} {self.kind}"
