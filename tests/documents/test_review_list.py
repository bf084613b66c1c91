"""The review list (issue 13 req. 2): filters, sorts and keyset pages in the selector, the new
columns, per-case tags with bulk tagging, and withdrawing/restoring a wrong upload."""

import hashlib
from datetime import timedelta
from itertools import count
from typing import Any

import pytest
from django.contrib.messages import get_messages
from django.contrib.postgres.search import SearchVector
from django.test import Client
from django.utils import timezone

from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case
from apps.documents import review_services, selectors
from apps.documents.list_forms import DocumentListForm, DocumentListQuery, cursor_encode
from apps.documents.models import (
    Blob,
    Document,
    DocumentTag,
    Page,
    Production,
    ProductionDocument,
    Tag,
)
from apps.evidence.models import Packet, PacketItem
from lexweb.errors import Conflict, DomainError, NotFound

pytestmark = pytest.mark.django_db

_serial = count(1)


def _doc(case: Case, user: User, name: str, **fields: Any) -> Document:
    """A document row as ingest leaves it (its bytes are not needed by the list)."""
    n = next(_serial)
    size = fields.pop("size", 1000 + n)
    blob = Blob.objects.create(sha256=hashlib.sha256(f"{name}{n}".encode()).hexdigest(), size=size)
    defaults: dict[str, Any] = {
        "kind": Document.Kind.PDF,
        "content_type": "application/pdf",
        "origin": Document.Origin.CLIENT,
        "status": Document.Status.READY,
        "page_count": 1,
        "pages_done": 1,
    }
    defaults.update(fields)
    return Document.objects.create(
        case=case, blob=blob, filename=name, uploaded_by=user, **defaults
    )


def _page(document: Document, text: str, needs_review: bool = False) -> Page:
    page = Page.objects.create(
        document=document,
        number=1,
        text=text,
        source=Page.Source.TEXT_LAYER,
        needs_review=needs_review,
    )
    Page.objects.filter(pk=page.pk).update(search_vector=SearchVector("text", config="english"))
    return page


def _names(user: User, case: Case, **query: Any) -> list[str]:
    page = selectors.document_review_page_for_user(
        user=user, case_id=case.pk, query=DocumentListQuery(**query)
    )
    return [d.filename for d in page.documents]


def _produce(case: Case, user: User, document: Document, status: str = "ready") -> Production:
    production = Production.objects.create(
        case=case,
        volume=f"VOL{next(_serial)}",
        prefix="ACME",
        digits=6,
        first_number=7,
        last_number=9,
        page_count=3,
        created_by=user,
        status=status,
    )
    ProductionDocument.objects.create(
        production=production, document=document, order=1, first_number=7, last_number=9
    )
    return production


def _frozen_packet_with(case: Case, user: User, document: Document) -> Packet:
    packet = Packet.objects.create(case=case, title="Motion exhibits", created_by=user)
    PacketItem.objects.create(packet=packet, document=document, order=1, reason="x", added_by=user)
    Packet.objects.filter(pk=packet.pk).update(
        status=Packet.Status.FROZEN, content_hash="a" * 64, frozen_at=timezone.now()
    )
    return packet


def _messages(response: Any) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


# --- filters -----------------------------------------------------------------------------------


def test_each_filter_narrows_the_list(lawyer: User, staff: User, case: Case) -> None:
    now = timezone.now()
    a = _doc(case, lawyer, "a.pdf", origin="opposing", custodian="Jane Roe", kind="pdf")
    b = _doc(case, lawyer, "b.txt", kind="text", status="failed", custodian="John Doe")
    c = _doc(case, lawyer, "c.pdf", created_at=now - timedelta(days=40))
    _page(a, "to review", needs_review=True)
    _produce(case, lawyer, b)
    _frozen_packet_with(case, lawyer, c)

    assert _names(lawyer, case, origin="opposing") == ["a.pdf"]
    assert _names(lawyer, case, custodian="John Doe") == ["b.txt"]
    assert _names(lawyer, case, kind="text") == ["b.txt"]
    assert _names(lawyer, case, status="failed") == ["b.txt"]
    assert _names(lawyer, case, needs_review=True) == ["a.pdf"]
    assert _names(lawyer, case, needs_review=False) == ["b.txt", "c.pdf"]
    assert _names(lawyer, case, produced=True) == ["b.txt"]
    assert _names(lawyer, case, produced=False) == ["a.pdf", "c.pdf"]
    assert _names(lawyer, case, in_packet=True) == ["c.pdf"]
    assert _names(lawyer, case, in_packet=False) == ["b.txt", "a.pdf"]  # newest first
    today = timezone.localdate()
    assert _names(lawyer, case, added_from=today) == ["b.txt", "a.pdf"]
    assert _names(lawyer, case, added_to=today - timedelta(days=30)) == ["c.pdf"]
    assert _names(lawyer, case, origin="opposing", kind="text") == []


