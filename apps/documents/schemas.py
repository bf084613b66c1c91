from datetime import date as datetime_date
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

from ninja import ModelSchema, Schema
from pydantic import Field

from apps.accounts.models import User
from apps.documents import (
    bates,
    privilege_log,
    production_door_services,
    production_preview,
    production_selectors,
    provenance_selectors,
    rendering,
    selectors,
)
from apps.documents.models import (
    Document,
    Page,
    PrivilegeLogEntry,
    Production,
    ProductionExport,
    Rendition,
)
from lexweb.api_schemas import StrictIn, status_type


class ArtifactMatchOut(Schema):
    """A generated artifact the document matches. `title` is null unless the caller may see the
    artifact's case; `share` is the part of the artifact found in the document (1.0 for bytes)."""

    artifact_id: int
    title: str | None
    by: str  # bytes | text
    share: float
    # intake, or a late flag found when the document was re-checked: packet_add | freeze
    found: str
    # A lawyer cleared this match (see `flag_clearances`): it no longer flags the document.
    cleared: bool = False


class FlagClearanceOut(Schema):
    """A lawyer's clearing of the document's registry flag (issue 20 req 8), kept for good:
    who (`cleared_by`, their name; `cleared_by_id`), when, the reason, and `text`, the line
    the document page shows ("Flag cleared by X on D: reason")."""

    id: int
    cleared_by: str
    cleared_by_id: int
    cleared_at: datetime
    reason: str
    text: str


class FlagClearIn(StrictIn):
    """The written reason: 10 to 2,000 characters once trimmed, no control or invisible
    characters but line breaks and tabs (checked by the service: 400 `reason_invalid`)."""

    reason: str


class DerivedFromOut(Schema):
    """A direct parent of the document: what it was made from, by which transform."""

    document_id: int
    transform: str
    version: str
    deterministic: bool


if TYPE_CHECKING:
    DocumentStatus: TypeAlias = str
    RenditionStatus: TypeAlias = str
    ProductionStatus: TypeAlias = str
    ExportStatus: TypeAlias = str
else:
    DocumentStatus = status_type(
        Document.Status,
        terminal=["ready", "failed"],
        about="Reading the document: its pages' text (and OCR) are stored when it is ready.",
    )
    RenditionStatus = status_type(
        Rendition.Status,
        terminal=["ready", "failed", "unavailable"],
        about="Its rendering to PDF; unavailable: LibreOffice is not installed.",
    )
    ProductionStatus = status_type(
        Production.Status,
        terminal=["ready", "failed"],
        about="Stamping the volume's Bates numbers.",
    )
    ExportStatus = status_type(
        ProductionExport.Status,
        terminal=["ready", "failed"],
        about="Building the load-file export of a production.",
    )


class RenditionOut(Schema):
    """The document's rendering to PDF (text, e-mail, Word, Excel, Outlook), for its page
    images and productions. `status`: queued, processing, ready, failed, unavailable
    (LibreOffice is not installed); `label` says it in words ("rendering failed: <reason>").
    Lineage: `transform`/`version`, the `tool` that did it, the SHA-256 of the original it was
    made from (`input_sha256`) and of the PDF (`sha256`, null until ready)."""

    status: RenditionStatus
    label: str
    page_count: int
    transform: str
    version: str
    tool: str
    input_sha256: str
    sha256: str | None
    finished_at: datetime | None


