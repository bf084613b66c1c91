"""A frozen packet's index kept between runs (apps.verification.index_cache): the stored form
decodes to the same index; a stored index is used only for its packet, of its case, with its
content hash and format, when its bytes are intact; anything else is rebuilt and stored again;
freezing a packet queues the job that prepares it."""

import hashlib
import logging
from collections.abc import Callable
from typing import Any

import pytest
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.evidence.models import FrozenPage, Packet, PacketIndexCache
from apps.verification import index_cache, services
from apps.verification.checks import verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord
from apps.verification.index_cache import IndexCacheError, decode, encode
from apps.verification.models import Finding, Verification
from lexweb.errors import DomainError
from tests.drafting.makers import draft_of, packet_of, read_pdf

RECORD = ["The tenant paid $12,450.00 on March 3, 2024.", "Signed at Springfield."]
DRAFT = "The tenant paid USD 12,450 on 03/03/2024. The landlord then paid $99.00 on June 9, 2021."
HASH = "c" * 64


def _page(position: int, text: str, *, source: str = "text_layer") -> PageRecord:
    return PageRecord(
        position=position,
        document_id=1 + (position - 1) // 3,
        filename="record.pdf",
        page_number=position,
        bates=(f"QRS-{position:06d}",),
        text=text,
        source=source,
        ocr_confidence=80.0 if source == "ocr" else None,
        origin="client",
    )


PAGES = [
    _page(1, "Lease of 3 March 2024 between Acme and Brill.\nRent $1,250.00 monthly."),
    _page(2, "The tenant paid USD 12,450 on 03/03/2024 | swear it.", source="ocr"),
    _page(3, "Balance 216,000.00 as of 2O23-11-O8.\nNon-cancel-\nlable terms.", source="ocr"),
    _page(4, ""),
    _page(5, "“Curly” quotes — and dashes; Borrower's covenants were breached."),
]


def _round_trip(pages: list[PageRecord]) -> tuple[PacketIndex, PacketIndex]:
    built = PacketIndex.build(pages)
    data = encode(built, packet_id=9, content_hash=HASH)
    return built, decode(data, pages=pages, packet_id=9, content_hash=HASH)


# --- The stored form (no database) -----------------------------------------------------------


def test_a_decoded_index_holds_what_the_built_one_holds_page_by_page_and_term_by_term() -> None:
    built, loaded = _round_trip(PAGES)

    assert len(loaded.stems) == len(built.stems) == len(PAGES)
    assert [loaded.stems[i] for i in range(len(PAGES))] == list(built.stems)
    every = set().union(*built.stems)
    for i, stems in enumerate(built.stems):
        assert {t for t in every if t in loaded.stems[i]} == stems  # looked up, not iterated
        assert "nosuchword" not in loaded.stems[i] and 7 not in loaded.stems[i]
    assert dict(loaded.postings.items()) == built.postings
    assert [loaded.dates[i] for i in range(len(PAGES))] == list(built.dates)
    assert [loaded.amounts[i] for i in range(len(PAGES))] == list(built.amounts)
    assert dict(loaded.date_pages.items()) == built.date_pages
    assert dict(loaded.amount_pages.items()) == built.amount_pages
    assert loaded.bates == built.bates
    assert loaded.value_pages("date", "2023-11-08") == [2]  # OCR look-alikes read as digits
    assert loaded.ocr_pages_with_term("tenant") == built.ocr_pages_with_term("tenant") == [1]
    assert loaded.pages_with_term("nosuchword") == ()


def test_a_decoded_index_gives_the_checks_the_same_findings() -> None:
    built, loaded = _round_trip(PAGES)
    text = (
        "The tenant paid USD 12,450 on March 3, 2024 (QRS-000002). Rent was $1,250 "
        '(QRS-000001), and "the Borrower\'s covenants were breached" (QRS-000005); '
        "$99.00 was paid on June 9, 2021 (QRS-000009)."
    )
    claims = extract_claims(text, bates_prefixes=["QRS-"])

    def shown(index: PacketIndex) -> list[tuple[object, ...]]:
        return [
            (f.claim.start, f.status, f.check, f.message, f.match, f.excerpt)
            for f in verify_text(text, claims, index)
        ]

    assert shown(loaded) == shown(built)
    assert {s for _, s, *_ in shown(loaded)} >= {"supported", "unsupported"}


