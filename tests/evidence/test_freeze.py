"""Freezing: the snapshot (every field, Bates labels, the documented content hash), refusals
(empty, twice, provenance changed since adding), what never changes a frozen packet (re-reads,
new productions, deleted drafts, deleting a document in it), new versions and comparing them,
and the structural test of requirement 5."""

import hashlib
import json

import pytest
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import services as document_services
from apps.documents.models import Document, Page
from apps.evidence import prompt
from apps.evidence.models import FrozenPage, GeneratedArtifact, Packet, PacketItem
from apps.evidence.selectors import packets as selectors
from apps.evidence.services import packets as services
from apps.evidence.services import registry
from apps.evidence.services.packets import ProvenanceRefused, Selection
from lexweb.errors import Conflict, DomainError
from tests.evidence.conftest import derive, make_document, selection, stamp

pytestmark = pytest.mark.django_db


def add(user: User, packet: Packet, *selections: Selection) -> list[PacketItem]:
    return services.packet_items_add(
        user=user, case_id=packet.case_id, packet_id=packet.pk, selections=selections
    )


def freeze(user: User, packet: Packet) -> Packet:
    return services.packet_freeze(user=user, case_id=packet.case_id, packet_id=packet.pk)


def frozen_rows(packet: Packet) -> list[tuple[object, ...]]:
    return list(
        FrozenPage.objects.filter(packet=packet)
        .order_by("position")
        .values_list(
            "position", "document_id", "page_number", "bates", "text", "text_sha256", "source",
            "ocr_confidence", "origin", "untrusted", "item_id",
        )
    )  # fmt: skip


def test_freeze_snapshots_every_page_in_item_order_with_all_fields(
    lawyer: User, staff: User, packet: Packet, case: Case
) -> None:
    letter = make_document(
        case, lawyer, filename="letter.pdf", origin=Document.Origin.OPPOSING,
        pages=["L1", "L2 café", "L3"], source=Page.Source.OCR, ocr_confidence=88.5,
    )  # fmt: skip
    invoice = make_document(case, lawyer, filename="invoice.pdf", pages=["I1", "I2"])
    stamp(invoice, lawyer, prefix="ACME", first=14)
    stamp(invoice, lawyer, prefix="ZED", first=1)
    first, second = add(staff, packet, selection(letter, 2, 3), selection(invoice))

    frozen = freeze(lawyer, packet)

    sha = lambda text: hashlib.sha256(text.encode()).hexdigest()  # noqa: E731
    assert frozen_rows(packet) == [
        (1, letter.pk, 2, [], "L2 café", sha("L2 café"), "ocr", 88.5, "opposing", True, first.pk),
        (2, letter.pk, 3, [], "L3", sha("L3"), "ocr", 88.5, "opposing", True, first.pk),
        (3, invoice.pk, 1, ["ACME000014", "ZED000001"], "I1", sha("I1"), "text_layer", None,
         "client", False, second.pk),
        (4, invoice.pk, 2, ["ACME000015", "ZED000002"], "I2", sha("I2"), "text_layer", None,
         "client", False, second.pk),
    ]  # fmt: skip
    assert (frozen.status, frozen.page_count, frozen.frozen_by) == ("frozen", 4, lawyer)
    assert frozen.frozen_at is not None
    event = AuditEvent.objects.get(action="packet.freeze")
    assert event.detail == {"pages": 4, "content_hash": frozen.content_hash}


def test_the_content_hash_is_sha256_over_the_documented_canonical_lines(
    lawyer: User, packet: Packet, case: Case
) -> None:
    document = make_document(case, lawyer, pages=["Zürich “quoted”", "two"])
    stamp(document, lawyer)
    add(lawyer, packet, selection(document))
    frozen = freeze(lawyer, packet)

    # Written out here by hand, from services.packets.canonical_line's docstring.
    lines = ""
    for page in FrozenPage.objects.filter(packet=packet).order_by("position"):
        record = {
            "bates": page.bates,
            "document": document.pk,
            "ocr_confidence": None,
            "origin": "client",
            "page": page.page_number,
            "position": page.position,
            "source": "text_layer",
            "text_sha256": hashlib.sha256(page.text.encode("utf-8")).hexdigest(),
            "untrusted": False,
        }
        lines += json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        lines += "\n"
    assert frozen.content_hash == hashlib.sha256(lines.encode("utf-8")).hexdigest()
    assert '"bates":["ACME000001"]' in lines