class DocumentOut(ModelSchema):
    status: DocumentStatus
    sha256: str
    size: int
    # The e-mail this document is an attachment of (its "email-attachment" derivation), kept
    # for clients of the single parent link that lineage replaced; `derived_from` is complete.
    parent_id: int | None
    untrusted: bool
    matches: list[ArtifactMatchOut]
    # Lawyers' clearings of its flag, oldest first; empty for most documents.
    flag_clearances: list[FlagClearanceOut]
    derived_from: list[DerivedFromOut]
    # The production volume's name when this document is a stamped volume, else null.
    production_volume: str | None
    # Null for PDFs and images (shown as they are), and before the rendering is queued.
    rendition: RenditionOut | None

    class Meta:
        model = Document
        fields = [
            "id",
            "filename",
            "kind",
            "content_type",
            "origin",
            "custodian",
            "status",
            "error",
            "page_count",
            "pages_done",
            "provenance",
            "created_at",
        ]

    @staticmethod
    def resolve_sha256(obj: Document) -> str:
        return obj.blob.sha256

    @staticmethod
    def resolve_size(obj: Document) -> int:
        return obj.blob.size

    @staticmethod
    def resolve_parent_id(obj: Document) -> int | None:
        parent = provenance_selectors.provenance_of(obj).attachment_of
        return parent.document_id if parent else None

    @staticmethod
    def resolve_untrusted(obj: Document) -> bool:
        return provenance_selectors.provenance_of(obj).untrusted

    @staticmethod
    def resolve_matches(obj: Document) -> list[ArtifactMatchOut]:
        return [
            ArtifactMatchOut(
                artifact_id=m.artifact_id,
                title=m.title,
                by=m.by,
                share=round(m.share, 4),
                found=m.found,
                cleared=m.cleared,
            )
            for m in provenance_selectors.provenance_of(obj).matches
        ]

    @staticmethod
    def resolve_flag_clearances(obj: Document) -> list[FlagClearanceOut]:
        return [
            FlagClearanceOut(
                id=c.id,
                cleared_by=c.cleared_by,
                cleared_by_id=c.cleared_by_id,
                cleared_at=c.cleared_at,
                reason=c.reason,
                text=c.sentence,
            )
            for c in provenance_selectors.provenance_of(obj).clearances
        ]

    @staticmethod
    def resolve_derived_from(obj: Document) -> list[DerivedFromOut]:
        return [
            DerivedFromOut(
                document_id=p.document_id,
                transform=p.transform,
                version=p.version,
                deterministic=p.deterministic,
            )
            for p in provenance_selectors.provenance_of(obj).derived_from
        ]

    @staticmethod
    def resolve_production_volume(obj: Document) -> str | None:
        return provenance_selectors.provenance_of(obj).volume

    @staticmethod
    def resolve_rendition(obj: Document) -> RenditionOut | None:
        rendition = selectors.rendition_for(obj)
        if rendition is None:
            return None
        return RenditionOut(
            status=rendition.status,
            label=rendition.label,
            page_count=rendition.page_count,
            transform=rendition.transform,
            version=rendition.version,
            tool=rendition.tool,
            input_sha256=rendition.input_sha256,
            sha256=rendition.output.sha256 if rendition.output else None,
            finished_at=rendition.finished_at,
        )


class UploadResultOut(Schema):
    filename: str
    status: str  # created | duplicate | error
    error: str
    notes: list[str]
    document: DocumentOut | None


class UploadOut(Schema):
    created: int
    duplicates: int
    errors: int
    results: list[UploadResultOut]


class PageOut(ModelSchema):
    bates: str | None = None

    class Meta:
        model = Page
        fields = ["number", "text", "source", "ocr_confidence", "needs_review", "review_reason"]


class SearchHitOut(Schema):
    document_id: int
    filename: str
    origin: str
    page: int
    bates: str | None
    rank: float
    snippet: str


class SearchFilter(Schema):
    q: str
    origin: Document.Origin | None = None
    document: int | None = Field(None, ge=1, le=2**63 - 1)
    limit: int = Field(50, ge=1, le=200)
    offset: int = Field(0, ge=0, le=199)


class ProducibleFilter(Schema):
    """`document_ids`: the documents to ask about, in order (another case's ids are left out)."""

    document_ids: list[int] = Field(default_factory=list, max_length=1000)


class ProducibleOut(Schema):
    """Can it be produced? The answer for one document. `refused`: why a production refuses
    it outright (withdrawn, a production volume, not read yet...). `held_back`: why the door
    out holds it back (system generated, derived from generated, flagged, firm work product)
    unless a lawyer of the case includes it with a reason (`lawyer_may_include`: the caller is
    one)."""

    document_id: int
    filename: str
    producible: bool
    refused: str
    held_back: str
    lawyer_may_include: bool


class SearchOut(Schema):
    count: int  # hits found, at most offset + limit
    capped: bool
    items: list[SearchHitOut]