def _header_swapped(data: bytes, old: bytes, new: bytes) -> bytes:
    assert old in data and len(old) == len(new)  # the header keeps its length
    return data.replace(old, new, 1)


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (lambda d: d[: len(d) // 2], "header is not JSON|cut short"),
        (lambda d: b"not an index at all", "does not start as a stored index"),
        (lambda d: b"lexweb-packet-index\n\x00\x00\x00\x09{not json", "header is not JSON"),
        (lambda d: b"lexweb-packet-index\n\x00\x00\x00\x02{}", "not an index's"),
        (lambda d: d + b"\x00\x00", "bytes follow"),
        (lambda d: d[:-2], "cut short"),
        (lambda d: _header_swapped(d, b'"format":"2:', b'"format":"1:'), "format is"),
        (lambda d: _header_swapped(d, b'"packet":9', b'"packet":8'), "packet is"),
        (lambda d: _header_swapped(d, b'"pages":5', b'"pages":4'), "pages, the packet 5"),
    ],
)
def test_a_spoilt_stored_index_is_refused_with_the_reason(
    spoil: Callable[[bytes], bytes], says: str
) -> None:
    data = encode(PacketIndex.build(PAGES), packet_id=9, content_hash=HASH)

    with pytest.raises(IndexCacheError, match=says):
        decode(spoil(data), pages=PAGES, packet_id=9, content_hash=HASH)


def test_an_index_of_other_pages_or_another_hash_is_refused() -> None:
    data = encode(PacketIndex.build(PAGES), packet_id=9, content_hash=HASH)
    shorter = [PageRecord(**{**vars(p), "text": p.text[:10]}) for p in PAGES]

    with pytest.raises(IndexCacheError, match="span is outside its page's text"):
        decode(data, pages=shorter, packet_id=9, content_hash=HASH)
    with pytest.raises(IndexCacheError, match="content_hash is"):
        decode(data, pages=PAGES, packet_id=9, content_hash="d" * 64)
    with pytest.raises(IndexCacheError, match="pages, the packet 4"):
        decode(data, pages=PAGES[:4], packet_id=9, content_hash=HASH)


def test_the_format_names_the_code_that_decides_what_an_index_holds() -> None:
    version, digest = index_cache.INDEX_FORMAT.split(":")
    assert version == str(index_cache.FORMAT) and len(digest) == 16
    assert len(index_cache.INDEX_FORMAT) <= 64  # PacketIndexCache.format_version


# --- Stored, found, refused (real database) --------------------------------------------------


@pytest.fixture
def draft(lawyer: User, case: Case) -> Any:
    document = read_pdf(case=case, user=lawyer, lines=RECORD)
    packet = packet_of(case=case, user=lawyer, documents=[document])
    return draft_of(case=case, user=lawyer, packet=packet, text=DRAFT)


def _inputs(packet: Packet) -> tuple[list[FrozenPage], list[PageRecord]]:
    pages = list(
        FrozenPage.objects.filter(packet=packet).select_related("document").order_by("position")
    )
    return pages, [services.page_record(page) for page in pages]


def _get(packet: Packet, *, case_id: int | None = None) -> PacketIndex:
    pages, records = _inputs(packet)
    return index_cache.packet_index_for(
        case_id=packet.case_id if case_id is None else case_id,
        packet_id=packet.pk,
        pages=pages,
        records=records,
    )


def _loaded(index: PacketIndex) -> bool:
    """True for an index decoded from its stored form (its stems are decoded page by page)."""
    return isinstance(index.stems[0], index_cache.TermRow)


def _row(packet: Packet) -> PacketIndexCache:
    return PacketIndexCache.objects.get(packet=packet)


@pytest.mark.django_db
def test_a_miss_builds_and_stores_the_index_and_the_next_run_loads_it(draft: Any) -> None:
    PacketIndexCache.objects.filter(packet=draft.packet).delete()

    first = _get(draft.packet)

    assert not _loaded(first)
    row = _row(draft.packet)
    assert (row.content_hash, row.format_version) == (
        draft.packet.content_hash,
        index_cache.INDEX_FORMAT,
    )
    assert row.data_sha256 == hashlib.sha256(bytes(row.data)).hexdigest()
    assert row.size == len(bytes(row.data)) > 0
    second = _get(draft.packet)
    assert _loaded(second)
    assert second.value_pages("amount", "1245000") == first.value_pages("amount", "1245000") == [0]
    assert _row(draft.packet).pk == row.pk  # used, not rebuilt


@pytest.mark.django_db
def test_prepare_stores_once_and_the_verification_run_uses_the_stored_index(
    lawyer: User, draft: Any
) -> None:
    PacketIndexCache.objects.filter(packet=draft.packet).delete()
    index_cache.packet_index_prepare(packet_id=draft.packet_id)
    row = _row(draft.packet)
    index_cache.packet_index_prepare(packet_id=draft.packet_id)  # sound: left alone
    assert _row(draft.packet).pk == row.pk
    verification = services.verification_request(
        user=lawyer, case_id=draft.case_id, draft_id=draft.pk, number=1
    )

    services.verification_run(verification_id=verification.pk)

    verification.refresh_from_db()
    assert verification.status == Verification.Status.DONE, verification.error
    statuses = dict(Finding.objects.filter(verification=verification).values_list("text", "status"))
    assert statuses["USD 12,450"] == statuses["03/03/2024"] == Finding.Status.SUPPORTED
    assert statuses["$99.00"] in Finding.BLOCKING and statuses["June 9, 2021"] in Finding.BLOCKING
    assert list(PacketIndexCache.objects.filter(packet=draft.packet)) == [row]


