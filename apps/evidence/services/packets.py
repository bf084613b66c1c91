"""Writes for evidence packets: create, add and remove items, freeze, make a new version.

Every function checks membership of the case itself (`case_get_for_user`: NotFound for
non-members, the same answer as for a missing case); lawyers and staff on the case may edit.

Adding items (`packet_items_add`):
1. The request's shape: one to LEXWEB_MAX_PACKET_ITEMS selections, each with a reason.
2. In one transaction, with the packet row locked (SELECT ... FOR UPDATE), so that two editors
   serialise: the packet must be editable (Conflict once frozen: make a new version).
3. Each selection is checked on its own: a document of this case; the shape of its range
   (both pages or neither, from 1, not reversed) and its reason; its provenance (system
   generated; derived at any depth from something system generated; flagged by the
   generated-artifact registry; still being read); the range within the document's pages;
   overlap with the packet's items and the request's earlier selections. Then the packet's
   page limit (LEXWEB_MAX_PACKET_PAGES) for the whole request.
   The builder reads only the selections: never history, recent outputs or "related" material.
4. Any refusal refuses the whole request (nothing is added). Each refusal is audited
   ("packet.item_refused", with the item and the reason) after the transaction has ended, so
   the audit rows are kept although the request's writes are not.
5. Otherwise the items are written, each with the instruction warnings found in its pages'
   text (`apps.evidence.prompt.instruction_warnings`), and audited ("packet.items_add").

Freezing (`packet_freeze`) snapshots every page into FrozenPage rows under a content hash whose
canonical form is `canonical_line`; a frozen packet never changes, and `packet_new_version`
makes the next, editable version of it.
"""

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Max, Q
from django.utils import timezone

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.documents.models import Document, Page
from apps.evidence import prompt
from apps.evidence.models import ArtifactMatch, FrozenPage, Packet, PacketItem
from apps.evidence.selectors import packets as packet_selectors
from apps.evidence.selectors.packets import item_label, packet_item_label, provenance_problem
from apps.evidence.services import checks
from lexweb.errors import Conflict, DomainError, NotFound
from lexweb.jobs import job_defer

MAX_TITLE = 200
MAX_PURPOSE = 5000
MAX_REASON = 2000
MAX_ITEM_WARNINGS = 50
# Largest id PostgreSQL's bigint holds; larger ones cannot name a row (and would make the
# query itself fail).
_MAX_ID = 2**63 - 1
_MAX_PAGE = 2**31 - 1


class ProvenanceRefused(DomainError):
    """An item may not enter a packet because of where it came from (the API answers 422).

    `item` names the (first) refused item, `reason` says why; `refusals` lists every refused
    selection of the request as (item, reason).
    """

    code = "provenance_refused"
    status: ClassVar[int] = 422

    def __init__(
        self, message: str, *, item: str, reason: str, refusals: Sequence[tuple[str, str]] = ()
    ) -> None:
        super().__init__(message)
        self.item = item
        self.reason = reason
        self.refusals = list(refusals) or [(item, reason)]


@dataclass(frozen=True)
class Selection:
    """One explicit choice: a document of the case, whole (both pages None) or a 1-based
    inclusive page range, and why it belongs in the packet."""

    document_id: int
    first_page: int | None = None
    last_page: int | None = None
    reason: str = ""


@dataclass(frozen=True)
class _Refusal:
    item: str
    reason: str
    # Which error the request gets: provenance (422) > not_found (404) > invalid (400).
    kind: str


class _Refused(Exception):
    def __init__(self, refusals: list[_Refusal], *, conflict: bool = False) -> None:
        super().__init__(refusals[0].reason)
        self.refusals = refusals
        self.conflict = conflict


def _refusal_error(refusals: list[_Refusal], *, freezing: bool = False) -> DomainError:
    lines = [f"{r.item}: {r.reason}." for r in refusals]
    if freezing:
        message = (
            "The packet was not frozen; take out or replace what cannot be evidence. "
            + " ".join(lines)
        )
    elif len(refusals) == 1:
        message = f"{refusals[0].item} cannot be added: {refusals[0].reason}."
    else:
        message = f"Nothing was added; {len(refusals)} selections were refused. " + " ".join(lines)
    provenance_refusals = [r for r in refusals if r.kind == "provenance"]
    if provenance_refusals:
        first = provenance_refusals[0]
        return ProvenanceRefused(
            message,
            item=first.item,
            reason=first.reason,
            refusals=[(r.item, r.reason) for r in refusals],
        )
    if any(r.kind == "not_found" for r in refusals):
        return NotFound(message)
    return DomainError(message)


