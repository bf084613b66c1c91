"""Reads of evidence packets. The `_for_user` functions check case membership (NotFound for
non-members, as for a missing packet) and write the read audit; the helpers below them read for
services that have already checked (adding, freezing) and for the item views of a packet the
caller holds through `packet_get_for_user`.
"""

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import (
    BooleanField,
    Count,
    ExpressionWrapper,
    F,
    IntegerField,
    Max,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
)
from django.db.models.functions import Coalesce

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.documents.models import BatesPage, Document, Page
from apps.evidence import prompt
from apps.evidence.models import ArtifactMatch, FrozenPage, Packet, PacketItem
from apps.evidence.selectors import provenance
from apps.evidence.selectors.provenance import Link
from lexweb.errors import DomainError, NotFound

_MAX_ID = 2**63 - 1

# --- Labels and provenance reasons, worded for people ----------------------------------------


def item_label(
    *, filename: str, document_id: int, first_page: int | None, last_page: int | None
) -> str:
    """“invoice.pdf” pp. 2-3 (document 14); “invoice.pdf” p. 2 (document 14); without pages
    for the whole document."""
    if first_page is None or last_page is None:
        pages = ""
    elif first_page == last_page:
        pages = f" p. {first_page}"
    else:
        pages = f" pp. {first_page}-{last_page}"
    return f"“{filename}”{pages} (document {document_id})"


def packet_item_label(item: PacketItem) -> str:
    return item_label(
        filename=item.document.filename,
        document_id=item.document_id,
        first_page=item.first_page,
        last_page=item.last_page,
    )


def provenance_problem(
    *, document: Document, user: User | None, chain: Sequence[Link] | None = None
) -> str | None:
    """Why `document` may not be evidence, or None. Read when adding, when freezing, and for
    the item views.

    In this order: system generated; derived from something generated (the nearest such
    ancestor and the transform, through `provenance.generated_ancestor`); flagged by the
    registry (the artifact is named only to members of its case); its text not known yet.
    `chain`, when the caller has read it already: an empty one means no lineage to follow.
    """
    if document.origin == Document.Origin.SYSTEM_GENERATED:
        return (
            "it is system generated (lexweb wrote it), and nothing lexweb generated may be "
            "used as evidence"
        )
    no_lineage = chain is not None and not chain
    ancestor = None if no_lineage else provenance.generated_ancestor(document)
    if ancestor is not None:
        made = f"“{ancestor.filename}” (document {ancestor.document_id})"
        if ancestor.origin == Document.Origin.SYSTEM_GENERATED:
            return (
                f"it is derived from {made}, which lexweb generated "
                f"(through “{ancestor.transform}” version {ancestor.version})"
            )
        how = f"“{ancestor.transform}” version {ancestor.version}, not deterministic"
        if ancestor.depth == 1:
            return f"a model wrote it from {made} ({how})"
        return (
            f"it is derived from something a model wrote from {made} ({how}), "
            f"{ancestor.depth} derivations up"
        )
    if document.provenance == Document.Provenance.FLAGGED:
        return "the generated-artifact registry flagged it: " + _flag_reason(document, user)
    if document.status == Document.Status.FAILED:
        return f"reading it failed, so its text is not known ({document.error or 'no detail'})"
    if document.status != Document.Status.READY:
        return (
            f"it is still being read ({document.pages_done} of {document.page_count} pages); "
            "add it once it is ready"
        )
    if document.provenance == Document.Provenance.PENDING:
        return "its check against what lexweb generated has not finished; try again shortly"
    return None


def _flag_reason(document: Document, user: User | None) -> str:
    match = (
        ArtifactMatch.objects.filter(document=document)
        .select_related("artifact")
        .order_by("-share", "id")
        .first()
    )
    if match is None:
        return "it matches something lexweb generated"
    artifact = match.artifact
    visible = (
        user is not None
        and artifact.case_id is not None
        and case_selectors.case_is_member(user=user, case_id=artifact.case_id)
    )
    if visible:
        named = f"“{artifact.title}”, which lexweb generated"
    else:
        named = "something lexweb generated in a case you are not on"
    if match.by == ArtifactMatch.By.BYTES:
        return f"its bytes are those of {named}"
    return f"its text matches {match.share:.0%} of {named}"