@pytest.mark.django_db
def test_a_stale_format_or_hash_is_never_used_and_is_replaced(draft: Any) -> None:
    _get(draft.packet)
    PacketIndexCache.objects.filter(packet=draft.packet).update(format_version="0:older")

    assert not _loaded(_get(draft.packet))
    assert _row(draft.packet).format_version == index_cache.INDEX_FORMAT  # the stale one gone
    PacketIndexCache.objects.filter(packet=draft.packet).update(content_hash="e" * 64)
    assert not _loaded(_get(draft.packet))
    assert _row(draft.packet).content_hash == draft.packet.content_hash


def _store_bytes(packet: Packet, data: bytes, *, sha: str | None = None) -> None:
    PacketIndexCache.objects.filter(packet=packet).update(
        data=data, data_sha256=sha or hashlib.sha256(data).hexdigest(), size=len(data)
    )


@pytest.mark.django_db
def test_a_corrupt_blob_is_rebuilt_with_a_warning_not_an_error(
    draft: Any, caplog: pytest.LogCaptureFixture
) -> None:
    _get(draft.packet)
    data = bytes(_row(draft.packet).data)
    _pages, records = _inputs(draft.packet)
    expected = PacketIndex.build(records).value_pages("date", "2024-03-03")
    spoilt = [
        (data[:-7] + b"garbage", hashlib.sha256(data).hexdigest()),  # bytes changed under it
        (data[:-4], None),  # intact bytes of a broken index
    ]
    for bad, sha in spoilt:
        _store_bytes(draft.packet, bad, sha=sha)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="apps.verification.index_cache"):
            got = _get(draft.packet)
        assert not _loaded(got) and got.value_pages("date", "2024-03-03") == expected
        assert "unusable" in caplog.text and "building it again" in caplog.text
        row = _row(draft.packet)  # stored again, sound
        assert row.data_sha256 == hashlib.sha256(bytes(row.data)).hexdigest()
        assert _loaded(_get(draft.packet))


@pytest.mark.django_db
def test_the_index_of_another_cases_packet_is_never_served(
    lawyer: User, outsider: User, case: Case, other_case: Case, draft: Any
) -> None:
    theirs_doc = read_pdf(case=other_case, user=outsider, lines=["Their secret: $777.00 paid."])
    theirs = packet_of(case=other_case, user=outsider, documents=[theirs_doc])
    _get(theirs)
    foreign = bytes(_row(theirs).data)
    _get(draft.packet)
    # Their index, filed under our packet with our hash and a matching checksum.
    _store_bytes(draft.packet, foreign)

    ours = _get(draft.packet)

    assert not _loaded(ours)
    assert ours.value_pages("amount", "77700") == ()
    assert ours.value_pages("amount", "1245000") == [0]
    # Asked for our packet as if it were of their case: not found there, built, nothing stored.
    PacketIndexCache.objects.filter(packet=draft.packet).delete()
    assert not _loaded(_get(draft.packet, case_id=other_case.pk))
    assert not PacketIndexCache.objects.filter(packet=draft.packet).exists()


@pytest.mark.django_db
def test_prepare_leaves_a_missing_or_editable_packet_alone(lawyer: User, case: Case) -> None:
    document = read_pdf(case=case, user=lawyer, lines=RECORD)
    editable = packet_of(case=case, user=lawyer, documents=[document], freeze=False)

    index_cache.packet_index_prepare(packet_id=editable.pk)
    index_cache.packet_index_prepare(packet_id=2**62)

    assert not PacketIndexCache.objects.exists()


def test_freezing_queues_index_prepare_and_a_real_worker_stores_the_index(
    lawyer: User, case: Case, run_jobs: Callable[[], None]
) -> None:
    document = read_pdf(case=case, user=lawyer, lines=RECORD)

    packet = packet_of(case=case, user=lawyer, documents=[document])

    job = ProcrastinateJob.objects.get(
        task_name="verification.index_prepare", args={"packet_id": packet.pk}
    )
    assert (job.queue_name, job.status) == ("cpu", "todo")
    assert not PacketIndexCache.objects.filter(packet=packet).exists()
    run_jobs()
    job.refresh_from_db()
    assert job.status == "succeeded"
    row = _row(packet)
    assert (row.content_hash, row.format_version) == (packet.content_hash, index_cache.INDEX_FORMAT)
    assert _loaded(_get(packet))


@pytest.mark.django_db
@pytest.mark.parametrize("bad", ["7", None, True, 1.5, [1]])
def test_the_task_refuses_an_argument_that_is_no_id(bad: object) -> None:
    from apps.verification.tasks import packet_index_prepare_task

    with pytest.raises(DomainError, match="packet_id must be int"):
        packet_index_prepare_task(packet_id=bad)  # type: ignore[arg-type]  # the point
    assert not PacketIndexCache.objects.exists()
