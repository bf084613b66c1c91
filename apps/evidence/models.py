"""Evidence: the generated-artifact registry, its matches with uploads, and evidence packets.

Nothing here is ever cascaded away: artifacts, matches, packets, their items and frozen pages
are kept (PROTECT) so that what a model or the verifier read can always be shown again.
"""

from django.conf import settings
from django.contrib.postgres.fields import ArrayField
from django.db import models
from django.utils import timezone


class GeneratedArtifact(models.Model):
    """Something lexweb produced: a model's output or an export of one (text, Markdown, PDF,
    DOCX). Registered the moment it is created, so it can never come back in as evidence.

    The registry is site-wide (a draft of one case uploaded into another is still caught); a
    match names the artifact in full only to members of the artifact's own case.
    """

    class Kind(models.TextChoices):
        MODEL_OUTPUT = "model_output", "Model output"
        EXPORT = "export", "Export of a model output"

    sha256 = models.CharField(max_length=64, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    media_type = models.CharField(max_length=100)  # text/markdown, application/pdf, ...
    title = models.CharField(max_length=200)  # e.g. "Affidavit draft v2 (run 14, drafter)"
    case = models.ForeignKey(
        "cases.Case", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    # What made it, free text for people ("drafting run 14, stage drafter, Qwen3.5 on board B").
    source = models.CharField(max_length=200, blank=True)
    # The artifact it was exported from (a PDF of a draft version), if any.
    exported_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="exports"
    )
    size = models.BigIntegerField()
    # Number of distinct fingerprint hashes (the denominator of "share of the artifact").
    fingerprint_count = models.PositiveIntegerField(default=0)
    # Of those, the hashes of the artifact's own words (not only inside quotation marks): a
    # document that is mostly these is a piece of the artifact, however short.
    unquoted_fingerprint_count = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # SHA-256 of the text's fingerprint (its hashes and which are quoted): the same text, in
    # any bytes, has the same key. Blank on rows registered before the key existed.
    text_key = models.CharField(max_length=64, blank=True, db_index=True)  # blank: no text
    # The artifact with the same text whose fingerprint postings stand for this one: a copy
    # adds no postings, so copies can neither flood the index nor push a text's hashes past
    # the boilerplate cap. Null for the first artifact of a text.
    postings_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="copies"
    )
    # The frozen packet it was drafted from, if any (issue 20 req 8). The hashes of the
    # artifact's text that are also in that packet's evidence are the evidence's words: they
    # are left out of its fingerprint (neither found in an upload nor counted in
    # `fingerprint_count`), and `evidence_fingerprint_count` says how many were.
    packet = models.ForeignKey(
        "evidence.Packet", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    evidence_fingerprint_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One first artifact (the one holding the postings) per text.
            models.UniqueConstraint(
                "text_key",
                condition=models.Q(postings_of__isnull=True) & ~models.Q(text_key=""),
                name="evidence_artifact_text_once",
            ),
        ]

    def __str__(self) -> str:
        return self.title


class ArtifactFingerprint(models.Model):
    """One winnowed shingle hash of an artifact's normalised text. Looked up by hash (indexed),
    so a check never compares against every artifact."""

    artifact = models.ForeignKey(
        GeneratedArtifact, on_delete=models.PROTECT, related_name="fingerprints"
    )
    hash = models.BigIntegerField()
    # True when every shingle of this hash lies inside quotation marks of the artifact's text:
    # words it quotes (evidence's words), not its own.
    quoted = models.BooleanField(default=False)

    class Meta:
        constraints = [
            models.UniqueConstraint("artifact", "hash", name="evidence_fingerprint_once"),
        ]
        indexes = [models.Index(fields=["hash"], name="evidence_fingerprint_hash")]

    def __str__(self) -> str:
        return f"{self.artifact_id}:{self.hash}"