# --- Snapshots -------------------------------------------------------------------------------


def bates_labels(document_ids: Sequence[int]) -> dict[tuple[int, int], list[str]]:
    """Every Bates label of the pages of these documents, lowest production first, keyed by
    (document id, page number). A page of an original has the labels of every production
    that stamped it; a page of a production volume document, the label stamped on it."""
    labels: dict[tuple[int, int], list[str]] = {}
    rows = (
        BatesPage.objects.filter(
            Q(document_id__in=document_ids) | Q(production__volume_document_id__in=document_ids)
        )
        .order_by("production_id", "number")
        .values_list(
            "document_id",
            "page_number",
            "production__volume_document_id",
            "production_page",
            "prefix",
            "number",
            "production__digits",
        )
    )
    wanted = set(document_ids)
    for document_id, page_number, volume_id, volume_page, prefix, number, digits in rows:
        label = f"{prefix}{number:0{digits}d}"
        if document_id in wanted:
            labels.setdefault((document_id, page_number), []).append(label)
        if volume_id is not None and volume_id in wanted:
            labels.setdefault((volume_id, volume_page), []).append(label)
    return labels


def item_span(item: PacketItem) -> tuple[int, int]:
    """The item's first and last page (the whole document when it names no range)."""
    if item.first_page is None or item.last_page is None:
        return 1, item.document.page_count
    return item.first_page, item.last_page


def snapshot_pages(packet: Packet, items: Sequence[PacketItem]) -> list[FrozenPage]:
    """The FrozenPage rows `items` (in order, with `document` selected) would freeze to now,
    unsaved, in position order. Two queries: the pages, and their Bates labels.

    DomainError when an item's pages are not all there (the document is being read again).
    """
    where = Q()
    for item in items:
        first, last = item_span(item)
        where |= Q(document_id=item.document_id, number__gte=first, number__lte=last)
    pages = {
        (row[0], row[1]): row
        for row in Page.objects.filter(where).values_list(
            "document_id", "number", "text", "source", "ocr_confidence"
        )
    }
    bates = bates_labels(sorted({item.document_id for item in items}))
    rows: list[FrozenPage] = []
    for item in items:
        document = item.document
        untrusted = document.origin in Document.UNTRUSTED_ORIGINS
        first, last = item_span(item)
        for number in range(first, last + 1):
            row = pages.get((document.pk, number))
            if row is None:
                raise DomainError(
                    f"{packet_item_label(item)}: page {number} is not there (the document is "
                    "being read again); freeze once it is ready."
                )
            text = row[2]
            rows.append(
                FrozenPage(
                    packet=packet,
                    item=item,
                    position=len(rows) + 1,
                    document_id=document.pk,
                    page_number=number,
                    bates=bates.get((document.pk, number), []),
                    text=text,
                    text_sha256=hashlib.sha256(text.encode()).hexdigest(),
                    source=row[3],
                    ocr_confidence=row[4],
                    origin=document.origin,
                    untrusted=untrusted,
                )
            )
    return rows


# --- For users -------------------------------------------------------------------------------


def _case(*, user: User, case_id: int) -> Case:
    if not isinstance(case_id, int) or isinstance(case_id, bool) or not 0 < case_id <= _MAX_ID:
        raise NotFound(f"No case {case_id}.")
    return case_selectors.case_get_for_user(user=user, case_id=case_id)


def _packet(*, case: Case, packet_id: int) -> Packet:
    valid = isinstance(packet_id, int) and not isinstance(packet_id, bool)
    packet = (
        Packet.objects.filter(pk=packet_id, case=case).first()
        if valid and 0 < packet_id <= _MAX_ID
        else None
    )
    if packet is None:
        raise NotFound(f"No packet {packet_id} in this case.")
    return packet