def test_an_empty_packet_is_not_frozen(lawyer: User, packet: Packet) -> None:
    with pytest.raises(DomainError, match="An empty packet cannot be frozen"):
        freeze(lawyer, packet)
    packet.refresh_from_db()
    assert packet.status == "editable" and not FrozenPage.objects.exists()


def test_freezing_twice_is_a_conflict_and_changes_nothing(
    lawyer: User, packet: Packet, case: Case
) -> None:
    add(lawyer, packet, selection(make_document(case, lawyer)))
    first = freeze(lawyer, packet)
    with pytest.raises(Conflict, match="frozen and never changes"):
        freeze(lawyer, packet)
    packet.refresh_from_db()
    assert (packet.content_hash, packet.frozen_at) == (first.content_hash, first.frozen_at)
    assert FrozenPage.objects.count() == 3


def test_a_document_flagged_after_it_was_added_stops_the_freeze(
    lawyer: User, packet: Packet, case: Case
) -> None:
    document = make_document(case, lawyer, filename="late.pdf")
    add(lawyer, packet, selection(document))
    Document.objects.filter(pk=document.pk).update(provenance=Document.Provenance.FLAGGED)

    with pytest.raises(ProvenanceRefused) as refused:
        freeze(lawyer, packet)

    assert refused.value.item == f"“late.pdf” (document {document.pk})"
    assert str(refused.value).startswith("The packet was not frozen")
    assert "registry flagged it" in str(refused.value)
    assert not FrozenPage.objects.exists()
    assert AuditEvent.objects.filter(action="packet.item_refused").count() == 1


def test_pages_missing_at_freeze_time_are_a_clear_error(
    lawyer: User, packet: Packet, case: Case
) -> None:
    document = make_document(case, lawyer, filename="gone.pdf")
    add(lawyer, packet, selection(document, 2, 3))
    Page.objects.filter(document=document, number=3).delete()
    with pytest.raises(DomainError, match="page 3 is not there"):
        freeze(lawyer, packet)
    assert not FrozenPage.objects.exists()


# --- What never changes a frozen packet ------------------------------------------------------