class InclusionIn(StrictIn):
    """A lawyer's inclusion of a document the production holds back (generated, derived from
    generated, flagged, firm work product), with the written reason: 10 to 2,000 characters
    once trimmed (checked by the service: 400 `reason_invalid`). Only a lawyer of the case may
    send any (403 `lawyer_required`)."""

    document_id: int = Field(ge=1, le=2**63 - 1)
    reason: str


class WithholdIn(StrictIn):
    """A document kept out of the production and listed in its privilege log (exported as
    PRIVILEGE_LOG.csv and .pdf with the volume). Not one of `document_ids`."""

    document_id: int = Field(ge=1, le=2**63 - 1)
    privilege: PrivilegeLogEntry.Privilege
    description: str = Field(min_length=1, max_length=privilege_log.MAX_DESCRIPTION)
    date: datetime_date | None = None
    author: str = Field("", max_length=privilege_log.MAX_AUTHOR)
    recipients: str = Field("", max_length=privilege_log.MAX_RECIPIENTS)


class ProductionIn(StrictIn):
    volume: str = Field(min_length=1, max_length=40)
    prefix: str = Field(min_length=1, max_length=20)
    document_ids: list[int] = Field(min_length=1, max_length=10_000)
    start_number: int | None = Field(None, ge=1, le=10**12 - 1)
    digits: int = Field(6, ge=3, le=12)
    position: Production.Position = Production.Position.BOTTOM_RIGHT
    legend: str = Field("", max_length=120)
    legend_position: Production.Position = Production.Position.BOTTOM_LEFT
    font_size: float = Field(9.0, ge=5, le=24)
    margin: float = Field(18.0, ge=4, le=72)
    # 0: a number a page; 1-6: a number a document, its pages with a suffix of that many
    # digits (ABC000123.001).
    page_suffix_digits: int = Field(0, ge=0, le=bates.MAX_PAGE_SUFFIX_DIGITS)
    # Held-back documents of `document_ids` that a lawyer produces all the same, each with why.
    include: list[InclusionIn] = Field(default_factory=list, max_length=10_000)
    # Documents withheld from it, for its privilege log.
    withhold: list[WithholdIn] = Field(default_factory=list, max_length=privilege_log.MAX_WITHHELD)

    def create_fields(self) -> dict[str, Any]:
        """production_services.production_create's keyword arguments (besides case and actor),
        for every edge that creates one (the REST API, the MCP server)."""
        return {
            "volume": self.volume,
            "prefix": self.prefix,
            "document_ids": self.document_ids,
            "start_number": self.start_number,
            "digits": self.digits,
            "position": self.position.value,
            "legend": self.legend,
            "legend_position": self.legend_position.value,
            "font_size": self.font_size,
            "margin": self.margin,
            "page_suffix_digits": self.page_suffix_digits,
            "inclusions": [
                production_door_services.Inclusion(document_id=i.document_id, reason=i.reason)
                for i in self.include
            ],
            "withheld": [
                privilege_log.Withholding(
                    document_id=w.document_id,
                    privilege=w.privilege.value,
                    description=w.description,
                    date=w.date,
                    author=w.author,
                    recipients=w.recipients,
                )
                for w in self.withhold
            ],
        }


class ProductionItemOut(Schema):
    order: int
    document_id: int
    filename: str
    begbates: str
    endbates: str
    # A held-back document a lawyer included: why it was held back, who included it, and the
    # lawyer's written reason ("" and null for the others).
    held_back: str = ""
    included_by_id: int | None = None
    inclusion_reason: str = ""


class ProductionOut(ModelSchema):
    status: ProductionStatus
    first_bates: str
    last_bates: str
    output_sha256: str | None

    class Meta:
        model = Production
        fields = [
            "id",
            "volume",
            "prefix",
            "digits",
            "page_suffix_digits",
            "position",
            "legend",
            "legend_position",
            "font_size",
            "margin",
            "transform",
            "status",
            "error",
            "page_count",
            "pages_done",
            "created_at",
        ]

    @staticmethod
    def resolve_first_bates(obj: Production) -> str:
        return obj.bates(obj.first_number)

    @staticmethod
    def resolve_last_bates(obj: Production) -> str:
        return obj.bates(obj.last_number)

    @staticmethod
    def resolve_output_sha256(obj: Production) -> str | None:
        return obj.output.sha256 if obj.output else None