def _audit_refusals(*, user: User, case: Case, packet: Packet | None, refused: _Refused) -> None:
    for refusal in refused.refusals:
        account_services.audit_record(
            actor=user,
            action="packet.item_refused",
            case=case,
            target=packet or case,
            detail={"item": refusal.item[:300], "reason": refusal.reason[:1000]},
        )


# --- Create ----------------------------------------------------------------------------------


def _clean_text(value: str, *, limit: int, what: str, required: bool) -> str:
    if not isinstance(value, str):
        raise DomainError(f"The {what} must be text.")
    value = value.replace("\x00", "").strip()
    if required and not value:
        raise DomainError(f"Give the packet a {what}.")
    if len(value) > limit:
        raise DomainError(f"The {what} is at most {limit} characters.")
    return value


def _case(*, user: User, case_id: int) -> Case:
    if not _is_id(case_id):
        raise NotFound(f"No case {case_id}.")
    return case_selectors.case_get_for_user(user=user, case_id=case_id)


def packet_create(*, user: User, case_id: int, title: str, purpose: str = "") -> Packet:
    """A new, empty, editable packet (version 1 of its own series). Audited."""
    case = _case(user=user, case_id=case_id)
    title = " ".join(_clean_text(title, limit=MAX_TITLE, what="title", required=True).split())
    purpose = _clean_text(purpose, limit=MAX_PURPOSE, what="purpose", required=False)
    with transaction.atomic():
        packet = Packet.objects.create(case=case, title=title, purpose=purpose, created_by=user)
        packet.series = packet.pk
        packet.save(update_fields=["series"])
        account_services.audit_record(
            actor=user, action="packet.create", case=case, target=packet, detail={"title": title}
        )
    return packet


def _locked_packet(*, case: Case, packet_id: int) -> Packet:
    """The packet row, locked until the transaction ends. Call inside `transaction.atomic`."""
    if not _is_id(packet_id):
        raise NotFound(f"No packet {packet_id} in this case.")
    packet = Packet.objects.select_for_update().filter(pk=packet_id, case=case).first()
    if packet is None:
        raise NotFound(f"No packet {packet_id} in this case.")
    return packet


def _frozen_conflict(packet: Packet) -> str:
    return (
        f"“{packet.title}” version {packet.version} is frozen and never changes; make a new "
        "version to change it"
    )


# --- Add items -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Checked:
    document: Document
    first: int
    last: int
    whole: bool
    reason: str
    label: str


def _is_id(value: object, *, top: int = _MAX_ID) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= top


def _shape_refusal(selection: Selection) -> str | None:
    """What is wrong with the selection itself, before any document is read."""
    first, last = selection.first_page, selection.last_page
    if (first is None) != (last is None):
        return "give both the first and the last page, or neither for the whole document"
    if first is not None and last is not None:
        if not _is_id(first, top=_MAX_PAGE) or not _is_id(last, top=_MAX_PAGE):
            return "page numbers are whole numbers from 1"
        if first > last:
            return f"the first page ({first}) is after the last page ({last})"
    reason = selection.reason
    if not isinstance(reason, str) or not reason.replace("\x00", "").strip():
        return "give a reason: why this belongs in the packet"
    if len(reason) > MAX_REASON:
        return f"the reason is at most {MAX_REASON} characters"
    return None


def _check_requests(selections: Sequence[Selection]) -> None:
    if not selections:
        raise DomainError("Choose at least one document or page range to add.")
    if len(selections) > settings.LEXWEB_MAX_PACKET_ITEMS:
        raise _Refused(
            [
                _Refusal(
                    f"{len(selections)} selections",
                    f"a packet holds at most {settings.LEXWEB_MAX_PACKET_ITEMS} items "
                    "(LEXWEB_MAX_PACKET_ITEMS); add fewer at once or split the packet",
                    "invalid",
                )
            ]
        )
    for selection in selections:
        if not isinstance(selection, Selection):
            raise DomainError("Each selection names a document, optional pages and a reason.")