def test_a_failed_production_does_not_count_as_produced(lawyer: User, case: Case) -> None:
    d = _doc(case, lawyer, "d.pdf")
    _produce(case, lawyer, d, status="failed")

    assert _names(lawyer, case, produced=True) == []
    page = selectors.document_review_page_for_user(
        user=lawyer, case_id=case.pk, query=DocumentListQuery()
    )
    assert page.documents[0].bates_begin is None  # type: ignore[attr-defined]


# --- sorting and keyset pages ------------------------------------------------------------------


def test_sorts_order_by_the_column_then_by_id(lawyer: User, case: Case) -> None:
    _doc(case, lawyer, "b.pdf", page_count=5, pages_done=5, size=10, custodian="Zed")
    _doc(case, lawyer, "a.pdf", page_count=1, pages_done=1, size=30, custodian="Amy")
    _doc(case, lawyer, "c.pdf", page_count=5, pages_done=5, size=20, custodian="Amy")

    assert _names(lawyer, case, sort="name") == ["a.pdf", "b.pdf", "c.pdf"]
    assert _names(lawyer, case, sort="-name") == ["c.pdf", "b.pdf", "a.pdf"]
    assert _names(lawyer, case, sort="-pages") == ["c.pdf", "b.pdf", "a.pdf"]
    assert _names(lawyer, case, sort="size") == ["b.pdf", "c.pdf", "a.pdf"]
    assert _names(lawyer, case, sort="custodian") == ["a.pdf", "c.pdf", "b.pdf"]
    assert _names(lawyer, case, sort="added") == ["b.pdf", "a.pdf", "c.pdf"]
    assert _names(lawyer, case) == ["c.pdf", "a.pdf", "b.pdf"]


@pytest.mark.parametrize("sort", ["-added", "name", "-pages", "size", "custodian"])
def test_keyset_pages_walk_every_document_once_both_ways(
    lawyer: User, case: Case, sort: str
) -> None:
    for n in range(11):
        # Ties on purpose: the id breaks them, so no row is skipped or repeated.
        _doc(
            case,
            lawyer,
            f"doc-{n % 4}.pdf",
            page_count=n % 3,
            pages_done=0,
            size=100 + n % 2,
            custodian=["A", "B"][n % 2],
        )
    seen: list[int] = []
    pages = []
    after = None
    while True:
        query = DocumentListQuery(sort=sort, per_page=4, after=after)
        page = selectors.document_review_page_for_user(user=lawyer, case_id=case.pk, query=query)
        pages.append(page)
        seen += [d.pk for d in page.documents]
        if page.next_cursor is None:
            break
        after = _decoded(page.next_cursor, sort)
    assert len(seen) == len(set(seen)) == 11
    assert [len(p.documents) for p in pages] == [4, 4, 3]
    assert pages[0].previous_cursor is None
    assert pages[0].total == 11 and not pages[0].capped
    # Back from the last page: the middle page again, in the same order.
    back = selectors.document_review_page_for_user(
        user=lawyer,
        case_id=case.pk,
        query=DocumentListQuery(
            sort=sort, per_page=4, before=_decoded(pages[2].previous_cursor, sort)
        ),
    )
    assert [d.pk for d in back.documents] == [d.pk for d in pages[1].documents]
    assert back.next_cursor is not None and back.previous_cursor is not None


def _decoded(cursor: str | None, sort: str) -> Any:
    assert cursor is not None
    form = DocumentListForm({"sort": sort, "after": cursor})
    assert form.is_valid(), form.errors
    return form.query().after


# --- the page and its bad input ----------------------------------------------------------------


