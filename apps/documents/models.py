from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models.functions import Lower
from django.utils import timezone

from apps.documents.bates import MAX_PAGE_SUFFIX_DIGITS
from apps.documents.bates import label as bates_label


class Blob(models.Model):
    """One original file, stored once under the blob root by its SHA-256, never modified."""

    sha256 = models.CharField(max_length=64, unique=True)
    size = models.BigIntegerField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.CheckConstraint(condition=models.Q(size__gt=0), name="documents_blob_not_empty"),
        ]

    def __str__(self) -> str:
        return f"{self.sha256[:12]}… ({self.size} bytes)"


class Document(models.Model):
    """A file uploaded to a case, with its pages' text once ingest has run."""

    class Origin(models.TextChoices):
        CLIENT = "client", "Client"
        OPPOSING = "opposing", "Opposing party"
        THIRD_PARTY = "third_party", "Third party"
        COURT = "court", "Court"
        PUBLIC_RECORD = "public_record", "Public record"
        WORK_PRODUCT = "work_product", "Firm work product"
        # Set only by lexweb itself (a model wrote it, or it derives from something a model
        # wrote); never accepted from a form or the API.
        SYSTEM_GENERATED = "system_generated", "System generated"
        # Set only by lexweb itself: a stamped production volume, the firm's outgoing
        # production (it repeats its originals' pages; never evidence, never in a packet).
        # A volume holding something generated is system generated instead (lineage wins).
        PRODUCTION = "production", "Outgoing production"

    # What people may choose at upload (everything but SYSTEM_GENERATED and PRODUCTION).
    PERSON_ORIGINS = (
        Origin.CLIENT,
        Origin.OPPOSING,
        Origin.THIRD_PARTY,
        Origin.COURT,
        Origin.PUBLIC_RECORD,
        Origin.WORK_PRODUCT,
    )
    # Material from the other side or from strangers: quoted as data in prompts, never obeyed.
    UNTRUSTED_ORIGINS = (Origin.OPPOSING, Origin.THIRD_PARTY)

    class Provenance(models.TextChoices):
        """Where the registry check of a document stands (evidence app's registry)."""

        PENDING = "pending", "Not checked yet"
        CLEAR = "clear", "No match with anything lexweb generated"
        FLAGGED = "flagged", "Matches something lexweb generated"

    class Kind(models.TextChoices):
        PDF = "pdf", "PDF"
        IMAGE = "image", "Image"
        TEXT = "text", "Plain text"
        EMAIL = "email", "E-mail"
        WORD = "word", "Word document"
        SPREADSHEET = "spreadsheet", "Excel workbook"
        OUTLOOK = "outlook", "Outlook message"
        ARCHIVE = "archive", "ZIP archive"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        PROCESSING = "processing", "Reading pages"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    case = models.ForeignKey("cases.Case", on_delete=models.PROTECT, related_name="documents")
    blob = models.ForeignKey(Blob, on_delete=models.PROTECT, related_name="documents")
    filename = models.CharField(max_length=255)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    content_type = models.CharField(max_length=100)
    origin = models.CharField(max_length=32, choices=Origin.choices)
    # Whose files these were (for load files' CUSTODIAN field); optional at upload.
    custodian = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    page_count = models.PositiveIntegerField(default=0)
    pages_done = models.PositiveIntegerField(default=0)
    # The generated-artifact registry's verdict: bytes are checked at upload, text once read.
    # The matches themselves are evidence.ArtifactMatch rows (related name artifact_matches).
    provenance = models.CharField(
        max_length=16, choices=Provenance.choices, default=Provenance.PENDING
    )
    uploaded_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # Withdrawn (a wrong upload): out of lists, search and new packets, with the reason; the
    # original stays stored (legal hold) and `services.document_restore` brings it back.
    withdrawn_at = models.DateTimeField(null=True, blank=True)
    withdrawn_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    withdrawn_reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # The same bytes once per case: a second upload is reported, not stored again.
            models.UniqueConstraint("case", "blob", name="documents_document_once_per_case"),
            models.CheckConstraint(
                condition=models.Q(pages_done__lte=models.F("page_count")),
                name="documents_document_progress_within_count",
            ),
            models.CheckConstraint(
                condition=models.Q(withdrawn_at__isnull=True, withdrawn_reason="")
                | (models.Q(withdrawn_at__isnull=False) & ~models.Q(withdrawn_reason="")),
                name="documents_document_withdrawn_has_reason",
            ),
        ]
        indexes = [
            models.Index(fields=["case", "-created_at"], name="documents_doc_case_created"),
            # The review list's sorts (apps/documents/selectors.py, document_review_page).
            models.Index(fields=["case", "filename", "id"], name="documents_doc_case_name"),
            models.Index(fields=["case", "page_count", "id"], name="documents_doc_case_pages"),
            models.Index(fields=["case", "custodian", "id"], name="documents_doc_case_custodian"),
        ]

    def __str__(self) -> str:
        return self.filename


