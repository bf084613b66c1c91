"""Verification runs of a draft version, their findings (one per claim), and overrides.

A finding is tied to the frozen page that decided it (evidence.FrozenPage: the packet's
snapshot, never the live document), or to nothing. Nothing is cascaded away (PROTECT); an
override is kept and shown on its finding forever.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone


class Verification(models.Model):
    """One run of the deterministic checks over one draft version against its draft's frozen
    packet, then (when a model is routed) a model's second opinion on the record-cited claims.
    Runs as a job on the `cpu` queue; `claims_done` of `claim_count` is its progress."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    class SecondOpinion(models.TextChoices):
        # No model was asked (or no healthy backend answered): the deterministic verdicts stand.
        NOT_OBTAINED = "not_obtained", "Not obtained"
        OBTAINED = "obtained", "Obtained"

    version = models.ForeignKey(
        "drafting.DraftVersion", on_delete=models.PROTECT, related_name="verifications"
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    claim_count = models.PositiveIntegerField(default=0)
    claims_done = models.PositiveIntegerField(default=0)
    verifier_version = models.CharField(max_length=20, blank=True)
    second_opinion = models.CharField(
        max_length=16, choices=SecondOpinion.choices, default=SecondOpinion.NOT_OBTAINED
    )
    # The second opinion (apps.verification.second_opinion): why it was not obtained, or what
    # it covered; the deployment(s) that answered and the cluster's CallRecord ids of its calls;
    # progress: `second_opinion_done` of `second_opinion_total` claims asked about.
    second_opinion_reason = models.TextField(blank=True)
    second_opinion_deployment = models.CharField(max_length=300, blank=True)
    second_opinion_calls = models.JSONField(default=list, blank=True)
    second_opinion_done = models.PositiveIntegerField(default=0)
    second_opinion_total = models.PositiveIntegerField(default=0)
    # The procrastinate job that runs it (None for rows queued before this was recorded): a
    # run whose job is gone for good is failed instead of staying queued or running.
    job_id = models.BigIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["version", "-created_at"], name="verification_by_version")]

    def __str__(self) -> str:
        return f"verification {self.pk} of version {self.version_id} ({self.status})"


class Finding(models.Model):
    """The verdict on one claim of the version's text: offsets, kind, status, the check that
    decided and why, and the supporting (or contradicting) frozen page with its excerpt."""

    class Kind(models.TextChoices):
        RECORD_CITE = "record_cite", "Record citation"
        NOT_A_RECORD_CITE = "not_a_record_cite", "Not a record citation"
        CASE_CITATION = "case_citation", "Case citation"
        STATUTE = "statute", "Statute"
        DATE = "date", "Date"
        AMOUNT = "amount", "Amount"
        QUOTE = "quote", "Quotation"

    class Status(models.TextChoices):
        SUPPORTED = "supported", "Supported"
        UNSUPPORTED = "unsupported", "Unsupported"
        CONTRADICTED = "contradicted", "Contradicted"
        NEEDS_REVIEW = "needs_review", "Needs review"

    # Statuses that block approval until a lawyer overrides the finding.
    BLOCKING = (Status.UNSUPPORTED, Status.CONTRADICTED)

    verification = models.ForeignKey(
        Verification, on_delete=models.PROTECT, related_name="findings"
    )
    start = models.PositiveIntegerField()  # offsets of the claim in the version's text
    end = models.PositiveIntegerField()
    text = models.TextField()  # the claim's words, text[start:end]
    kind = models.CharField(max_length=20, choices=Kind.choices)
    status = models.CharField(max_length=16, choices=Status.choices)
    check_name = models.CharField(max_length=60)  # the check that decided (API: `check`)
    message = models.TextField()
    page = models.ForeignKey(
        "evidence.FrozenPage", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    excerpt = models.TextField(blank=True)
    # Span in the page's text of the matched words, when there are some.
    match_start = models.PositiveIntegerField(null=True, blank=True)
    match_end = models.PositiveIntegerField(null=True, blank=True)
    # Boxes [x0, y0, x1, y1] in PDF points from the page's top left of the matched words
    # (apps.verification.boxes); empty when the page's words are not known.
    boxes = models.JSONField(default=list, blank=True)
    found_value = models.TextField(blank=True)  # contradicted: the value the page carries
    verifier_version = models.CharField(max_length=20)

    class Meta:
        ordering = ["verification", "start", "end", "id"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(end__gte=models.F("start")), name="verification_finding_span"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} {self.start}-{self.end}: {self.status}"

    @property
    def blocks(self) -> bool:
        """Unsupported or contradicted; an override (a separate row) lifts the block."""
        return self.status in self.BLOCKING


class Override(models.Model):
    """A lawyer's written decision that one blocking finding may stand. One per finding, kept
    forever and shown with it."""

    finding = models.OneToOneField(Finding, on_delete=models.PROTECT, related_name="override")
    lawyer = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    reason = models.TextField()
    at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"override of finding {self.finding_id}"