def _existing_ranges(packet: Packet) -> dict[int, list[tuple[int, int]]]:
    ranges: dict[int, list[tuple[int, int]]] = {}
    rows = PacketItem.objects.filter(packet=packet).values_list(
        "document_id", "first_page", "last_page", "document__page_count"
    )
    for document_id, first, last, count in rows:
        if first is None or last is None:
            first, last = 1, max(count, 1)
        ranges.setdefault(document_id, []).append((first, last))
    return ranges


def _check_one(
    selection: Selection,
    *,
    documents: dict[int, Document],
    user: User,
    taken: dict[int, list[tuple[int, int]]],
) -> _Checked | _Refusal:
    """One selection, checked in the order of the module docstring. Records the range it
    takes in `taken` when it passes, so later selections of the request cannot overlap it."""
    document = documents.get(selection.document_id) if _is_id(selection.document_id) else None
    if document is None:
        return _Refusal(
            f"document {selection.document_id}",
            "there is no such document in this case",
            "not_found",
        )
    label = item_label(
        filename=document.filename,
        document_id=document.pk,
        first_page=selection.first_page,
        last_page=selection.last_page,
    )
    shape = _shape_refusal(selection)
    if shape is not None:
        return _Refusal(label, shape, "invalid")
    problem = provenance_problem(document=document, user=user)
    if problem is not None:
        return _Refusal(label, problem, "provenance")
    whole = selection.first_page is None
    first = selection.first_page or 1
    last = selection.last_page or document.page_count
    if document.page_count < 1:
        return _Refusal(label, "it has no pages", "invalid")
    if last > document.page_count:
        return _Refusal(
            label,
            f"it has {document.page_count} page{'s' if document.page_count != 1 else ''}, so "
            f"pages {first}-{last} are out of bounds",
            "invalid",
        )
    for low, high in taken.get(document.pk, []):
        if first <= high and low <= last:
            held = f"p. {low}" if low == high else f"pp. {low}-{high}"
            return _Refusal(
                label, f"it overlaps {held} of the same document, already chosen", "invalid"
            )
    taken.setdefault(document.pk, []).append((first, last))
    reason = selection.reason.replace("\x00", "").strip()
    return _Checked(document, first, last, whole, reason, label)


def _warnings_for(checked: list[_Checked]) -> list[list[dict[str, str | int]]]:
    """Instruction warnings of each checked selection's pages, read in one query."""
    where = Q()
    for one in checked:
        where |= Q(document_id=one.document.pk, number__gte=one.first, number__lte=one.last)
    texts = {
        (document_id, number): text
        for document_id, number, text in Page.objects.filter(where).values_list(
            "document_id", "number", "text"
        )
    }
    result = []
    for one in checked:
        found: list[dict[str, str | int]] = []
        for number in range(one.first, one.last + 1):
            for warning in prompt.instruction_warnings(texts.get((one.document.pk, number), "")):
                found.append({"page": number, "kind": warning.kind, "excerpt": warning.excerpt})
        result.append(found[:MAX_ITEM_WARNINGS])
    return result


def packet_items_add(
    *, user: User, case_id: int, packet_id: int, selections: Sequence[Selection]
) -> list[PacketItem]:
    """Add the selections to an editable packet, all or none (see the module docstring).

    Raises ProvenanceRefused (any selection refused for its provenance), NotFound (a document
    not in this case, or no such packet), Conflict (the packet is frozen) or DomainError (a bad
    range, an overlap, a missing reason, a limit). Every refused selection is audited even
    though the request is refused; run outside a transaction of your own, or keep it, for those
    rows to stay.
    """
    case = _case(user=user, case_id=case_id)
    selections = list(selections)
    packet: Packet | None = None
    try:
        _check_requests(selections)
        # Against the registry as it is now, not the verdict of intake (issue 20 req 5): a late
        # flag is stored (and audited) before the packet is touched, so it stays when refused.
        checks.documents_recheck(
            document_ids=Document.objects.filter(
                case=case, pk__in=[s.document_id for s in selections if _is_id(s.document_id)]
            ).values_list("pk", flat=True),
            found=ArtifactMatch.Found.PACKET_ADD,
        )
        with transaction.atomic():
            packet = _locked_packet(case=case, packet_id=packet_id)
            return _add_locked(user=user, case=case, packet=packet, selections=selections)
    except _Refused as refused:
        _audit_refusals(user=user, case=case, packet=packet, refused=refused)
        if refused.conflict:
            raise Conflict(refused.refusals[0].reason + ".") from None
        raise _refusal_error(refused.refusals) from None


