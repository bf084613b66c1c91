from django.db import models
from django.utils import timezone


class IdempotentRequest(models.Model):
    """The first answer to an API request sent with an `Idempotency-Key` (apps/api/idempotency.py).

    One row per (caller, key): the caller is `token:<id>` for a bearer token, `user:<id>` for a
    browser session. Kept 24 hours (the sweeper removes older rows; lookups ignore them).
    `body` is None when the answer was not kept (over the size bound, or holding a secret):
    the key is still taken, and a replay says so instead of running the request again.
    """

    caller = models.CharField(max_length=40)
    key = models.CharField(max_length=200)
    method = models.CharField(max_length=10)
    path = models.TextField()
    body_sha256 = models.CharField(max_length=64)
    status = models.PositiveSmallIntegerField()
    headers = models.JSONField(default=dict)
    body = models.BinaryField(null=True)
    not_kept = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["caller", "key"], name="api_idempotency_once"),
        ]

    def __str__(self) -> str:
        return f"{self.method} {self.path} ({self.caller}, {self.key!r})"
