"""Request and response shapes of the packets API (apps/evidence/api.py)."""

from datetime import datetime
from typing import TYPE_CHECKING, TypeAlias

from ninja import Schema
from pydantic import Field, field_validator, model_validator

from apps.accounts.models import User
from apps.accounts.schemas import UserOut
from apps.documents.models import Document
from apps.evidence.models import Packet
from apps.evidence.selectors import packets as packet_selectors
from apps.evidence.services.packets import Selection
from lexweb.api_schemas import StrictIn, status_type

# Far above any real document, far below what would overflow a column: a clear 422 instead.
MAX_PAGE_NUMBER = 1_000_000
# The request's own ceiling; the service's LEXWEB_MAX_PACKET_ITEMS (lower) has the last word.
MAX_SELECTIONS_PER_REQUEST = 10_000
MAX_REASON_CHARS = 2_000


def no_control_characters(value: str) -> str:
    """Tabs and line breaks are text; other control characters (and lone surrogates) are not."""
    for char in value:
        if (ord(char) < 32 and char not in "\t\n\r") or 0xD800 <= ord(char) <= 0xDFFF:
            raise ValueError("must not contain control characters")
    return value


class PacketIn(StrictIn):
    title: str = Field(min_length=1, max_length=200)
    purpose: str = Field("", max_length=5_000)

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        value = no_control_characters(value).strip()
        if not value:
            raise ValueError("give the packet a title")
        return value

    @field_validator("purpose")
    @classmethod
    def _purpose(cls, value: str) -> str:
        return no_control_characters(value).strip()


class SelectionIn(StrictIn):
    """A whole document (no pages given), one page (`first_page` only) or an inclusive range."""

    document_id: int = Field(ge=1, le=2**63 - 1)
    first_page: int | None = Field(None, ge=1, le=MAX_PAGE_NUMBER)
    last_page: int | None = Field(None, ge=1, le=MAX_PAGE_NUMBER)
    reason: str = Field(min_length=1, max_length=MAX_REASON_CHARS)

    @field_validator("reason")
    @classmethod
    def _reason(cls, value: str) -> str:
        value = no_control_characters(value).strip()
        if not value:
            raise ValueError("say why this item belongs in the packet")
        return value

    @model_validator(mode="after")
    def _range(self) -> "SelectionIn":
        if self.first_page is None and self.last_page is not None:
            raise ValueError("give first_page with last_page (or neither, for the whole document)")
        if self.first_page is not None and self.last_page is None:
            self.last_page = self.first_page
        if (
            self.first_page is not None
            and self.last_page is not None
            and self.last_page < self.first_page
        ):
            raise ValueError(
                f"the page range {self.first_page}-{self.last_page} is reversed: "
                "last_page must not be before first_page"
            )
        return self


class ItemsIn(StrictIn):
    items: list[SelectionIn] = Field(min_length=1, max_length=MAX_SELECTIONS_PER_REQUEST)

    def selections(self) -> list[Selection]:
        """packet_items_add's selections, for every edge that adds items."""
        return [
            Selection(
                document_id=s.document_id,
                first_page=s.first_page,
                last_page=s.last_page,
                reason=s.reason,
            )
            for s in self.items
        ]


class LinkOut(Schema):
    document_id: int
    filename: str
    origin: str
    transform: str
    version: str
    deterministic: bool
    depth: int


class WarningOut(Schema):
    page: int | None = None
    kind: str
    excerpt: str


class ItemOut(Schema):
    """One item. `provenance` is its document's registry verdict (pending, clear, flagged);
    `problem` says why it would be refused now (null while it is fine: an item only gets one
    when its document is flagged or re-read after it was added, and such a packet does not
    freeze); `chain` is every ancestor of its document; `warnings` the text in it that reads as
    instructions to a model (a warning, not a refusal)."""

    id: int
    order: int
    label: str
    document_id: int
    filename: str
    origin: str
    untrusted: bool
    provenance: str
    flagged: bool
    problem: str | None
    first_page: int | None
    last_page: int | None
    reason: str
    added_by: UserOut
    added_at: datetime
    chain: list[LinkOut]
    warnings: list[WarningOut]