def _add_locked(
    *, user: User, case: Case, packet: Packet, selections: list[Selection]
) -> list[PacketItem]:
    if packet.status == Packet.Status.FROZEN:
        raise _Refused(
            [_Refusal(f"{len(selections)} selections", _frozen_conflict(packet), "invalid")],
            conflict=True,
        )
    existing = PacketItem.objects.filter(packet=packet).count()
    if existing + len(selections) > settings.LEXWEB_MAX_PACKET_ITEMS:
        raise _Refused(
            [
                _Refusal(
                    f"{len(selections)} selections",
                    f"a packet holds at most {settings.LEXWEB_MAX_PACKET_ITEMS} items "
                    f"(LEXWEB_MAX_PACKET_ITEMS) and this one has {existing}",
                    "invalid",
                )
            ]
        )
    ids = [s.document_id for s in selections if _is_id(s.document_id)]
    # A withdrawn document (a wrong upload) goes into no new packet: refused as not found.
    documents = {
        d.pk: d for d in Document.objects.filter(case=case, pk__in=ids, withdrawn_at__isnull=True)
    }
    taken = _existing_ranges(packet)
    outcomes = [_check_one(s, documents=documents, user=user, taken=taken) for s in selections]
    refusals = [o for o in outcomes if isinstance(o, _Refusal)]
    if refusals:
        raise _Refused(refusals)
    checked = [o for o in outcomes if isinstance(o, _Checked)]
    _check_page_limit(packet, checked)
    return _write_items(user=user, case=case, packet=packet, checked=checked)


def _check_page_limit(packet: Packet, checked: list[_Checked]) -> None:
    held = sum(high - low + 1 for spans in _existing_ranges(packet).values() for low, high in spans)
    adding = sum(one.last - one.first + 1 for one in checked)
    limit = settings.LEXWEB_MAX_PACKET_PAGES
    if held + adding > limit:
        raise _Refused(
            [
                _Refusal(
                    f"{len(checked)} selections ({adding} pages)",
                    f"a packet holds at most {limit} pages (LEXWEB_MAX_PACKET_PAGES) and this "
                    f"one has {held}; choose page ranges or split the packet",
                    "invalid",
                )
            ]
        )


def _write_items(
    *, user: User, case: Case, packet: Packet, checked: list[_Checked]
) -> list[PacketItem]:
    top = PacketItem.objects.filter(packet=packet).aggregate(top=Max("order"))["top"] or 0
    now = timezone.now()
    items = [
        PacketItem(
            packet=packet,
            document=one.document,
            first_page=None if one.whole else one.first,
            last_page=None if one.whole else one.last,
            order=top + n,
            reason=one.reason,
            warnings=warnings,
            added_by=user,
            added_at=now,
        )
        for n, (one, warnings) in enumerate(zip(checked, _warnings_for(checked), strict=True), 1)
    ]
    PacketItem.objects.bulk_create(items)
    Packet.objects.filter(pk=packet.pk).update(updated_at=now)
    account_services.audit_record(
        actor=user,
        action="packet.items_add",
        case=case,
        target=packet,
        detail={
            "count": len(items),
            "items": "; ".join(one.label for one in checked)[:1000],
        },
    )
    return items


# --- Remove an item --------------------------------------------------------------------------


def packet_item_remove(
    *, user: User, case_id: int, packet_id: int, item_id: int, reason: str = ""
) -> None:
    """Take an item out of an editable packet (Conflict once frozen). Audited with the reason."""
    case = _case(user=user, case_id=case_id)
    reason = _clean_text(reason, limit=MAX_REASON, what="reason", required=False)
    with transaction.atomic():
        packet = _locked_packet(case=case, packet_id=packet_id)
        if packet.status == Packet.Status.FROZEN:
            raise Conflict(_frozen_conflict(packet) + ".")
        item = (
            PacketItem.objects.select_related("document").filter(pk=item_id, packet=packet).first()
            if _is_id(item_id)
            else None
        )
        if item is None:
            raise NotFound(f"No item {item_id} in this packet.")
        label = packet_item_label(item)
        item.delete()
        Packet.objects.filter(pk=packet.pk).update(updated_at=timezone.now())
        account_services.audit_record(
            actor=user,
            action="packet.item_remove",
            case=case,
            target=packet,
            detail={"item": label[:300], "reason": reason[:1000]},
        )