class DocumentFingerprint(models.Model):
    """The fingerprint (`apps.evidence.fingerprint.fingerprint`) of a document's text, all of
    its pages joined as the registry checks join them, kept with the SHA-256 of that text: a
    re-check of the document (packet add, freeze) reuses it while the text is the same, and
    fingerprints again when it is not. Only ever a cache of what the text gives."""

    document = models.OneToOneField(
        "documents.Document", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    text_sha256 = models.CharField(max_length=64)
    hashes = ArrayField(models.BigIntegerField(), default=list, blank=True)
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"document {self.document_id}: {len(self.hashes)} hashes"


class FlagClearance(models.Model):
    """A lawyer of the document's case cleared the registry's flag on it, with a written reason
    (issue 20 req 8): the matches it covers (`ArtifactMatch.clearance`) no longer flag the
    document. Never changed or deleted: shown on the document for good. A later match with
    another artifact flags the document again (apps.evidence.services.clearance)."""

    document = models.ForeignKey(
        "documents.Document", on_delete=models.PROTECT, related_name="flag_clearances"
    )
    cleared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    cleared_at = models.DateTimeField(default=timezone.now)
    reason = models.TextField()

    class Meta:
        ordering = ["document", "cleared_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(reason=""), name="evidence_clearance_has_reason"
            ),
        ]

    def __str__(self) -> str:
        return f"flag on document {self.document_id} cleared {self.cleared_at:%Y-%m-%d}"


class ArtifactMatch(models.Model):
    """A document that matches a registered artifact: by its bytes, or by its text."""

    class By(models.TextChoices):
        BYTES = "bytes", "Same bytes"
        TEXT = "text", "Same text"

    class Found(models.TextChoices):
        INTAKE = "intake", "At intake"
        PACKET_ADD = "packet_add", "When it was added to a packet"
        FREEZE = "freeze", "When its packet was frozen"

    document = models.ForeignKey(
        "documents.Document", on_delete=models.PROTECT, related_name="artifact_matches"
    )
    artifact = models.ForeignKey(GeneratedArtifact, on_delete=models.PROTECT, related_name="+")
    by = models.CharField(max_length=8, choices=By.choices)
    # Share of the artifact's fingerprints found in the document, 0..1 (1.0 for bytes).
    share = models.FloatField()
    # Share of the document's fingerprints found in the artifact, 0..1.
    document_share = models.FloatField(null=True, blank=True)
    # When the match was found: at intake, or late, when the document was re-checked against
    # the registry as it then was (added to a packet, or its packet frozen).
    found = models.CharField(max_length=16, choices=Found.choices, default=Found.INTAKE)
    created_at = models.DateTimeField(default=timezone.now)
    # The lawyer's clearing that covers this match, if any: a cleared match flags nothing.
    clearance = models.ForeignKey(
        FlagClearance, null=True, blank=True, on_delete=models.PROTECT, related_name="matches"
    )

    class Meta:
        ordering = ["document", "-share", "id"]
        constraints = [
            models.UniqueConstraint("document", "artifact", "by", name="evidence_match_once"),
        ]

    def __str__(self) -> str:
        return f"document {self.document_id} ~ artifact {self.artifact_id} ({self.share:.0%})"


class Packet(models.Model):
    """One version of an evidence packet: an explicit selection of documents or page ranges in
    one case. Editable until frozen; a frozen version never changes, and editing it makes the
    next version (same `series`, `version` + 1)."""

    class Status(models.TextChoices):
        EDITABLE = "editable", "Editable"
        FROZEN = "frozen", "Frozen"

    case = models.ForeignKey("cases.Case", on_delete=models.PROTECT, related_name="packets")
    # The first version's id; every version of one packet shares it.
    series = models.BigIntegerField(null=True, blank=True)
    version = models.PositiveIntegerField(default=1)
    title = models.CharField(max_length=200)
    purpose = models.TextField(blank=True)  # what the packet is for, free text
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.EDITABLE)
    # SHA-256 over the frozen snapshot (see evidence.services); blank until frozen.
    content_hash = models.CharField(max_length=64, blank=True)
    page_count = models.PositiveIntegerField(default=0)  # frozen pages
    frozen_at = models.DateTimeField(null=True, blank=True)
    frozen_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint("series", "version", name="evidence_packet_version_once"),
            models.CheckConstraint(
                condition=models.Q(status="editable") | ~models.Q(content_hash=""),
                name="evidence_packet_frozen_has_hash",
            ),
        ]
        indexes = [models.Index(fields=["case", "-created_at"], name="evidence_packet_case")]

    def __str__(self) -> str:
        return f"{self.title} v{self.version}"