if TYPE_CHECKING:
    PacketStatus: TypeAlias = str
else:
    PacketStatus = status_type(
        Packet.Status,
        terminal=["frozen"],
        about="editable: items may be added and removed; frozen: its pages are fixed for good.",
    )


class PacketOut(Schema):
    id: int
    case_id: int
    series: int | None
    version: int
    title: str
    purpose: str
    status: PacketStatus
    frozen: bool
    content_hash: str
    page_count: int
    item_count: int
    created_by: UserOut
    created_at: datetime
    updated_at: datetime
    frozen_at: datetime | None
    frozen_by: UserOut | None

    @staticmethod
    def resolve_frozen(obj: Packet) -> bool:  # a Packet, or _WithItems standing for one
        return obj.status == Packet.Status.FROZEN

    @staticmethod
    def resolve_item_count(obj: Packet) -> int:
        # Annotated by the selectors; a packet fresh from a service counts its items.
        count = getattr(obj, "item_count", None)
        return obj.items.count() if count is None else int(count)


class PacketDetailOut(PacketOut):
    items: list[ItemOut]


class FrozenPageOut(Schema):
    position: int
    item_id: int
    document_id: int
    page_number: int
    bates: list[str]
    text: str
    text_sha256: str
    source: str
    ocr_confidence: float | None
    origin: str
    untrusted: bool


class ItemRefOut(Schema):
    document_id: int
    first_page: int | None
    last_page: int | None
    label: str


class PageChangeOut(Schema):
    document_id: int
    filename: str
    page_number: int
    old_sha256: str
    new_sha256: str


class ComparisonOut(Schema):
    packet: PacketOut
    other: PacketOut
    items_added: list[ItemRefOut]
    items_removed: list[ItemRefOut]
    pages_changed: list[PageChangeOut]


# --- Building the answers (from the selectors' dataclasses) ---------------------------------


def item_out(view: packet_selectors.ItemView) -> ItemOut:
    item = view.item
    return ItemOut(
        id=item.pk,
        order=item.order,
        label=view.label,
        document_id=item.document_id,
        filename=item.document.filename,
        origin=view.origin,
        untrusted=view.untrusted,
        provenance=view.provenance,
        flagged=view.provenance == Document.Provenance.FLAGGED,
        problem=view.problem,
        first_page=item.first_page,
        last_page=item.last_page,
        reason=item.reason,
        added_by=UserOut.from_orm(item.added_by),
        added_at=item.added_at,
        chain=[LinkOut(**vars(link)) for link in view.chain],
        warnings=[WarningOut.model_validate(warning) for warning in view.warnings],
    )


class _WithItems:
    """A packet as PacketDetailOut reads it: its own fields, and the items already shaped."""

    def __init__(self, packet: Packet, items: list[ItemOut]) -> None:
        self._packet = packet
        self.items = items
        self.item_count = len(items)

    def __getattr__(self, name: str) -> object:
        return getattr(self._packet, name)


def packet_detail(packet: Packet, *, user: User) -> PacketDetailOut:
    """The packet and its items; `user` decides whether a flag may name an artifact."""
    views = packet_selectors.packet_item_views(packet, user=user)
    return PacketDetailOut.model_validate(_WithItems(packet, [item_out(view) for view in views]))


def comparison_out(comparison: packet_selectors.Comparison) -> ComparisonOut:
    return ComparisonOut(
        packet=PacketOut.from_orm(comparison.packet),
        other=PacketOut.from_orm(comparison.other),
        items_added=[ItemRefOut(**vars(ref)) for ref in comparison.items_added],
        items_removed=[ItemRefOut(**vars(ref)) for ref in comparison.items_removed],
        pages_changed=[PageChangeOut(**vars(change)) for change in comparison.pages_changed],
    )