def test_a_re_read_document_does_not_change_the_snapshot(
    lawyer: User, packet: Packet, case: Case
) -> None:
    document = make_document(case, lawyer, pages=["old one", "old two"])
    add(lawyer, packet, selection(document))
    frozen = freeze(lawyer, packet)
    before = frozen_rows(packet)

    # Read again: every Page row replaced, with other text and another source.
    Page.objects.filter(document=document).delete()
    Page.objects.bulk_create(
        Page(document=document, number=n, text=f"new {n}", source="ocr", ocr_confidence=40.0)
        for n in (1, 2)
    )

    assert frozen_rows(packet) == before
    pages = selectors.packet_pages_for_user(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    assert [p.text for p in pages] == ["old one", "old two"]
    packet.refresh_from_db()
    assert packet.content_hash == frozen.content_hash


def test_a_new_production_does_not_change_the_snapshot(
    lawyer: User, packet: Packet, case: Case
) -> None:
    document = make_document(case, lawyer)
    stamp(document, lawyer, prefix="ACME")
    add(lawyer, packet, selection(document))
    frozen = freeze(lawyer, packet)
    before = frozen_rows(packet)

    stamp(document, lawyer, prefix="LATER", first=500)

    assert frozen_rows(packet) == before
    assert [row[3] for row in before] == [["ACME000001"], ["ACME000002"], ["ACME000003"]]
    packet.refresh_from_db()
    assert packet.content_hash == frozen.content_hash


def test_deleting_drafts_does_not_change_the_snapshot(
    lawyer: User, packet: Packet, case: Case
) -> None:
    evidence = make_document(case, lawyer)
    drafts = [
        make_document(case, lawyer, filename=f"draft-{n}.md", origin="system_generated")
        for n in range(3)
    ]
    add(lawyer, packet, selection(evidence))
    frozen = freeze(lawyer, packet)
    before = frozen_rows(packet)

    for draft in drafts:
        draft.delete()

    assert frozen_rows(packet) == before
    packet.refresh_from_db()
    assert packet.content_hash == frozen.content_hash


def test_deleting_a_document_in_a_packet_is_refused_by_the_database(
    lawyer: User, packet: Packet, case: Case
) -> None:
    # lexweb has no service that deletes documents; the rows themselves refuse (PROTECT), for
    # an item of an editable packet and for a frozen page alike.
    editable = make_document(case, lawyer, filename="kept.pdf")
    add(lawyer, packet, selection(editable))
    with pytest.raises(ProtectedError, match="PacketItem"):
        editable.delete()
    freeze(lawyer, packet)
    with pytest.raises(ProtectedError):
        editable.delete()
    assert Document.objects.filter(pk=editable.pk).exists()
    with pytest.raises(ProtectedError):
        PacketItem.objects.filter(packet=packet).delete()


# --- New versions and comparing them ---------------------------------------------------------


def test_a_new_version_copies_the_items_and_is_editable(
    lawyer: User, staff: User, packet: Packet, case: Case
) -> None:
    document = make_document(case, lawyer)
    (item,) = add(staff, packet, selection(document, 1, 2, "Why"))
    freeze(lawyer, packet)

    second = services.packet_new_version(user=lawyer, case_id=case.pk, packet_id=packet.pk)

    assert (second.series, second.version, second.status) == (packet.pk, 2, "editable")
    (copied,) = second.items.all()
    assert (copied.document_id, copied.first_page, copied.last_page, copied.reason) == (
        document.pk, 1, 2, "Why",
    )  # fmt: skip
    assert (copied.added_by, copied.added_at) == (staff, item.added_at)
    versions = selectors.packet_versions_for_user(user=lawyer, case_id=case.pk, packet_id=second.pk)
    assert [v.version for v in versions] == [1, 2]
    assert AuditEvent.objects.filter(action="packet.new_version").count() == 1


def test_new_version_refusals(lawyer: User, packet: Packet, case: Case) -> None:
    add(lawyer, packet, selection(make_document(case, lawyer)))
    with pytest.raises(Conflict, match="is not frozen; edit it directly"):
        services.packet_new_version(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    freeze(lawyer, packet)
    services.packet_new_version(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    with pytest.raises(Conflict, match=r"Version 2 .* is already editable"):
        services.packet_new_version(user=lawyer, case_id=case.pk, packet_id=packet.pk)


def test_compare_two_versions_items_added_removed_and_pages_changed(
    lawyer: User, packet: Packet, case: Case
) -> None:
    kept = make_document(case, lawyer, filename="kept.pdf", pages=["k1", "k2"])
    dropped = make_document(case, lawyer, filename="dropped.pdf")
    added = make_document(case, lawyer, filename="added.pdf")
    add(lawyer, packet, selection(kept), selection(dropped, 1, 1))
    freeze(lawyer, packet)
    second = services.packet_new_version(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    drop = PacketItem.objects.get(packet=second, document=dropped)
    services.packet_item_remove(
        user=lawyer, case_id=case.pk, packet_id=second.pk, item_id=drop.pk, reason="Not needed"
    )
    add(lawyer, second, selection(added, 2, 3))
    Page.objects.filter(document=kept, number=2).update(text="k2 corrected by a re-read")
    freeze(lawyer, second)

    comparison = selectors.packet_compare_for_user(
        user=lawyer, case_id=case.pk, packet_id=packet.pk, other_id=second.pk
    )

    assert [r.label for r in comparison.items_added] == [
        f"“added.pdf” pp. 2-3 (document {added.pk})"
    ]
    assert [r.label for r in comparison.items_removed] == [
        f"“dropped.pdf” p. 1 (document {dropped.pk})"
    ]
    (change,) = comparison.pages_changed
    assert (change.document_id, change.filename, change.page_number) == (kept.pk, "kept.pdf", 2)
    assert change.old_sha256 == hashlib.sha256(b"k2").hexdigest()
    assert change.new_sha256 == hashlib.sha256(b"k2 corrected by a re-read").hexdigest()
    assert AuditEvent.objects.filter(action="packet.compare").exists()


def test_compare_an_editable_version_as_it_would_freeze_now(
    lawyer: User, packet: Packet, case: Case
) -> None:
    document = make_document(case, lawyer, pages=["a", "b"])
    add(lawyer, packet, selection(document))
    freeze(lawyer, packet)
    second = services.packet_new_version(user=lawyer, case_id=case.pk, packet_id=packet.pk)
    Page.objects.filter(document=document, number=1).update(text="a, re-read")

    comparison = selectors.packet_compare_for_user(
        user=lawyer, case_id=case.pk, packet_id=packet.pk, other_id=second.pk
    )

    assert not comparison.items_added and not comparison.items_removed
    assert [(c.page_number) for c in comparison.pages_changed] == [1]


# --- Requirement 5: the builder reads only the selections ------------------------------------


def _generate_everything_everywhere(case: Case, lawyer: User, evidence: list[Document]) -> None:
    """Generated material all over the case: registered artifacts (some quoting the evidence
    word for word), generated documents made from the evidence, documents derived from those,
    other packets, and a flagged upload."""
    for n, document in enumerate(evidence):
        text = " ".join(Page.objects.filter(document=document).values_list("text", flat=True))
        registry.artifact_register(
            data=f"draft {n}: {text}".encode(),
            text=f"Summary. {text} As shown at RTX 3060.",
            kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
            media_type="text/markdown",
            title=f"Summary {n}",
            case=case,
            created_by=lawyer,
        )
    generated = document_services.document_create_generated(
        case=case,
        actor=lawyer,
        filename="summary.md",
        data=b"A summary of the evidence, citing RTX 3060.",
        text="A summary of the evidence, citing RTX 3060.",
        media_type="text/markdown",
        source="drafting run 1",
        parents=evidence,
    )
    child = make_document(case, lawyer, filename="summary-print.pdf")
    derive(child, generated, transform="render-pdf")
    make_document(case, lawyer, filename="re-upload.pdf", provenance="flagged")
    other = services.packet_create(user=lawyer, case_id=case.pk, title="Another packet")
    services.packet_items_add(
        user=lawyer, case_id=case.pk, packet_id=other.pk, selections=[selection(evidence[0], 1, 1)]
    )


def test_generated_material_anywhere_in_the_case_does_not_change_a_packet_of_the_same_selection(
    lawyer: User, case: Case
) -> None:
    letter = make_document(case, lawyer, filename="letter.pdf", pages=["Dear Sir", "Pay now"])
    invoice = make_document(case, lawyer, filename="invoice.pdf", pages=["Invoice 7", "Total 9"])
    stamp(invoice, lawyer)
    chosen = [selection(letter, 2, 2, "Demand"), selection(invoice, reason="Amount")]

    def build(title: str) -> Packet:
        packet = services.packet_create(user=lawyer, case_id=case.pk, title=title)
        services.packet_items_add(
            user=lawyer, case_id=case.pk, packet_id=packet.pk, selections=chosen
        )
        return services.packet_freeze(user=lawyer, case_id=case.pk, packet_id=packet.pk)

    before = build("Before")
    _generate_everything_everywhere(case, lawyer, [letter, invoice])
    after = build("After")

    assert after.content_hash == before.content_hash
    assert [r[1:10] for r in frozen_rows(after)] == [r[1:10] for r in frozen_rows(before)]
    rendered = [
        prompt.render_packet_pages(
            list(
                FrozenPage.objects.filter(packet=p).select_related("document").order_by("position")
            ),
            nonce="fixed",
        )
        for p in (before, after)
    ]
    assert rendered[0] == rendered[1]
    assert "RTX 3060" not in rendered[1] and "summary" not in rendered[1].lower()


# --- The database keeps frozen packets as they are --------------------------------------------


def test_the_database_refuses_to_change_a_frozen_packet_even_past_the_services(
    lawyer: User, packet: Packet, case: Case
) -> None:
    document = make_document(case, lawyer)
    (item,) = add(lawyer, packet, selection(document))
    freeze(lawyer, packet)
    page = FrozenPage.objects.filter(packet=packet).first()
    assert page is not None
    refusals = [
        lambda: FrozenPage.objects.filter(pk=page.pk).update(text="rewritten"),
        lambda: FrozenPage.objects.filter(pk=page.pk).delete(),
        lambda: Packet.objects.filter(pk=packet.pk).update(status="editable"),
        lambda: Packet.objects.filter(pk=packet.pk).update(title="renamed"),
        lambda: PacketItem.objects.filter(pk=item.pk).update(reason="changed"),
        lambda: PacketItem.objects.create(
            packet=packet, document=document, order=2, reason="sneaked in", added_by=lawyer
        ),
    ]
    for attempt in refusals:
        with pytest.raises(IntegrityError, match="never change"), transaction.atomic():
            attempt()
    packet.refresh_from_db()
    assert (packet.status, packet.title) == ("frozen", "Summary judgment evidence")
    assert PacketItem.objects.filter(packet=packet).count() == 1
    assert FrozenPage.objects.get(pk=page.pk).text == page.text


def test_an_editable_packet_is_still_edited_through_the_database(
    lawyer: User, packet: Packet, case: Case
) -> None:
    document = make_document(case, lawyer)
    (item,) = add(lawyer, packet, selection(document))
    PacketItem.objects.filter(pk=item.pk).update(reason="Re-worded")
    Packet.objects.filter(pk=packet.pk).update(title="Renamed")
    packet.refresh_from_db()
    assert packet.title == "Renamed"