# --- Freeze ----------------------------------------------------------------------------------


def canonical_line(page: FrozenPage) -> str:
    """The canonical form of one frozen page for the packet's content hash.

    The content hash is SHA-256 over the UTF-8 bytes of these lines, one per page, in position
    order. Each line is a JSON object with sorted keys, no spaces (separators "," and ":"),
    non-ASCII kept as is, ended by "\\n":
    {"bates":[...],"document":14,"ocr_confidence":91.5|null,"origin":"client","page":2,
     "position":1,"source":"text_layer","text_sha256":"<hex of SHA-256 of the UTF-8 text>",
     "untrusted":false}
    Nothing about the packet row itself (id, version, times, who) is in it, so two packets that
    hold the same pages, read the same way, in the same order, have the same hash.
    """
    return (
        json.dumps(
            {
                "bates": list(page.bates),
                "document": page.document_id,
                "ocr_confidence": page.ocr_confidence,
                "origin": page.origin,
                "page": page.page_number,
                "position": page.position,
                "source": page.source,
                "text_sha256": page.text_sha256,
                "untrusted": page.untrusted,
            },
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=False,
        )
        + "\n"
    )


def content_hash(pages: Iterable[FrozenPage]) -> str:
    """SHA-256 (hex) of the canonical lines of `pages`, given in position order."""
    digest = hashlib.sha256()
    for page in pages:
        digest.update(canonical_line(page).encode())
    return digest.hexdigest()


def packet_freeze(*, user: User, case_id: int, packet_id: int) -> Packet:
    """Freeze an editable packet: snapshot every page it holds, under a content hash.

    1. One transaction, the packet row locked: two editors serialise, and the second sees the
       frozen state (Conflict). An empty packet is refused.
    2. Every item's document is checked again (its provenance may have changed since it was
       added): any refusal refuses the freeze, audited as when adding.
    3. Each page is copied (document, page number, every Bates label, text and its SHA-256,
       text source, OCR confidence, origin, untrusted) in position order, inserted in bulk,
       and the content hash (`content_hash`) is stored with the frozen state.
    4. The job "verification.index_prepare" is deferred: the verifier's index of the pages,
       built and kept once for every draft checked against the packet.
    Later re-reads, productions or deleted drafts change none of these rows.
    """
    case = _case(user=user, case_id=case_id)
    packet: Packet | None = None
    try:
        # Every item's document against the registry as it is now (see packet_items_add).
        checks.documents_recheck(
            document_ids=PacketItem.objects.filter(
                packet__case=case, packet_id=packet_id, packet__status=Packet.Status.EDITABLE
            ).values_list("document_id", flat=True),
            found=ArtifactMatch.Found.FREEZE,
        )
        with transaction.atomic():
            packet = _locked_packet(case=case, packet_id=packet_id)
            return _freeze_locked(user=user, case=case, packet=packet)
    except _Refused as refused:
        _audit_refusals(user=user, case=case, packet=packet, refused=refused)
        raise _refusal_error(refused.refusals, freezing=True) from None


_FROZEN_COLUMNS = (
    "packet_id", "item_id", "position", "document_id", "page_number", "bates", "text",
    "text_sha256", "source", "ocr_confidence", "origin", "untrusted",
)  # fmt: skip


def _insert_frozen(pages: Sequence[FrozenPage]) -> None:
    """Write the snapshot rows with one COPY. On 5,000 pages the whole freeze took 1.9-2.3 s
    this way, 3.6-6.3 s with `bulk_create` and 10.8-15.6 s with one INSERT per row (medians
    of two runs of bench/bench_packet_freeze.py, 2026-12-01, on a shared 2-core machine).
    Constraints, foreign keys and the triggers of migration 0002 apply as for any INSERT."""
    table = FrozenPage._meta.db_table
    columns = ", ".join(_FROZEN_COLUMNS)
    # Table and column names are ours (constants above), never input.
    with connection.cursor() as cursor, cursor.copy(f"COPY {table} ({columns}) FROM STDIN") as copy:
        for page in pages:
            copy.write_row(
                (
                    page.packet_id, page.item_id, page.position, page.document_id,
                    page.page_number, list(page.bates), page.text, page.text_sha256,
                    page.source, page.ocr_confidence, page.origin, page.untrusted,
                )
            )  # fmt: skip