def _with_counts(packets: QuerySet[Packet]) -> QuerySet[Packet]:
    latest = (
        Packet.objects.filter(series=OuterRef("series"))
        .order_by()
        .values("series")
        .annotate(top=Max("version"))
        .values("top")
    )
    items = (
        PacketItem.objects.filter(packet=OuterRef("pk"))
        .order_by()
        .values("packet")
        .annotate(n=Count("pk"))
        .values("n")
    )
    return packets.annotate(
        latest_version=Subquery(latest, output_field=IntegerField()),
        is_latest=ExpressionWrapper(Q(version=F("latest_version")), output_field=BooleanField()),
        item_count=Coalesce(Subquery(items, output_field=IntegerField()), 0),
    )


def packet_list_for_user(*, user: User, case_id: int) -> QuerySet[Packet]:
    """The case's packets: the latest version of each series first (newest first), then the
    earlier versions, so every version is reachable. Each has `latest_version`, `is_latest`
    and `item_count`. Audited as one read of the list."""
    case = _case(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="packet.list", case=case)
    return _with_counts(Packet.objects.filter(case=case)).order_by(
        "-is_latest", "-created_at", "-id"
    )


def packet_get_for_user(*, user: User, case_id: int, packet_id: int) -> Packet:
    """One packet with its items (in order, each with its document and who added it)
    prefetched, and `latest_version`, `is_latest`, `item_count`. Audited as a view."""
    case = _case(user=user, case_id=case_id)
    _packet(case=case, packet_id=packet_id)
    items = PacketItem.objects.select_related("document", "added_by").order_by("order")
    packet = (
        _with_counts(Packet.objects.filter(pk=packet_id))
        .select_related("created_by", "frozen_by")
        .prefetch_related(Prefetch("items", queryset=items))
        .get()
    )
    read_audit.read_record(user=user, action="packet.view", case=case, target=packet)
    return packet


def packet_versions_for_user(*, user: User, case_id: int, packet_id: int) -> list[Packet]:
    """Every version of the packet's series, first version first. Audited as a view."""
    case = _case(user=user, case_id=case_id)
    packet = _packet(case=case, packet_id=packet_id)
    versions = list(
        _with_counts(Packet.objects.filter(case=case, series=packet.series)).order_by("version")
    )
    read_audit.read_record(user=user, action="packet.versions", case=case, target=packet)
    return versions


def packet_pages_for_user(*, user: User, case_id: int, packet_id: int) -> QuerySet[FrozenPage]:
    """The frozen snapshot, in position order, each page with its document selected (as
    `apps.evidence.prompt.render_packet_pages` wants them). DomainError before freezing.
    Audited as a read of the packet's pages."""
    case = _case(user=user, case_id=case_id)
    packet = _packet(case=case, packet_id=packet_id)
    if packet.status != Packet.Status.FROZEN:
        raise DomainError(
            f"“{packet.title}” version {packet.version} is not frozen yet; freeze it to read "
            "its snapshot."
        )
    read_audit.read_record(user=user, action="packet.pages", case=case, target=packet)
    return FrozenPage.objects.filter(packet=packet).select_related("document").order_by("position")


def packet_prompt_for_user(*, user: User, case_id: int, packet_id: int) -> str:
    """The frozen snapshot as a model reads it (`prompt.render_packet_pages`, the one renderer,
    with a fresh nonce). DomainError before freezing; audited as a read of the pages."""
    pages = packet_pages_for_user(user=user, case_id=case_id, packet_id=packet_id)
    return prompt.render_packet_pages(list(pages))


# --- Comparing versions ----------------------------------------------------------------------


@dataclass(frozen=True)
class ItemRef:
    document_id: int
    first_page: int | None
    last_page: int | None
    label: str


@dataclass(frozen=True)
class PageChange:
    """A page both packets hold whose text differs (old: `packet`, new: `other`)."""

    document_id: int
    filename: str
    page_number: int
    old_sha256: str
    new_sha256: str