class Tag(models.Model):
    """A label a case's team puts on documents ("hot", "privileged?"). Per case: the same
    name in another case is another tag."""

    case = models.ForeignKey("cases.Case", on_delete=models.PROTECT, related_name="tags")
    name = models.CharField(max_length=60)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            models.UniqueConstraint(Lower("name"), "case", name="documents_tag_once_per_case"),
            models.CheckConstraint(condition=~models.Q(name=""), name="documents_tag_named"),
        ]

    def __str__(self) -> str:
        return self.name


class DocumentTag(models.Model):
    """One tag on one document, with who put it there."""

    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="document_tags")
    tag = models.ForeignKey(Tag, on_delete=models.PROTECT, related_name="document_tags")
    tagged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    tagged_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint("document", "tag", name="documents_doctag_once"),
        ]
        indexes = [models.Index(fields=["tag", "document"], name="documents_doctag_tag")]

    def __str__(self) -> str:
        return f"{self.tag} on {self.document_id}"


class Derivation(models.Model):
    """One edge of lineage: `child` was made from `parent` by a transform.

    Deterministic transforms of evidence (e-mail attachment extraction, Bates stamping,
    renders to PDF, page splits) stay evidence; a non-deterministic one (a model wrote it) makes
    the child system generated, and so is everything derived from it, at any depth. Rows are
    never cascaded away: deleting a document that has lineage is refused.
    """

    # Transform names lexweb writes (version "1" each unless said otherwise).
    EMAIL_ATTACHMENT = "email-attachment"  # an attachment taken out of an e-mail, byte for byte
    # A file taken out of a ZIP archive, byte for byte (parameters: {"member": its path there}).
    ARCHIVE_MEMBER = "archive-member"
    # The transforms that make a family (a container and the documents taken out of it).
    FAMILY = (EMAIL_ATTACHMENT, ARCHIVE_MEMBER)
    BATES_STAMP = "bates-stamp"  # a production volume from its originals (version: stamping's)
    MODEL_OUTPUT = "model-output"  # what a model wrote from its inputs (never deterministic)

    child = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="derived_from")
    parent = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="derivations")
    transform = models.CharField(max_length=60)  # e.g. "email-attachment", "bates-stamp"
    version = models.CharField(max_length=20)  # e.g. "1"
    deterministic = models.BooleanField()
    parameters = models.JSONField(default=dict, blank=True)
    # Order among a child's parents (a production's originals in volume order).
    order = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["child", "order", "id"]
        constraints = [
            models.UniqueConstraint(
                "child", "parent", "transform", name="documents_derivation_once"
            ),
            models.CheckConstraint(
                condition=~models.Q(child=models.F("parent")), name="documents_derivation_no_self"
            ),
        ]
        indexes = [models.Index(fields=["parent"], name="documents_derivation_parent")]

    def __str__(self) -> str:
        return f"{self.child_id} <- {self.parent_id} ({self.transform}/{self.version})"