class PrivilegeLogOut(Schema):
    """One document withheld from the production, as its privilege log lists it."""

    document_id: int
    filename: str
    date: datetime_date | None
    author: str
    recipients: str
    privilege: str
    privilege_label: str
    description: str


class ProductionDetailOut(ProductionOut):
    items: list[ProductionItemOut]
    privilege_log: list[PrivilegeLogOut]

    @staticmethod
    def resolve_privilege_log(obj: Production) -> list[PrivilegeLogOut]:
        return [
            PrivilegeLogOut(
                document_id=entry.document_id,
                filename=entry.document.filename,
                date=entry.date,
                author=entry.author,
                recipients=entry.recipients,
                privilege=entry.privilege,
                privilege_label=entry.get_privilege_display(),
                description=entry.description,
            )
            for entry in obj.privilege_log.select_related("document").order_by("order")
        ]

    @staticmethod
    def resolve_items(obj: Production) -> list[ProductionItemOut]:
        return [
            ProductionItemOut(
                order=item.order,
                document_id=item.document_id,
                filename=item.document.filename,
                begbates=obj.item_bates(item)[0],
                endbates=obj.item_bates(item)[1],
                held_back=item.held_back,
                included_by_id=item.included_by_id,
                inclusion_reason=item.inclusion_reason,
            )
            for item in obj.items.all()
        ]


class BatesHitOut(Schema):
    bates: str
    volume: str
    document_id: int
    filename: str
    page_number: int
    kind: str
    text: str
    source: str
    ocr_confidence: float | None
    image_url: str | None
    # The same page in the production's stamped PDF (None until the volume is stamped).
    stamped_image_url: str | None


# Kinds with page images: PDFs and images, and the kinds rendered to PDF (their renditions').
IMAGED_KINDS = ("pdf", "image", *rendering.RENDERED_KINDS)


def search_for_user(*, user: User, case_id: int, filters: SearchFilter) -> SearchOut:
    """One page of a case's full-text search as every edge answers it (the REST API, the MCP
    server): the selector asked for `offset + limit` hits, the page after `offset`."""
    results = selectors.page_search_for_user(
        user=user,
        case_id=case_id,
        query=filters.q,
        origin=filters.origin.value if filters.origin else None,
        document_id=filters.document,
        limit=filters.offset + filters.limit,
    )
    hits = results.hits[filters.offset :]
    return SearchOut(
        items=[SearchHitOut(**vars(hit)) for hit in hits], count=len(results), capped=results.capped
    )


def producible_for_user(
    *, user: User, case_id: int, document_ids: list[int]
) -> list[ProducibleOut]:
    """Can it be produced? The answer for each of the case's documents among `document_ids`,
    as every edge gives it (the REST API, the MCP server)."""
    answers, lawyer = production_preview.production_check_for_user(
        user=user, case_id=case_id, ids=document_ids
    )
    return [
        ProducibleOut(
            document_id=a.document.pk,
            filename=a.document.filename,
            producible=a.producible,
            refused=a.refused,
            held_back=a.held_back,
            lawyer_may_include=lawyer and bool(a.held_back),
        )
        for a in answers
    ]


def bates_hit_out(hit: production_selectors.BatesHit, *, case_id: int) -> BatesHitOut:
    """A Bates lookup's hit with the API paths of its page's image and its stamped page's."""
    pages = f"/api/v1/cases/{case_id}/documents"
    return BatesHitOut(
        **vars(hit),
        image_url=(
            f"{pages}/{hit.document_id}/pages/{hit.page_number}/image"
            if hit.kind in IMAGED_KINDS
            else None
        ),
        stamped_image_url=(
            f"{pages}/{hit.volume_document_id}/pages/{hit.production_page}/image"
            if hit.volume_document_id is not None
            else None
        ),
    )


class HitBoxesOut(Schema):
    page: int
    source: str
    boxes: list[list[float]]  # [x0, y0, x1, y1], fractions of the page's width and height
    truncated: bool


class ExportIn(StrictIn):
    encoding: ProductionExport.Encoding = ProductionExport.Encoding.UTF8
    image_dpi: int = Field(300, ge=100, le=600)


class ExportOut(ModelSchema):
    status: ExportStatus

    class Meta:
        model = ProductionExport
        fields = ["id", "encoding", "image_dpi", "status", "error", "created_at"]
