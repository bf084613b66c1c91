"""The packets API, under /api/v1/cases/{case_id}/packets: create, list, detail, add and remove
items, freeze, versions, the frozen snapshot's pages, and the comparison of two versions.

Every endpoint parses, calls one service or selector of apps.evidence (which checks case
membership, audits, and raises the DomainError the API maps: 404 for a case or packet the caller
cannot see, 409 for a frozen packet, 422 `provenance_refused` for an item that may not be
evidence), and shapes the answer.
"""

from django.db.models import QuerySet
from ninja import Query, Router, Status
from ninja.pagination import paginate

from apps.accounts.types import AuthedRequest
from apps.evidence import schemas
from apps.evidence.models import FrozenPage, Packet
from apps.evidence.schemas import (
    MAX_REASON_CHARS,
    ComparisonOut,
    FrozenPageOut,
    ItemOut,
    ItemsIn,
    PacketDetailOut,
    PacketIn,
    PacketOut,
)
from apps.evidence.selectors import packets as packet_selectors
from apps.evidence.services import packets as packet_services
from lexweb.api_schemas import ErrorOut, ObjectId

router = Router(tags=["packets"])

_ERRORS = {400: ErrorOut, 404: ErrorOut, 409: ErrorOut, 422: ErrorOut}
_BASE = "/cases/{case_id}/packets"


def _detail(request: AuthedRequest, case_id: int, packet_id: int) -> PacketDetailOut:
    packet = packet_selectors.packet_get_for_user(
        user=request.auth, case_id=case_id, packet_id=packet_id
    )
    return schemas.packet_detail(packet, user=request.auth)


@router.post(_BASE, response={201: PacketDetailOut, **_ERRORS})
def create_packet(
    request: AuthedRequest, case_id: ObjectId, payload: PacketIn
) -> Status[PacketDetailOut]:
    """Open a new, empty, editable packet (version 1 of its series)."""
    packet = packet_services.packet_create(
        user=request.auth, case_id=case_id, title=payload.title, purpose=payload.purpose
    )
    return Status(201, schemas.packet_detail(packet, user=request.auth))


@router.get(_BASE, response=list[PacketOut])
@paginate
def list_packets(request: AuthedRequest, case_id: ObjectId) -> QuerySet[Packet]:
    """The case's packets, the latest version of each series first; older versions follow."""
    return packet_selectors.packet_list_for_user(user=request.auth, case_id=case_id).select_related(
        "created_by", "frozen_by"
    )


@router.get(_BASE + "/{packet_id}", response={200: PacketDetailOut, 404: ErrorOut})
def get_packet(request: AuthedRequest, case_id: ObjectId, packet_id: ObjectId) -> PacketDetailOut:
    """The packet with its items: each with who added it and why, its provenance chain, its
    flags and the instruction-like text found in it (warnings)."""
    return _detail(request, case_id, packet_id)


@router.post(_BASE + "/{packet_id}/items", response={201: list[ItemOut], **_ERRORS})
def add_items(
    request: AuthedRequest, case_id: ObjectId, packet_id: ObjectId, payload: ItemsIn
) -> Status[list[ItemOut]]:
    """Add one or more selections, all or nothing. A selection that may not be evidence
    (system generated, derived from something generated, flagged, still being read) is a 422
    `provenance_refused` naming the item and the reason; a frozen packet is a 409."""
    items = packet_services.packet_items_add(
        user=request.auth,
        case_id=case_id,
        packet_id=packet_id,
        selections=payload.selections(),
    )
    packet = packet_selectors.packet_get_for_user(
        user=request.auth, case_id=case_id, packet_id=packet_id
    )
    added = {item.pk for item in items}
    detail = schemas.packet_detail(packet, user=request.auth)
    return Status(201, [item for item in detail.items if item.id in added])


@router.delete(_BASE + "/{packet_id}/items/{item_id}", response={204: None, **_ERRORS})
def remove_item(
    request: AuthedRequest,
    case_id: ObjectId,
    packet_id: ObjectId,
    item_id: ObjectId,
    reason: str = Query("", max_length=MAX_REASON_CHARS),
) -> Status[None]:
    """Take an item out of an editable packet; `reason` (query) is recorded in the audit."""
    packet_services.packet_item_remove(
        user=request.auth,
        case_id=case_id,
        packet_id=packet_id,
        item_id=item_id,
        reason=reason.strip(),
    )
    return Status(204, None)


@router.post(_BASE + "/{packet_id}/freeze", response={200: PacketDetailOut, **_ERRORS})
def freeze_packet(
    request: AuthedRequest, case_id: ObjectId, packet_id: ObjectId
) -> PacketDetailOut:
    """Snapshot every page of the packet and its content hash; the packet never changes again.
    Freezing an empty packet is refused (400); a frozen one answers 409."""
    packet = packet_services.packet_freeze(user=request.auth, case_id=case_id, packet_id=packet_id)
    return schemas.packet_detail(packet, user=request.auth)


@router.post(_BASE + "/{packet_id}/versions", response={201: PacketDetailOut, **_ERRORS})
def new_version(
    request: AuthedRequest, case_id: ObjectId, packet_id: ObjectId
) -> Status[PacketDetailOut]:
    """A new editable version of a frozen packet, with the same items (409 if not frozen)."""
    packet = packet_services.packet_new_version(
        user=request.auth, case_id=case_id, packet_id=packet_id
    )
    return Status(201, schemas.packet_detail(packet, user=request.auth))


@router.get(_BASE + "/{packet_id}/versions", response={200: list[PacketOut], 404: ErrorOut})
def list_versions(request: AuthedRequest, case_id: ObjectId, packet_id: ObjectId) -> list[Packet]:
    """Every version of the packet's series, oldest first."""
    return packet_selectors.packet_versions_for_user(
        user=request.auth, case_id=case_id, packet_id=packet_id
    )


@router.get(_BASE + "/{packet_id}/pages", response=list[FrozenPageOut])
@paginate
def list_pages(
    request: AuthedRequest, case_id: ObjectId, packet_id: ObjectId
) -> QuerySet[FrozenPage]:
    """The frozen snapshot, page by page in packet order (400 while the packet is editable)."""
    return packet_selectors.packet_pages_for_user(
        user=request.auth, case_id=case_id, packet_id=packet_id
    )


@router.get(_BASE + "/{packet_id}/compare/{other_id}", response={200: ComparisonOut, **_ERRORS})
def compare_versions(
    request: AuthedRequest, case_id: ObjectId, packet_id: ObjectId, other_id: ObjectId
) -> ComparisonOut:
    """What changed from `packet_id` to `other_id` (two versions of one packet): items added,
    items removed, pages whose text changed."""
    comparison = packet_selectors.packet_compare_for_user(
        user=request.auth, case_id=case_id, packet_id=packet_id, other_id=other_id
    )
    return schemas.comparison_out(comparison)