class Page(models.Model):
    """One page's text and where it came from. Word boxes are kept for OCR pages."""

    class Source(models.TextChoices):
        TEXT_LAYER = "text_layer", "PDF text layer"
        OCR = "ocr", "OCR (Tesseract)"
        TEXT_FILE = "text_file", "Text file"
        NONE = "none", "No text"

    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="pages")
    number = models.PositiveIntegerField()  # 1-based
    text = models.TextField(blank=True)
    source = models.CharField(max_length=16, choices=Source.choices)
    ocr_confidence = models.FloatField(null=True, blank=True)  # mean word confidence, 0-100
    needs_review = models.BooleanField(default=False)
    # Why, when a rule of reading said so (e.g. the image and the text layer disagree); shown
    # beside the flag. Empty for the plain cases (low OCR confidence, no text, damaged).
    review_reason = models.CharField(max_length=500, blank=True, default="", db_default="")
    # OCR words: [[text, left, top, width, height, confidence], ...] in pixels at `ocr_dpi`.
    words = models.JSONField(default=list, blank=True)
    ocr_dpi = models.PositiveIntegerField(null=True, blank=True)
    # Boxes [x0, y0, x1, y1] in PDF points of the words in the page's top and bottom bands, where
    # Bates stamps go; recorded at ingest so stamping need not read the page again. None: not
    # recorded (image pages), stamping then looks itself.
    margin_boxes = models.JSONField(null=True, blank=True)
    search_vector = SearchVectorField(null=True, editable=False)

    class Meta:
        ordering = ["document", "number"]
        constraints = [
            models.UniqueConstraint("document", "number", name="documents_page_number_unique"),
            models.CheckConstraint(condition=models.Q(number__gte=1), name="documents_page_from_1"),
        ]
        indexes = [GinIndex(fields=["search_vector"], name="documents_page_search")]

    def __str__(self) -> str:
        return f"{self.document} p.{self.number}"