@dataclass(frozen=True)
class Comparison:
    """From `packet` to `other`: the items `other` adds and drops, and the pages both hold
    whose text changed. An editable packet is compared as it would freeze now."""

    packet: Packet
    other: Packet
    items_added: list[ItemRef]
    items_removed: list[ItemRef]
    pages_changed: list[PageChange]


def _items_of(packet: Packet) -> list[PacketItem]:
    return list(
        PacketItem.objects.filter(packet=packet).select_related("document").order_by("order")
    )


def _page_hashes(packet: Packet, items: list[PacketItem]) -> dict[tuple[int, int], str]:
    if packet.status == Packet.Status.FROZEN:
        rows = FrozenPage.objects.filter(packet=packet).values_list(
            "document_id", "page_number", "text_sha256"
        )
        return {(document, number): sha for document, number, sha in rows}
    return {(p.document_id, p.page_number): p.text_sha256 for p in snapshot_pages(packet, items)}


_Key = tuple[int, int | None, int | None]


def packet_compare_for_user(
    *, user: User, case_id: int, packet_id: int, other_id: int
) -> Comparison:
    """Compare two packets of the case (usually two versions of one series). Audited."""
    case = _case(user=user, case_id=case_id)
    packet = _packet(case=case, packet_id=packet_id)
    other = _packet(case=case, packet_id=other_id)
    old_items, new_items = _items_of(packet), _items_of(other)

    def key(item: PacketItem) -> _Key:
        return (item.document_id, item.first_page, item.last_page)

    def refs(
        items: list[PacketItem], leave_out: set[tuple[int, int | None, int | None]]
    ) -> list[ItemRef]:
        return [
            ItemRef(i.document_id, i.first_page, i.last_page, packet_item_label(i))
            for i in items
            if key(i) not in leave_out
        ]

    old_hashes, new_hashes = _page_hashes(packet, old_items), _page_hashes(other, new_items)
    names = {i.document_id: i.document.filename for i in old_items + new_items}
    changed = [
        PageChange(document, names.get(document, ""), number, sha, new_hashes[(document, number)])
        for (document, number), sha in sorted(old_hashes.items())
        if (document, number) in new_hashes and new_hashes[(document, number)] != sha
    ]
    read_audit.read_record(
        user=user, action="packet.compare", case=case, target=packet, detail={"other": other.pk}
    )
    return Comparison(
        packet=packet,
        other=other,
        items_added=refs(new_items, {key(i) for i in old_items}),
        items_removed=refs(old_items, {key(i) for i in new_items}),
        pages_changed=changed,
    )


# --- Item views ------------------------------------------------------------------------------


@dataclass(frozen=True)
class ItemView:
    """What a person sees of one item: where it came from and what to watch for.

    `problem`: why the item would be refused now (None when it is fine; an item can only have
    one if its document changed after it was added, and such a packet does not freeze).
    `warnings`: text in its pages that reads as instructions to a model (stored when added).
    """

    item: PacketItem
    label: str
    origin: str
    untrusted: bool
    provenance: str
    chain: list[Link]
    problem: str | None
    warnings: list[dict[str, str | int]]


def packet_item_views(packet: Packet, *, user: User | None = None) -> list[ItemView]:
    """The packet's items with their provenance chain, flags and warnings. Call with a packet
    from `packet_get_for_user` (already checked and audited); `user` lets a flag name an
    artifact of a case that user is on. One query per item (its lineage), two when it has
    lineage, one more when it is flagged."""
    items = sorted(packet.items.all(), key=lambda item: item.order)
    views = []
    for item in items:
        document = item.document
        chain = provenance.provenance_chain(document)
        views.append(
            ItemView(
                item=item,
                label=packet_item_label(item),
                origin=document.origin,
                untrusted=document.origin in Document.UNTRUSTED_ORIGINS,
                provenance=document.provenance,
                chain=chain,
                problem=provenance_problem(document=document, user=user, chain=chain),
                warnings=list(item.warnings),
            )
        )
    return views