def test_list_page_shows_the_new_columns_and_filters(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    d = _doc(
        case, lawyer, "exhibit.pdf", custodian="Jane Roe", page_count=3, pages_done=3, size=2048
    )
    _produce(case, lawyer, d)
    review_services.documents_tag(actor=lawyer, case=case, document_ids=[d.pk], name="hot")

    html = lawyer_client.get(f"/cases/{case.pk}/documents/?custodian=Jane+Roe").content.decode()

    assert "Jane Roe" in html
    assert "ACME000007\N{EN DASH}ACME000009" in html
    assert "2.0 KiB" in html
    assert '<span class="badge doc-tag">hot</span>' in html
    assert f'name="ids" value="{d.pk}"' in html
    assert "1 document match" in html
    assert 'name="filters" value="custodian=Jane+Roe"' in html


@pytest.mark.parametrize(
    "query",
    [
        "origin=martian",
        "kind=exe",
        "status=%00",
        "needs_review=maybe",
        "added_from=30000-01-01",
        "added_from=2026-05-02&added_to=2026-05-01",
        "sort=password",
        "per_page=100000",
        "tag=99999999999999999999999",
        "tag=abc",
        "after=not-a-cursor",
        "after=" + "A" * 5000,
        "custodian=" + "x" * 300,
        "custodian=a%00b",
        "after=WzEsMl0&before=WzEsMl0",  # [1,2]: a number where the sort wants a time
    ],
)
def test_bad_list_parameters_are_a_400_with_a_message_and_no_rows(
    lawyer: User, lawyer_client: Client, case: Case, query: str
) -> None:
    _doc(case, lawyer, "secret.pdf")

    response = lawyer_client.get(f"/cases/{case.pk}/documents/?{query}")

    html = response.content.decode()
    assert response.status_code == 400
    assert "secret.pdf" not in html
    assert "error" in html


def test_a_cursor_of_another_sort_is_refused(lawyer: User, case: Case) -> None:
    form = DocumentListForm({"sort": "pages", "after": cursor_encode("a.pdf", 3)})

    assert not form.is_valid()


def test_huge_list_parameters_do_not_fail(lawyer: User, lawyer_client: Client, case: Case) -> None:
    _doc(case, lawyer, "a.pdf")

    response = lawyer_client.get(f"/cases/{case.pk}/documents/?unknown={'x' * 5000}&sort=name")

    assert response.status_code == 200
    assert "a.pdf" in response.content.decode()


# --- tags --------------------------------------------------------------------------------------


def test_bulk_tag_from_the_list_is_per_case_and_audited(
    lawyer: User, staff_client: Client, case: Case, other_case: Case, outsider: User
) -> None:
    a, b = _doc(case, lawyer, "a.pdf"), _doc(case, lawyer, "b.pdf")
    review_services.documents_tag(
        actor=outsider,
        case=other_case,
        document_ids=[_doc(other_case, outsider, "o.pdf").pk],
        name="Hot",
    )

    response = staff_client.post(
        f"/cases/{case.pk}/documents/bulk/",
        {"action": "tag", "ids": [a.pk, b.pk], "tag_name": "  hot  "},
    )
    again = staff_client.post(
        f"/cases/{case.pk}/documents/bulk/", {"action": "tag", "ids": [a.pk], "tag_name": "HOT"}
    )

    assert response.status_code == 302
    assert "Tagged 2 documents “hot”." in _messages(response)
    assert "Tagged 0 documents “hot”." in _messages(again)
    tag = Tag.objects.get(case=case)
    assert tag.name == "hot"
    assert Tag.objects.filter(case=other_case).get().name == "Hot"
    assert set(DocumentTag.objects.filter(tag=tag).values_list("document_id", flat=True)) == {
        a.pk,
        b.pk,
    }
    assert _names(lawyer, case, tag=tag.pk) == ["b.pdf", "a.pdf"]
    event = AuditEvent.objects.filter(action="document.tag", case=case).order_by("id").first()
    assert event is not None and event.detail == {"tag": "hot", "count": 2}


def test_bulk_tag_of_all_matching_documents_and_untag(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    _doc(case, lawyer, "a.pdf", origin="opposing")
    _doc(case, lawyer, "b.pdf", origin="opposing")
    _doc(case, lawyer, "c.pdf")

    lawyer_client.post(
        f"/cases/{case.pk}/documents/bulk/",
        {"action": "tag", "scope": "all", "filters": "origin=opposing", "tag_name": "theirs"},
    )
    tag = Tag.objects.get(case=case, name="theirs")
    assert _names(lawyer, case, tag=tag.pk) == ["b.pdf", "a.pdf"]

    response = lawyer_client.post(
        f"/cases/{case.pk}/documents/bulk/",
        {"action": "untag", "scope": "all", "filters": "origin=opposing", "tag": tag.pk},
    )
    assert "Tag taken off 2 documents." in _messages(response)
    assert not DocumentTag.objects.exists()


def test_another_cases_document_or_tag_cannot_be_used(
    lawyer: User, case: Case, other_case: Case, outsider: User
) -> None:
    theirs = _doc(other_case, outsider, "theirs.pdf")
    their_tag, _ = review_services.documents_tag(
        actor=outsider, case=other_case, document_ids=[theirs.pk], name="x"
    )
    mine = _doc(case, lawyer, "mine.pdf")

    with pytest.raises(NotFound):
        review_services.documents_tag(actor=lawyer, case=case, document_ids=[theirs.pk], name="y")
    with pytest.raises(NotFound):
        review_services.documents_untag(
            actor=lawyer, case=case, document_ids=[mine.pk], tag_id=their_tag.pk
        )
    assert not Tag.objects.filter(case=case).exists()


@pytest.mark.parametrize(
    ("name", "error"),
    [("", "Give the tag a name."), ("  \x00\t ", "Give the tag a name."), ("x" * 61, "at most 60")],
)
def test_bad_tag_names_are_refused(lawyer: User, case: Case, name: str, error: str) -> None:
    d = _doc(case, lawyer, "a.pdf")

    with pytest.raises(DomainError, match=error):
        review_services.documents_tag(actor=lawyer, case=case, document_ids=[d.pk], name=name)
    assert not Tag.objects.exists()


@pytest.mark.parametrize(
    "data",
    [
        {"action": "delete", "ids": ["1"]},
        {"action": "tag", "ids": ["-1"], "tag_name": "x"},
        {"action": "tag", "ids": ["1e9"], "tag_name": "x"},
        {"action": "tag", "ids": ["9" * 30], "tag_name": "x"},
        {"action": "tag", "tag_name": "x"},
        {"action": "tag", "ids": ["1"], "tag_name": "x" * 500},
        {"action": "untag", "ids": ["1"]},
        {"action": "tag", "scope": "all", "filters": "origin=martian", "tag_name": "x"},
        {"action": "tag", "scope": "all", "filters": "x" * 3000, "tag_name": "x"},
        {"action": "withdraw", "ids": ["1"], "reason": ""},
    ],
)
def test_bad_bulk_requests_change_nothing_and_say_why(
    lawyer: User, lawyer_client: Client, case: Case, data: dict[str, Any]
) -> None:
    _doc(case, lawyer, "a.pdf")

    response = lawyer_client.post(f"/cases/{case.pk}/documents/bulk/", data)

    assert response.status_code == 302
    assert _messages(response)
    assert not Tag.objects.exists()
    assert not Document.objects.filter(withdrawn_at__isnull=False).exists()


def test_too_many_ids_in_one_bulk_request_are_refused(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    d = _doc(case, lawyer, "a.pdf")
    ids = [str(n) for n in range(1, 10_002)]

    response = lawyer_client.post(
        f"/cases/{case.pk}/documents/bulk/", {"action": "tag", "ids": ids, "tag_name": "x"}
    )

    assert response.status_code == 400  # Django's DATA_UPLOAD_MAX_NUMBER_FIELDS, before us
    with pytest.raises(DomainError, match="at most 10,000 documents"):
        review_services.documents_tag(
            actor=lawyer, case=case, document_ids=[d.pk, *range(10**6, 10**6 + 10_000)], name="x"
        )
    assert not Tag.objects.exists()


# --- withdraw and restore ----------------------------------------------------------------------


def test_withdrawn_document_leaves_lists_search_and_new_packets_and_comes_back(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    from apps.evidence.services import packets as packet_services

    wrong = _doc(case, lawyer, "wrong-case.pdf")
    _page(wrong, "ledger of the other matter")
    blob_id = wrong.blob_id

    response = lawyer_client.post(
        f"/cases/{case.pk}/documents/bulk/",
        {"action": "withdraw", "ids": [wrong.pk], "reason": "uploaded to the wrong case"},
    )

    assert response.status_code == 302
    wrong.refresh_from_db()
    assert wrong.withdrawn_at is not None and wrong.withdrawn_reason == "uploaded to the wrong case"
    assert Blob.objects.filter(pk=blob_id).exists()  # the original is kept
    assert _names(lawyer, case) == []
    assert (
        "wrong-case.pdf" not in lawyer_client.get(f"/cases/{case.pk}/documents/").content.decode()
    )
    assert selectors.document_list_for_user(user=lawyer, case_id=case.pk).count() == 0
    assert selectors.document_choices_for_user(user=lawyer, case_id=case.pk) == []
    assert list(selectors.page_search_for_user(user=lawyer, case_id=case.pk, query="ledger")) == []
    packet = packet_services.packet_create(user=lawyer, case_id=case.pk, title="Exhibits")
    with pytest.raises(DomainError):
        packet_services.packet_items_add(
            user=lawyer,
            case_id=case.pk,
            packet_id=packet.pk,
            selections=[packet_services.Selection(document_id=wrong.pk, reason="exhibit")],
        )
    withdrawn_page = lawyer_client.get(f"/cases/{case.pk}/documents/?withdrawn=yes").content
    assert b"wrong-case.pdf" in withdrawn_page and b"uploaded to the wrong case" in withdrawn_page
    event = AuditEvent.objects.get(action="document.withdraw")
    assert (event.target_id, event.detail) == (
        str(wrong.pk),
        {"reason": "uploaded to the wrong case"},
    )

    restored = lawyer_client.post(f"/cases/{case.pk}/documents/{wrong.pk}/restore/")

    assert restored.status_code == 302
    assert "wrong-case.pdf is back in the case." in _messages(restored)
    assert _names(lawyer, case) == ["wrong-case.pdf"]
    assert len(selectors.page_search_for_user(user=lawyer, case_id=case.pk, query="ledger")) == 1
    assert AuditEvent.objects.get(action="document.restore").detail == {
        "withdrawn_for": "uploaded to the wrong case"
    }


def test_a_document_in_a_frozen_packet_cannot_be_withdrawn(lawyer: User, case: Case) -> None:
    d = _doc(case, lawyer, "exhibit.pdf")
    other = _doc(case, lawyer, "fine.pdf")
    _frozen_packet_with(case, lawyer, d)

    with pytest.raises(Conflict, match="frozen packet"):
        review_services.documents_withdraw(
            actor=lawyer, case=case, document_ids=[other.pk, d.pk], reason="wrong"
        )
    assert not Document.objects.filter(withdrawn_at__isnull=False).exists()  # all or none
    assert not AuditEvent.objects.filter(action="document.withdraw").exists()


def test_a_produced_document_or_a_volume_cannot_be_withdrawn(lawyer: User, case: Case) -> None:
    d = _doc(case, lawyer, "produced.pdf")
    production = _produce(case, lawyer, d)
    volume = _doc(case, lawyer, "VOL.pdf")
    Production.objects.filter(pk=production.pk).update(volume_document=volume)

    with pytest.raises(Conflict, match="in production"):
        review_services.documents_withdraw(actor=lawyer, case=case, document_ids=[d.pk], reason="x")
    with pytest.raises(Conflict, match="volume"):
        review_services.documents_withdraw(
            actor=lawyer, case=case, document_ids=[volume.pk], reason="x"
        )


def test_a_withdrawn_document_is_not_produced(lawyer: User, case: Case) -> None:
    from apps.documents import production_services

    d = _doc(case, lawyer, "wrong.pdf")
    review_services.documents_withdraw(actor=lawyer, case=case, document_ids=[d.pk], reason="oops")

    with pytest.raises(DomainError, match="was withdrawn"):
        production_services.production_create(
            actor=lawyer, case=case, document_ids=[d.pk], volume="V1", prefix="ACME"
        )
    assert not Production.objects.exists()


def test_withdraw_twice_restore_a_present_one_and_bad_reasons_are_refused(
    lawyer: User, case: Case
) -> None:
    d = _doc(case, lawyer, "a.pdf")
    for reason in ("", "   ", "x" * 1001):
        with pytest.raises(DomainError):
            review_services.documents_withdraw(
                actor=lawyer, case=case, document_ids=[d.pk], reason=reason
            )
    with pytest.raises(Conflict, match="not withdrawn"):
        review_services.document_restore(actor=lawyer, case=case, document_id=d.pk)
    review_services.documents_withdraw(
        actor=lawyer, case=case, document_ids=[d.pk], reason="a\x00b"
    )
    d.refresh_from_db()
    assert d.withdrawn_reason == "a b"
    with pytest.raises(Conflict, match="already withdrawn"):
        review_services.documents_withdraw(actor=lawyer, case=case, document_ids=[d.pk], reason="y")


def test_restore_of_unknown_or_huge_ids_is_a_message(lawyer_client: Client, case: Case) -> None:
    for document_id in ("987654321", str(2**70)):
        response = lawyer_client.post(f"/cases/{case.pk}/documents/{document_id}/restore/")
        assert response.status_code == 302
        assert _messages(response)


# --- membership --------------------------------------------------------------------------------


def test_outsider_gets_404_and_changes_nothing(
    lawyer: User, outsider_client: Client, case: Case
) -> None:
    d = _doc(case, lawyer, "a.pdf")
    review_services.documents_withdraw(actor=lawyer, case=case, document_ids=[d.pk], reason="x")
    other = _doc(case, lawyer, "b.pdf")

    responses = [
        outsider_client.get(f"/cases/{case.pk}/documents/?withdrawn=yes"),
        outsider_client.post(
            f"/cases/{case.pk}/documents/bulk/",
            {"action": "tag", "ids": [other.pk], "tag_name": "mine"},
        ),
        outsider_client.post(
            f"/cases/{case.pk}/documents/bulk/",
            {"action": "withdraw", "ids": [other.pk], "reason": "x"},
        ),
        outsider_client.post(f"/cases/{case.pk}/documents/{d.pk}/restore/"),
    ]

    for response in responses:
        assert response.status_code == 404
        assert "a.pdf" not in response.content.decode()
    assert not Tag.objects.exists()
    other.refresh_from_db()
    d.refresh_from_db()
    assert other.withdrawn_at is None and d.withdrawn_at is not None
    with pytest.raises(NotFound):
        selectors.document_review_page_for_user(
            user=User.objects.get(email="outsider@firm.test"),
            case_id=case.pk,
            query=DocumentListQuery(),
        )


def test_bulk_and_restore_refuse_get(lawyer: User, lawyer_client: Client, case: Case) -> None:
    d = _doc(case, lawyer, "a.pdf")

    assert lawyer_client.get(f"/cases/{case.pk}/documents/bulk/").status_code == 405
    assert lawyer_client.get(f"/cases/{case.pk}/documents/{d.pk}/restore/").status_code == 405


# --- bulk "add to a packet" and "produce" through their own services ---------------------------


def test_bulk_add_to_a_packet_uses_the_packets_rules(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    from apps.evidence.services import packets as packet_services

    a, b = (_doc(case, lawyer, f"{n}.pdf", provenance="clear") for n in "ab")
    for d in (a, b):
        _page(d, "text")
    packet = packet_services.packet_create(user=lawyer, case_id=case.pk, title="Exhibits")
    frozen = _frozen_packet_with(case, lawyer, _doc(case, lawyer, "c.pdf"))

    page = lawyer_client.get(f"/cases/{case.pk}/documents/").content.decode()
    response = lawyer_client.post(
        f"/cases/{case.pk}/documents/bulk/",
        {"action": "packet", "ids": [a.pk, b.pk], "packet": packet.pk, "packet_reason": "exhibits"},
    )
    refused = lawyer_client.post(
        f"/cases/{case.pk}/documents/bulk/",
        {"action": "packet", "ids": [a.pk], "packet": frozen.pk, "packet_reason": "x"},
    )

    assert f'<option value="{packet.pk}">Exhibits v1</option>' in page
    assert f'<option value="{frozen.pk}"' not in page  # only editable packets are offered
    assert "Added 2 to the packet." in _messages(response)
    assert list(
        PacketItem.objects.filter(packet=packet)
        .order_by("order")
        .values_list("document_id", "reason")
    ) == [(b.pk, "exhibits"), (a.pk, "exhibits")]  # the list's order: newest first
    assert "Select a valid choice" in " ".join(_messages(refused))
    assert PacketItem.objects.filter(packet=frozen).count() == 1


def test_bulk_produce_goes_on_to_the_new_production_page_which_says_why_not(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    a = _doc(case, lawyer, "a.pdf")
    _page(a, "text")
    text = _doc(case, lawyer, "notes.txt", kind="text", content_type="text/plain")
    bulk = f"/cases/{case.pk}/documents/bulk/"

    response = lawyer_client.post(
        bulk, {"action": "produce", "ids": [text.pk, a.pk], "volume": "V1", "bates_prefix": "ACME"}
    )
    page = lawyer_client.get(response["Location"]).content.decode()
    refused = lawyer_client.post(
        f"/cases/{case.pk}/productions/new/",
        {
            "documents": f"{text.pk},{a.pk}",
            "volume": "V1",
            "bates_prefix": "ACME",
            "digits": "6",
            "position": "bottom_right",
            "legend_position": "bottom_left",
            "font_size": "9",
            "margin": "18",
            "op": "commit",
        },
    )

    # Nothing is made by the bulk action: the page orders, stamps and previews first.
    assert response.status_code == 302
    assert response["Location"].startswith(f"/cases/{case.pk}/productions/new/?")
    assert 'value="V1"' in page and 'value="ACME"' in page
    assert page.index(f'data-document-id="{text.pk}"') < page.index(f'data-document-id="{a.pk}"')
    assert refused.status_code == 400 and "notes.txt" in refused.content.decode()
    assert not Production.objects.exists()


def test_the_plain_list_shows_its_defaults_in_the_filter_form(
    lawyer_client: Client, case: Case
) -> None:
    html = lawyer_client.get(f"/cases/{case.pk}/documents/").content.decode()

    assert '<option value="100" selected>100</option>' in html
    assert '<option value="-added" selected>Newest first</option>' in html


def test_a_document_in_an_editable_packet_is_taken_out_before_withdrawing(
    lawyer: User, case: Case
) -> None:
    d = _doc(case, lawyer, "draft-exhibit.pdf")
    packet = Packet.objects.create(case=case, title="Being built", created_by=lawyer)
    PacketItem.objects.create(packet=packet, document=d, order=1, reason="x", added_by=lawyer)

    with pytest.raises(Conflict, match="take it out of the packet first"):
        review_services.documents_withdraw(actor=lawyer, case=case, document_ids=[d.pk], reason="x")
    d.refresh_from_db()
    assert d.withdrawn_at is None


def test_column_headers_sort_and_flip_keeping_the_filters(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    _doc(case, lawyer, "a.pdf", origin="opposing")

    plain = lawyer_client.get(f"/cases/{case.pk}/documents/?origin=opposing").content.decode()
    by_name = lawyer_client.get(
        f"/cases/{case.pk}/documents/?origin=opposing&sort=name"
    ).content.decode()

    assert (
        '<th data-col="added" scope="col" aria-sort="descending">'
        '<a href="?origin=opposing&amp;sort=added">' in plain
    )
    assert '<a href="?origin=opposing&amp;sort=name">File</a>' in plain
    assert (
        '<th scope="col" aria-sort="ascending"><a href="?origin=opposing&amp;sort=-name">'
        in by_name
    )


def test_the_filter_pane_opens_only_with_a_filter_and_every_column_is_drawn(
    lawyer: User, lawyer_client: Client, case: Case
) -> None:
    _doc(case, lawyer, "a.pdf", custodian="Jane Roe")
    documents = f"/cases/{case.pk}/documents/"

    plain = lawyer_client.get(documents).content.decode()
    by_name = lawyer_client.get(f"{documents}?sort=name&per_page=50").content.decode()
    filtered = lawyer_client.get(f"{documents}?custodian=Jane+Roe&kind=pdf").content.decode()
    refused = lawyer_client.get(f"{documents}?kind=exe").content.decode()

    # Closed without a filter (a sort or a page size is not one), open with one or a refusal.
    assert '<details class="list-filters-pane">' in plain
    assert '<details class="list-filters-pane">' in by_name
    assert '<details class="list-filters-pane" open>' in filtered and "2 active" in filtered
    assert '<details class="list-filters-pane" open>' in refused
    # The column chooser hides columns in the browser: the server draws every one.
    for column in ("kind", "origin", "custodian", "provenance", "status", "pages", "bates"):
        assert f'<th data-col="{column}" scope="col"' in plain
        assert f'value="{column}" data-column' in plain
    # The bulk actions' toolbar and each action's group, the plain form's Apply for no script.
    assert "data-bulk-toolbar hidden" in plain
    for action in ("tag", "untag", "packet", "produce", "withdraw"):
        assert f'data-bulk-action="{action}"' in plain
    assert plain.count("data-confirm=") == 2  # withdrawing and the plain Apply; not tagging
