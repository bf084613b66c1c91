"""Drafts: work product of a case, checked against one frozen evidence packet.

A draft has immutable, numbered versions; a version's text is what the verifier reads, and its
offsets are offsets into that text. Nothing here is cascaded away (PROTECT): a version that was
verified or approved can always be shown again.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone


class Draft(models.Model):
    """A document being written for a case (a brief, a letter...), and the frozen packet its
    claims are checked against."""

    class Kind(models.TextChoices):
        BRIEF = "brief", "Brief"
        MOTION = "motion", "Motion"
        MEMO = "memo", "Memo"
        LETTER = "letter", "Letter"
        AFFIDAVIT = "affidavit", "Affidavit"
        SUMMARY = "summary", "Summary"
        OTHER = "other", "Other"

    case = models.ForeignKey("cases.Case", on_delete=models.PROTECT, related_name="drafts")
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.OTHER)
    # Always a frozen packet of the same case (drafting.services checks both).
    packet = models.ForeignKey("evidence.Packet", on_delete=models.PROTECT, related_name="drafts")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["case", "-created_at"], name="drafting_draft_case")]

    def __str__(self) -> str:
        return self.title


class DraftVersion(models.Model):
    """One immutable version of a draft. Only the approval columns are ever written after the
    row is created (once)."""

    class MediaType(models.TextChoices):
        MARKDOWN = "markdown", "Markdown"
        PLAIN = "plain", "Plain text"
        DOCX = "docx", "Word document (its text)"

    class WrittenBy(models.TextChoices):
        # Pasted or uploaded by a person: firm work product, not registered as generated.
        PERSON = "person", "A person"
        # Written by a model (the drafting pipeline): registered as a generated artifact.
        MODEL = "model", "A model"

    draft = models.ForeignKey(Draft, on_delete=models.PROTECT, related_name="versions")
    number = models.PositiveIntegerField()  # 1, 2, ... within the draft
    text = models.TextField()
    media_type = models.CharField(max_length=16, choices=MediaType.choices)
    filename = models.CharField(max_length=255, blank=True)  # of an upload; blank when pasted
    sha256 = models.CharField(max_length=64)  # of the bytes as received
    size = models.PositiveIntegerField()  # bytes as received
    written_by = models.CharField(
        max_length=16, choices=WrittenBy.choices, default=WrittenBy.PERSON
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["draft", "number"]
        constraints = [
            models.UniqueConstraint("draft", "number", name="drafting_version_number_once"),
            models.CheckConstraint(
                condition=models.Q(number__gte=1), name="drafting_version_from_1"
            ),
            models.CheckConstraint(
                condition=models.Q(approved_at__isnull=True, approved_by__isnull=True)
                | models.Q(approved_at__isnull=False, approved_by__isnull=False),
                name="drafting_version_approved_by_whom",
            ),
        ]

    def __str__(self) -> str:
        return f"draft {self.draft_id} v{self.number}"