class Production(models.Model):
    """Documents merged in a chosen order and Bates-stamped into one PDF volume.

    Stamping is a deterministic transform of originals: the output stays evidence, and its
    lineage (which originals, in what order, with which settings) is these rows.
    """

    class Position(models.TextChoices):
        BOTTOM_RIGHT = "bottom_right", "Bottom right"
        BOTTOM_LEFT = "bottom_left", "Bottom left"
        BOTTOM_CENTER = "bottom_center", "Bottom centre"
        TOP_RIGHT = "top_right", "Top right"
        TOP_LEFT = "top_left", "Top left"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        PROCESSING = "processing", "Stamping"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    case = models.ForeignKey("cases.Case", on_delete=models.PROTECT, related_name="productions")
    volume = models.CharField(max_length=40)  # e.g. ACME001: names the load-file folder
    prefix = models.CharField(max_length=20)
    digits = models.PositiveSmallIntegerField(default=6)
    # 0: every page takes the next number (ABC000123). N (1-6): every document takes one
    # number and its pages carry it with an N-digit page suffix (ABC000123.001, .002, ...).
    page_suffix_digits = models.PositiveSmallIntegerField(default=0)
    first_number = models.PositiveBigIntegerField()
    last_number = models.PositiveBigIntegerField()
    position = models.CharField(
        max_length=16, choices=Position.choices, default=Position.BOTTOM_RIGHT
    )
    legend = models.CharField(max_length=120, blank=True)
    legend_position = models.CharField(
        max_length=16, choices=Position.choices, default=Position.BOTTOM_LEFT
    )
    font_size = models.FloatField(default=9.0)
    margin = models.FloatField(default=18.0)  # points from the page edge
    transform = models.CharField(max_length=40, default="bates-stamp/1")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    page_count = models.PositiveIntegerField()
    pages_done = models.PositiveIntegerField(default=0)
    output = models.ForeignKey(
        Blob, null=True, blank=True, on_delete=models.PROTECT, related_name="productions"
    )
    # The stamped volume as a document of the case (pages copied from the originals, lineage
    # "bates-stamp" to each of them); written in the transaction that marks the production
    # ready, so it exists exactly when the production is ready.
    volume_document = models.OneToOneField(
        Document, null=True, blank=True, on_delete=models.PROTECT, related_name="volume_of"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint("case", "volume", name="documents_production_volume_unique"),
            models.CheckConstraint(
                condition=models.Q(last_number__gte=models.F("first_number")),
                name="documents_production_range_ordered",
            ),
            models.CheckConstraint(
                condition=models.Q(page_suffix_digits__lte=MAX_PAGE_SUFFIX_DIGITS),
                name="documents_production_page_suffix_digits",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.volume} ({self.bates(self.first_number)}-{self.bates(self.last_number)})"

    def bates(self, number: int, page: int = 0) -> str:
        """The label of `number`; with a page suffix production and `page` >= 1, of that page
        of its document (without `page`, the document's number alone)."""
        return bates_label(self.prefix, number, self.digits, self.page_suffix_digits, page)

    def item_bates(self, item: "ProductionDocument") -> tuple[str, str]:
        """An item's BEGBATES and ENDBATES: its first and last page's labels."""
        if not self.page_suffix_digits:
            return self.bates(item.first_number), self.bates(item.last_number)
        return self.bates(item.first_number, 1), self.bates(item.last_number, item.page_count)


class ProductionDocument(models.Model):
    """One original in a production, in order, with its BEGBATES/ENDBATES."""

    production = models.ForeignKey(Production, on_delete=models.CASCADE, related_name="items")
    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="+")
    order = models.PositiveIntegerField()
    first_number = models.PositiveBigIntegerField()
    last_number = models.PositiveBigIntegerField()
    # Pages it takes in the volume (a rendered kind's rendered pages); with a page suffix its
    # one number (first_number == last_number) carries suffixes 1 to page_count.
    page_count = models.PositiveIntegerField(default=0)
    # A document the door out holds back (generated, derived from generated, flagged, firm
    # work product), produced because a lawyer of the case included it: why it was held back,
    # the lawyer, and their written reason (apps/documents/production_door_services.py).
    held_back = models.CharField(max_length=500, blank=True, default="")
    included_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    inclusion_reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["production", "order"]
        constraints = [
            models.UniqueConstraint("production", "order", name="documents_proddoc_order_unique"),
            models.UniqueConstraint("production", "document", name="documents_proddoc_once"),
            models.CheckConstraint(
                condition=models.Q(held_back="", included_by__isnull=True, inclusion_reason="")
                | (
                    ~models.Q(held_back="")
                    & models.Q(included_by__isnull=False)
                    & ~models.Q(inclusion_reason="")
                ),
                name="documents_proddoc_inclusion_complete",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.production.volume} #{self.order}: {self.document}"


class PrivilegeLogEntry(models.Model):
    """A document withheld from a production, as its privilege log lists it (written out as
    CSV and PDF into the volume's export: apps/documents/privilege_log.py)."""

    class Privilege(models.TextChoices):
        ATTORNEY_CLIENT = "attorney_client", "Attorney-client privilege"
        WORK_PRODUCT = "work_product", "Attorney work product"
        BOTH = "attorney_client_work_product", "Attorney-client privilege; work product"
        COMMON_INTEREST = "common_interest", "Common-interest privilege"

    production = models.ForeignKey(
        Production, on_delete=models.CASCADE, related_name="privilege_log"
    )
    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="+")
    order = models.PositiveIntegerField()
    date = models.DateField(null=True, blank=True)  # the document's date, as the lawyer gives it
    author = models.CharField(max_length=200, blank=True)
    recipients = models.CharField(max_length=1000, blank=True)
    privilege = models.CharField(max_length=40, choices=Privilege.choices)
    description = models.TextField()
    entered_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["production", "order"]
        constraints = [
            models.UniqueConstraint("production", "document", name="documents_privlog_once"),
            models.CheckConstraint(
                condition=~models.Q(description=""), name="documents_privlog_described"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.production.volume} withheld: {self.document}"


class BatesPage(models.Model):
    """The Bates index: every number maps to exactly one page of one original."""

    case = models.ForeignKey("cases.Case", on_delete=models.PROTECT, related_name="+")
    prefix = models.CharField(max_length=20)
    number = models.PositiveBigIntegerField()
    production = models.ForeignKey(Production, on_delete=models.CASCADE, related_name="bates_pages")
    document = models.ForeignKey(Document, on_delete=models.PROTECT, related_name="bates_pages")
    # 0: none; else the page's suffix under its document's number (production.page_suffix_digits
    # wide when printed): ABC000123.002 is number 123, page_suffix 2.
    page_suffix = models.PositiveIntegerField(default=0)
    page_number = models.PositiveIntegerField()  # 1-based page of the original
    production_page = models.PositiveIntegerField()  # 1-based page of the stamped volume

    class Meta:
        ordering = ["case", "prefix", "number", "page_suffix"]
        constraints = [
            models.UniqueConstraint(
                "case", "prefix", "number", "page_suffix", name="documents_bates_unique"
            ),
            models.UniqueConstraint(
                "production", "production_page", name="documents_bates_one_per_volume_page"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.prefix}{self.number}" + (f".{self.page_suffix}" if self.page_suffix else "")


class ProductionExport(models.Model):
    """A production's volume as delivered to the other side: stamped PDF, single-page images,
    per-document text, and Concordance/Opticon load files, zipped."""

    class Encoding(models.TextChoices):
        UTF8 = "utf-8", "UTF-8"
        CP1252 = "cp1252", "Windows-1252 (CP1252)"

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        PROCESSING = "processing", "Building"
        READY = "ready", "Ready"
        FAILED = "failed", "Failed"

    production = models.ForeignKey(Production, on_delete=models.CASCADE, related_name="exports")
    encoding = models.CharField(max_length=16, choices=Encoding.choices, default=Encoding.UTF8)
    image_dpi = models.PositiveSmallIntegerField(default=300)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    output = models.ForeignKey(
        Blob, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.production.volume} export ({self.encoding})"


class Rendition(models.Model):
    """A document rendered to PDF for viewing and production (apps/documents/rendering.py).

    A deterministic transform of the original: the row is its lineage (transform and version,
    the tool that did it, the SHA-256 of the input). One per document; made by the
    `documents.render` job after ingest, for the kinds rendering.RENDERED_KINDS.
    """

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        PROCESSING = "processing", "Rendering"
        READY = "ready", "Rendered"
        FAILED = "failed", "Rendering failed"
        UNAVAILABLE = "unavailable", "Rendering unavailable"

    document = models.OneToOneField(Document, on_delete=models.CASCADE, related_name="rendition")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)  # why it failed or is unavailable
    output = models.ForeignKey(
        Blob, null=True, blank=True, on_delete=models.PROTECT, related_name="renditions"
    )
    page_count = models.PositiveIntegerField(default=0)
    transform = models.CharField(max_length=60, blank=True)  # e.g. "render-office"
    version = models.CharField(max_length=20, blank=True)  # e.g. "1"
    tool = models.CharField(max_length=200, blank=True)  # e.g. "LibreOffice 7.4.7.2 ..."
    input_sha256 = models.CharField(max_length=64)  # the original's bytes it was made from
    # e.g. {"network_isolated": true, "filesystem_isolated": true, "links_removed": {...}}
    parameters = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=~models.Q(status="ready")
                | (models.Q(output__isnull=False) & models.Q(page_count__gte=1)),
                name="documents_rendition_ready_has_pdf",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.document_id} {self.transform}/{self.version} ({self.status})"

    @property
    def label(self) -> str:
        """What a person reads: "rendered (3 pages)", "rendering failed: <reason>"..."""
        if self.status == self.Status.READY:
            return f"rendered ({self.page_count} page{'s' if self.page_count != 1 else ''})"
        if self.status in (self.Status.FAILED, self.Status.UNAVAILABLE) and self.error:
            prefix = self.get_status_display().lower()
            reason = self.error.removeprefix(f"{prefix}: ")
            return f"{prefix}: {reason}"
        return self.get_status_display().lower()