class PacketItem(models.Model):
    """A document, or a page range of one, in a packet, with who added it and why."""

    packet = models.ForeignKey(Packet, on_delete=models.PROTECT, related_name="items")
    document = models.ForeignKey("documents.Document", on_delete=models.PROTECT, related_name="+")
    # Both null: the whole document. Otherwise a 1-based inclusive range.
    first_page = models.PositiveIntegerField(null=True, blank=True)
    last_page = models.PositiveIntegerField(null=True, blank=True)
    order = models.PositiveIntegerField()
    reason = models.TextField()
    # Text inside the item that reads as instructions to a model: [{"page": n, "kind": ...,
    # "excerpt": ...}, ...]. A warning for people, not a refusal.
    warnings = models.JSONField(default=list, blank=True)
    added_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["packet", "order"]
        constraints = [
            models.UniqueConstraint("packet", "order", name="evidence_item_order_once"),
            models.CheckConstraint(
                condition=(
                    models.Q(first_page__isnull=True, last_page__isnull=True)
                    | models.Q(first_page__gte=1, last_page__gte=models.F("first_page"))
                ),
                name="evidence_item_range_ordered",
            ),
        ]

    def __str__(self) -> str:
        pages = f" pp. {self.first_page}-{self.last_page}" if self.first_page else ""
        return f"#{self.order}: document {self.document_id}{pages}"


class FrozenPage(models.Model):
    """One page of a frozen packet, as it was read when the packet was frozen."""

    packet = models.ForeignKey(Packet, on_delete=models.PROTECT, related_name="frozen_pages")
    item = models.ForeignKey(PacketItem, on_delete=models.PROTECT, related_name="frozen_pages")
    position = models.PositiveIntegerField()  # 1-based order of the page in the packet
    document = models.ForeignKey("documents.Document", on_delete=models.PROTECT, related_name="+")
    page_number = models.PositiveIntegerField()
    # Every Bates label the page carries ("ACME000014"), lowest production first; may be empty.
    bates = ArrayField(models.CharField(max_length=40), default=list, blank=True)
    text = models.TextField(blank=True)
    text_sha256 = models.CharField(max_length=64)
    source = models.CharField(max_length=16)  # documents.Page.Source value
    ocr_confidence = models.FloatField(null=True, blank=True)
    origin = models.CharField(max_length=32)  # the document's origin when frozen
    untrusted = models.BooleanField(default=False)

    class Meta:
        ordering = ["packet", "position"]
        constraints = [
            models.UniqueConstraint("packet", "position", name="evidence_frozen_position_once"),
            models.UniqueConstraint(
                "packet", "document", "page_number", name="evidence_frozen_page_once"
            ),
        ]

    def __str__(self) -> str:
        return f"packet {self.packet_id} #{self.position}: p.{self.page_number}"


class PacketIndexCache(models.Model):
    """The verifier's index of a frozen packet's pages (apps.verification.index_cache), stored
    compressed so that a draft checked against the packet does not build it again. Derived
    and rebuildable from the frozen pages, so it alone goes with its packet (CASCADE); a row
    is used only for its packet, content hash and format, and only when its bytes are intact."""

    packet = models.ForeignKey(Packet, on_delete=models.CASCADE, related_name="+")
    content_hash = models.CharField(max_length=64)  # the packet's when the index was built
    format_version = models.CharField(max_length=64)  # index_cache.INDEX_FORMAT
    data = models.BinaryField()
    data_sha256 = models.CharField(max_length=64)
    size = models.PositiveBigIntegerField()
    build_seconds = models.FloatField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                "packet", "content_hash", "format_version", name="evidence_packet_index_once"
            ),
        ]

    def __str__(self) -> str:
        return f"index of packet {self.packet_id} ({self.format_version}, {self.size} bytes)"