def _freeze_locked(*, user: User, case: Case, packet: Packet) -> Packet:
    if packet.status == Packet.Status.FROZEN:
        raise Conflict(_frozen_conflict(packet) + ".")
    items = list(
        PacketItem.objects.filter(packet=packet).select_related("document").order_by("order")
    )
    if not items:
        raise DomainError("An empty packet cannot be frozen; add documents or page ranges first.")
    refusals = []
    for item in items:
        problem = provenance_problem(document=item.document, user=user)
        if problem is not None:
            refusals.append(_Refusal(packet_item_label(item), problem, "provenance"))
    if refusals:
        raise _Refused(refusals)
    pages = packet_selectors.snapshot_pages(packet, items)
    _insert_frozen(pages)
    packet.status = Packet.Status.FROZEN
    packet.content_hash = content_hash(pages)
    packet.page_count = len(pages)
    packet.frozen_at = packet.updated_at = timezone.now()
    packet.frozen_by = user
    packet.save(
        update_fields=[
            "status",
            "content_hash",
            "page_count",
            "frozen_at",
            "frozen_by",
            "updated_at",
        ]
    )
    # The verifier's index of the snapshot, built once for every draft checked against it.
    # By name (services never import tasks); the job row commits with the frozen state.
    job_defer("verification.index_prepare", packet_id=packet.pk)
    account_services.audit_record(
        actor=user,
        action="packet.freeze",
        case=case,
        target=packet,
        detail={"pages": len(pages), "content_hash": packet.content_hash},
    )
    return packet


# --- New version -----------------------------------------------------------------------------


def packet_new_version(*, user: User, case_id: int, packet_id: int) -> Packet:
    """The next, editable version of a frozen packet, holding the same items (who added each
    and why are kept). Conflict when the packet is still editable, or when its series already
    has an editable version (edit that one). The series' rows are locked, in id order (so two
    people asking at once, from the same version or from two, get one new version and a
    Conflict, never a deadlock)."""
    case = _case(user=user, case_id=case_id)
    with transaction.atomic():
        # A packet's series never changes: read it unlocked, then lock the whole series.
        name = (
            Packet.objects.filter(pk=packet_id, case=case).values_list("series", flat=True).first()
            if _is_id(packet_id)
            else None
        )
        if name is None:
            raise NotFound(f"No packet {packet_id} in this case.")
        list(
            Packet.objects.select_for_update()
            .filter(case=case, series=name)
            .order_by("pk")
            .values_list("pk", flat=True)
        )
        # Read again once the locks are held: this statement sees a version that whoever held
        # them committed meanwhile (the locking one's snapshot predates it).
        series = list(Packet.objects.filter(case=case, series=name))
        source = next(p for p in series if p.pk == packet_id)
        if source.status != Packet.Status.FROZEN:
            raise Conflict(
                f"“{source.title}” version {source.version} is not frozen; edit it directly."
            )
        editable = [p for p in series if p.status == Packet.Status.EDITABLE]
        if editable:
            raise Conflict(
                f"Version {editable[0].version} of “{source.title}” is already editable; edit "
                "that one."
            )
        packet = Packet.objects.create(
            case=case,
            series=source.series,
            version=max(p.version for p in series) + 1,
            title=source.title,
            purpose=source.purpose,
            created_by=user,
        )
        PacketItem.objects.bulk_create(
            PacketItem(
                packet=packet,
                document_id=item.document_id,
                first_page=item.first_page,
                last_page=item.last_page,
                order=item.order,
                reason=item.reason,
                warnings=item.warnings,
                added_by_id=item.added_by_id,
                added_at=item.added_at,
            )
            for item in PacketItem.objects.filter(packet=source).order_by("order")
        )
        account_services.audit_record(
            actor=user,
            action="packet.new_version",
            case=case,
            target=packet,
            detail={"from_packet": source.pk, "version": packet.version},
        )
    return packet
