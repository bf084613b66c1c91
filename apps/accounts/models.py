from typing import Any, ClassVar

from django.contrib.auth.base_user import AbstractBaseUser, BaseUserManager
from django.contrib.auth.models import PermissionsMixin
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from apps.accounts import audit_words


class UserManager(BaseUserManager["User"]):
    """Only `createsuperuser` and tests reach this; the app creates users via services."""

    use_in_migrations = True

    def create_user(self, email: str, password: str | None = None, **extra: Any) -> "User":
        user = self.model(email=self.normalize_email(email).lower(), **extra)
        user.set_password(password)
        user.full_clean(exclude=["password"])
        user.save(using=self._db)
        return user

    def create_superuser(self, email: str, password: str | None = None, **extra: Any) -> "User":
        extra.update(role=User.Role.ADMIN, is_staff=True, is_superuser=True)
        return self.create_user(email, password, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    """A person who signs in with their e-mail address.

    `role` says what the person is at the firm; what they may see is decided per case by
    membership (apps.cases). Only admins reach the Django admin (`is_staff`).
    """

    class Role(models.TextChoices):
        ADMIN = "admin", "Admin"
        LAWYER = "lawyer", "Lawyer"
        STAFF = "staff", "Staff"

    email = models.EmailField("e-mail address", max_length=254, unique=True)
    full_name = models.CharField(max_length=200)
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STAFF)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField("admin site access", default=False)
    date_joined = models.DateTimeField(default=timezone.now)

    objects = UserManager()

    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
    REQUIRED_FIELDS: ClassVar[list[str]] = ["full_name"]

    class Meta:
        ordering = ["full_name", "email"]
        constraints = [
            models.UniqueConstraint(Lower("email"), name="accounts_user_email_ci_unique"),
            models.CheckConstraint(
                condition=models.Q(role="admin") | models.Q(is_staff=False, is_superuser=False),
                name="accounts_user_only_admins_reach_admin_site",
            ),
        ]

    def __str__(self) -> str:
        return self.full_name or self.email

    @property
    def is_lawyer(self) -> bool:
        return self.role == self.Role.LAWYER


class ApiToken(models.Model):
    """A bearer token that acts as its user. Only a SHA-256 digest of the secret is stored.

    The token reads `lxw_<prefix>_<secret>`; `prefix` is public (shown in lists, used to find
    the row), the digest covers the whole token.
    """

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100)
    prefix = models.CharField(max_length=16, unique=True)
    digest = models.CharField(max_length=64)
    created_at = models.DateTimeField(default=timezone.now)
    # Every token expires (LEXWEB_TOKEN_DEFAULT_DAYS unless its maker chose earlier).
    expires_at = models.DateTimeField()
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                "user",
                "name",
                condition=models.Q(revoked_at__isnull=True),
                name="accounts_apitoken_live_name_unique",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} (lxw_{self.prefix}_…)"

    def is_live(self, now: Any = None) -> bool:
        now = now or timezone.now()
        return self.revoked_at is None and self.expires_at > now


class SignInLink(models.Model):
    """A sign-in link an admin sent a person by mail (apps/accounts/link_services.py). Only a
    SHA-256 digest of its secret is stored. It works once (`used_at`), until `expires_at`, and
    not after a newer link for the same person replaced it (`voided_at`): a person has at most
    one open link."""

    user = models.ForeignKey(User, on_delete=models.CASCADE, related_name="sign_in_links")
    sent_by = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    digest = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)
    voided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                "user",
                condition=models.Q(used_at__isnull=True, voided_at__isnull=True),
                name="accounts_signinlink_one_open_per_user",
            ),
        ]

    def __str__(self) -> str:
        return f"sign-in link for {self.user_id} sent {self.created_at:%Y-%m-%d %H:%M}"


class AuditLogImmutableError(RuntimeError):
    """Raised on any attempt to change or delete an audit event."""


class AuditEventQuerySet(models.QuerySet["AuditEvent"]):
    def update(self, **kwargs: Any) -> int:
        raise AuditLogImmutableError("The audit log is append-only.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise AuditLogImmutableError("The audit log is append-only.")

    def bulk_update(self, *args: Any, **kwargs: Any) -> int:
        raise AuditLogImmutableError("The audit log is append-only.")


class AuditEvent(models.Model):
    """One thing that happened. Append-only: the ORM refuses updates and deletes, and a
    database trigger (migration 0003) refuses them from any other client too."""

    at = models.DateTimeField(default=timezone.now, db_index=True)
    actor = models.ForeignKey(
        User, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # What the actor was called at the time (or the e-mail tried in a failed sign-in).
    actor_label = models.CharField(max_length=254, blank=True)
    action = models.CharField(max_length=64, db_index=True)
    case = models.ForeignKey(
        "cases.Case", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    target_type = models.CharField(max_length=64, blank=True)
    target_id = models.CharField(max_length=64, blank=True)
    target_label = models.CharField(max_length=300, blank=True)
    client_ip = models.GenericIPAddressField(null=True, blank=True)
    via = models.CharField(max_length=16, blank=True)  # web, api, websocket, worker, cli
    detail = models.JSONField(default=dict, blank=True)

    objects = AuditEventQuerySet.as_manager()

    class Meta:
        ordering = ["-at", "-id"]
        indexes = [models.Index(fields=["case", "-at"], name="accounts_audit_case_at")]

    def __str__(self) -> str:
        """When, who and what in words ("2026-12-05 10:02:03 Ada Admin created API token
        laptop"): the admin's page of an event is titled so (its code is on the page)."""
        parts = (f"{self.at:%Y-%m-%d %H:%M:%S}", self.actor_label, audit_words.action_text(self))
        return " ".join(part for part in parts if part)

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise AuditLogImmutableError("The audit log is append-only.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise AuditLogImmutableError("The audit log is append-only.")


class ThrottleBucket(models.Model):
    """A token bucket of attempts (sign-ins per account or per client address, bad API tokens
    per address), kept in PostgreSQL so that every process draws from the same budget.

    `key` is a keyed digest of what is counted (an e-mail, an address), never the value itself.
    `tokens` is what was left at `updated_at`; what is left now adds the refill since then,
    up to the budget (apps/accounts/throttle.py does the arithmetic, in SQL).
    """

    key = models.CharField(max_length=100, unique=True)
    tokens = models.FloatField()
    updated_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.key[:24]}… {self.tokens:.2f}"
