"""Drafts: work product of a case, checked against one frozen evidence packet.

A draft has immutable, numbered versions; a version's text is what the verifier reads, and its
offsets are offsets into that text. Nothing here is cascaded away (PROTECT): a version that was
verified or approved can always be shown again.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.cluster.models import Role


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
    # Set when a lawyer rejected the run that wrote it: never approved afterwards.
    rejected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    rejected_at = models.DateTimeField(null=True, blank=True)
    rejection_reason = models.TextField(blank=True)
    # Set when the version is a model's reply still cut at its limit after the continuations
    # its stage's policy allows (apps/drafting/pipeline/endings.py): the reply's tokens. Its
    # end is missing: it is verified like any version, but never approved or exported as it
    # is (apps.drafting.services.approval.VersionTruncated, 409 `version_truncated`).
    truncated_tokens = models.PositiveIntegerField(null=True, blank=True)

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

    @property
    def truncated(self) -> bool:
        return self.truncated_tokens is not None


# --- Pipeline runs ---------------------------------------------------------------------------


class Run(models.Model):
    """One pass of the drafting pipeline over a frozen packet of the case: a state machine whose
    stages exist as rows from the moment the run is queued (apps.drafting.services.runs)."""

    class Kind(models.TextChoices):
        AFFIDAVIT = "affidavit", "Affidavit"
        MOTION = "motion", "Motion"
        SUMMARY = "summary", "Summary"
        FINANCIAL = "financial", "Financial extraction"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        WAITING_FOR_APPROVAL = "waiting_for_approval", "Waiting for a lawyer's approval"
        SUCCEEDED = "succeeded", "Succeeded"
        STOPPED_BY_GATE = "stopped_by_gate", "Stopped by the gate"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        REJECTED = "rejected", "Rejected by a lawyer"

    # A run in one of these states never changes again (except an override of the gate, and a
    # lawyer's approval or rejection of a run waiting for approval).
    FINISHED = (
        Status.WAITING_FOR_APPROVAL,
        Status.SUCCEEDED,
        Status.FAILED,
        Status.CANCELLED,
        Status.REJECTED,
    )

    case = models.ForeignKey("cases.Case", on_delete=models.PROTECT, related_name="runs")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    # Always a frozen packet of the same case (apps.drafting.services.runs checks both).
    packet = models.ForeignKey("evidence.Packet", on_delete=models.PROTECT, related_name="runs")
    instructions = models.TextField()
    high_stakes = models.BooleanField(default=False)
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    # The draft the run writes its versions to (none for a run that writes no text yet).
    draft = models.ForeignKey(
        Draft, null=True, blank=True, on_delete=models.PROTECT, related_name="runs"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    idempotency_key = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    cancelled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # A lawyer's decision to go on past a gate that said "no" or "insufficient".
    gate_override_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    gate_override_reason = models.TextField(blank=True)
    gate_override_at = models.DateTimeField(null=True, blank=True)
    # A lawyer's decision that the run's final version will not do (its versions stay, marked).
    rejected_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    rejection_reason = models.TextField(blank=True)
    rejected_at = models.DateTimeField(null=True, blank=True)
    # The last event's sequence number (events are numbered 1, 2, ... under this row's lock).
    event_seq = models.PositiveBigIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["case", "-created_at"], name="drafting_run_case")]
        constraints = [
            models.UniqueConstraint(
                fields=["created_by", "idempotency_key"],
                condition=~models.Q(idempotency_key=""),
                name="drafting_run_idempotency_once",
            ),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.kind}, {self.status})"


class Stage(models.Model):
    """One step of a run, with its output and its chain of custody (what was sent to which model
    on which board, and what came back). Case-scoped: cluster-wide call records only link here."""

    class Name(models.TextChoices):
        GATE = "gate", "Gate"
        DRAFTER = "drafter", "Drafter"
        REASONER = "reasoner", "Heavy reasoner"
        VERIFIER = "verifier", "Verifier"
        ADVERSARY = "adversary", "Adversarial reviewer"
        REVISION = "revision", "Revision"
        VERIFIER_AGAIN = "verifier_again", "Verifier again"
        SUMMARIZER = "summarizer", "Summarizer"
        EXTRACTOR = "extractor", "Extractor"
        VALIDATION = "validation", "Validation"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        SKIPPED = "skipped", "Skipped"

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="stages")
    position = models.PositiveSmallIntegerField()
    name = models.CharField(max_length=16, choices=Name.choices)
    role = models.CharField(max_length=16, blank=True)  # cluster Role; blank for the checks
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    queue = models.CharField(max_length=100, blank=True)
    job_id = models.BigIntegerField(null=True, blank=True)  # procrastinate_jobs.id
    attempt = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    output_text = models.TextField(blank=True)
    output_json = models.JSONField(null=True, blank=True)
    version = models.ForeignKey(
        DraftVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    verification = models.ForeignKey(
        "verification.Verification",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    # Chain of custody.
    prompt_text = models.TextField(blank=True)
    prompt_sha256 = models.CharField(max_length=64, blank=True)
    template_name = models.CharField(max_length=100, blank=True)
    template_version = models.CharField(max_length=20, blank=True)
    deployment = models.ForeignKey(
        "cluster.Deployment", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    deployment_label = models.CharField(max_length=300, blank=True)
    model_name = models.CharField(max_length=200, blank=True)
    model_file_sha256 = models.CharField(max_length=64, blank=True)
    board_label = models.CharField(max_length=200, blank=True)
    gpu_uuids = models.JSONField(default=list, blank=True)
    sampling = models.JSONField(default=dict, blank=True)
    seed = models.BigIntegerField(null=True, blank=True)
    packet_content_hash = models.CharField(max_length=64, blank=True)
    pages_sent = models.JSONField(default=list, blank=True)  # labels of the excerpts sent
    # How the excerpts were chosen and counted (pipeline.context.Evidence.budget): the budget,
    # the tokenizer or the estimate used, and why an estimate stood in for the tokenizer.
    evidence_budget = models.JSONField(default=dict, blank=True)
    # The role's deployments routed before the one this attempt used that the health registry
    # had left out when it started, each {"deployment": label, "reason": why} (no call made).
    passed_over = models.JSONField(default=list, blank=True)
    prompt_tokens = models.PositiveIntegerField(default=0)
    completion_tokens = models.PositiveIntegerField(default=0)
    # How the model's reply ended, as its backend said: llama.cpp `finish_reason` ("stop",
    # "length"), Ollama `done_reason`. Blank until a reply ended.
    finish_reason = models.CharField(max_length=32, blank=True)
    # Continuation calls made after the reply was cut at its limit (pipeline.endings); their
    # tokens are in completion_tokens, the last one's ending in finish_reason.
    continuations = models.PositiveSmallIntegerField(default=0)
    time_to_first_token_ms = models.FloatField(null=True, blank=True)
    tokens_per_second = models.FloatField(null=True, blank=True)
    duration_ms = models.FloatField(null=True, blank=True)
    call_record = models.ForeignKey(
        "cluster.CallRecord", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the stage last showed progress: its start, each stored batch of tokens (at most one
    # write a second, token_events), its end. A running stage whose worker is gone has a
    # `stage.stalled` event; one that is silent has this time standing still.
    last_progress_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["run", "position"]
        constraints = [
            models.UniqueConstraint(fields=["run", "position"], name="drafting_stage_position"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} stage {self.position} {self.name} ({self.status})"

    @property
    def role_label(self) -> str:
        """The cluster role the stage asked for, by its label ("Adversarial reviewer"); ""
        for a deterministic check."""
        return Role(self.role).label if self.role in Role.values else self.role

    @property
    def ending(self) -> str:
        """How the model's reply ended, in words: "stop", "cut at its limit (2,048 tokens)",
        "stop after 1 continuation (2,300 tokens in all)"; "" before a reply ended."""
        reason = self.finish_reason
        cut = reason == "length"
        if not reason:
            return ""
        if not self.continuations:
            return f"cut at its limit ({self.completion_tokens:,} tokens)" if cut else reason
        plural = "s" if self.continuations != 1 else ""
        how = "cut at its limit again" if cut else reason
        return (
            f"{how} after {self.continuations} continuation{plural} "
            f"({self.completion_tokens:,} tokens in all)"
        )


class RunEvent(models.Model):
    """Something that happened to a run (a state change, a batch of tokens), numbered 1, 2, ...
    within the run: a client that saw number N asks for the rest after N."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=40)
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "seq"]
        constraints = [
            models.UniqueConstraint(fields=["run", "seq"], name="drafting_event_seq_once"),
        ]

    def __str__(self) -> str:
        return f"run {self.run_id} event {self.seq} {self.kind}"
