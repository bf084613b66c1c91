"""Page-suffix Bates numbers (issue 28 req 8): a production that numbers documents, not pages,
stamps every page of a document with the document's one number and a page suffix, a dot and
1-6 digits ("RVK0000101.0001", ".0002", ...). A record cite may carry the suffix; it names the
page stamped with that full label. A range of suffixed numbers ("RVK0000101.0002-.0004",
"RVK0000101.0002-RVK0000101.0004") names its pages one by one; a number without a suffix names
its whole document; a suffix past the document's pages names no page, and the finding says so.
The pages and sentences here are written from those rules."""

import pytest

from apps.verification.checks import verify_text
from apps.verification.claims import BatesRef, extract_claims
from apps.verification.index import PacketIndex, PageRecord, bates_key, split_label

PAGES = [
    # document 101: four pages, one fact on each
    "Board minutes. Quorum present; the chair Imelda Voss opened the meeting at noon.",
    "The treasurer Osric Blane reported a shortfall in the escrow reserve.",
    "The board voted to suspend the dividend until the reserve was restored.",
    "Adjourned. Minutes approved by the secretary Petra Lindqvist.",
    # document 102: two pages
    "Email from Halvard Quist: the auditor asked for the escrow ledger by Friday.",
    "Reply from Imelda Voss: the ledger will be sent with the bank confirmations.",
]


def _index() -> PacketIndex:
    layout = [(101, 1), (101, 2), (101, 3), (101, 4), (102, 1), (102, 2)]
    pages = [
        PageRecord(
            position=i + 1,
            document_id=number,
            filename=f"opp-{number}.pdf",
            page_number=page,
            bates=(f"RVK{number:07d}.{page:04d}",),
            text=text,
            source="text_layer",
            ocr_confidence=None,
            origin="client",
        )
        for i, ((number, page), text) in enumerate(zip(layout, PAGES, strict=True))
    ]
    # and one page of an ordinary production (one number a page) in the same packet
    pages.append(
        PageRecord(
            7,
            7,
            "ours.pdf",
            1,
            ("ORD000050",),
            "The lease was signed by Imelda Voss.",
            "text_layer",
            None,
            "client",
        )
    )
    return PacketIndex.build(pages)


INDEX = _index()


def _findings(text: str):
    claims = extract_claims(text, bates_prefixes=["RVK", "ORD"])
    return [f for f in verify_text(text, claims, INDEX) if f.claim.kind == "record_cite"]


@pytest.mark.parametrize(
    ("label", "parts", "key"),
    [
        ("RVK0000101.0002", ("RVK", "0000101", "0002"), ("RVK", 101)),
        ("RVK 0000101.0002", ("RVK", "0000101", "0002"), ("RVK", 101)),
        ("RVK-0000101.000002", ("RVK", "0000101", "000002"), ("RVK", 101)),
        ("RVK0000101", ("RVK", "0000101", None), ("RVK", 101)),
        ("ABC.000123", ("ABC", "000123", None), ("ABC", 123)),  # a dot after the prefix
        ("ABC-01-000123", ("ABC-01", "000123", None), ("ABC01", 123)),  # no dot: no suffix
    ],
)
def test_a_label_splits_into_prefix_number_and_page_suffix(label, parts, key) -> None:
    assert split_label(label) == parts
    assert bates_key(label) == key


@pytest.mark.parametrize(
    ("cite", "ref"),
    [
        ("RVK0000101.0002", BatesRef("RVK", 101, 101, 7, 2, 2, 4)),
        ("RVK 0000101.2", BatesRef("RVK", 101, 101, 7, 2, 2, 1)),
        ("RVK0000101.0002-.0004", BatesRef("RVK", 101, 101, 7, 2, 4, 4)),
        ("RVK0000101.0002-0004", BatesRef("RVK", 101, 101, 7, 2, 4, 4)),
        ("RVK0000101.0002-RVK0000101.0004", BatesRef("RVK", 101, 101, 7, 2, 4, 4)),
        ("RVK0000101.0003 \u2013 RVK0000102.0001", BatesRef("RVK", 101, 102, 7, 3, 1, 4)),
        ("RVK0000101", BatesRef("RVK", 101, 101, 7)),
    ],
)
def test_a_record_cite_carries_its_page_suffix_and_range(cite, ref) -> None:
    (claim,) = [
        c
        for c in extract_claims(f"See it ({cite}).", bates_prefixes=["RVK"])
        if c.kind == "record_cite"
    ]
    assert claim.text == cite
    assert claim.bates == (ref,)


def test_a_suffixed_cite_resolves_to_the_page_stamped_with_that_full_label() -> None:
    (finding,) = _findings(
        "Osric Blane reported a shortfall in the escrow reserve (RVK0000101.0002)."
    )

    assert finding.status == "supported"
    assert finding.page is not None and finding.page.bates == ("RVK0000101.0002",)


def test_a_suffixed_cite_to_the_neighbouring_page_of_its_document_is_not_supported() -> None:
    (finding,) = _findings(
        "Osric Blane reported a shortfall in the escrow reserve (RVK0000101.0004)."
    )

    assert finding.status != "supported"
    assert "RVK0000101.0002" in finding.message


@pytest.mark.parametrize(
    "cite", ["RVK0000101.0002-.0004", "RVK0000101.0002-RVK0000101.0004", "RVK0000101.0002-0004"]
)
def test_a_range_of_suffixed_numbers_resolves_page_by_page(cite: str) -> None:
    text = f"The board voted to suspend the dividend until the reserve was restored ({cite})."
    claims = [c for c in extract_claims(text, bates_prefixes=["RVK"]) if c.kind == "record_cite"]
    found, missing = INDEX.bates_indexes(claims[0].bates[0])

    assert [INDEX.pages[i].bates[0] for i in found] == [
        "RVK0000101.0002",
        "RVK0000101.0003",
        "RVK0000101.0004",
    ]
    assert missing == []
    (finding,) = _findings(text)
    assert finding.status == "supported"


def test_a_range_across_documents_runs_from_its_first_page_to_its_last() -> None:
    ref = BatesRef("RVK", 101, 102, 7, 4, 1, 4)

    found, missing = INDEX.bates_indexes(ref)

    assert [INDEX.pages[i].bates[0] for i in found] == ["RVK0000101.0004", "RVK0000102.0001"]
    assert missing == []


def test_a_number_without_a_suffix_names_its_whole_document() -> None:
    (finding,) = _findings(
        "Imelda Voss said the ledger will be sent with the bank confirmations (RVK0000102)."
    )

    assert finding.status == "supported"
    assert finding.page is not None and finding.page.bates == ("RVK0000102.0002",)


def test_a_suffix_past_the_documents_pages_is_unsupported_with_the_reason() -> None:
    (finding,) = _findings("Petra Lindqvist approved the minutes (RVK0000101.0009).")

    assert finding.status == "unsupported"
    assert finding.check == "bates_in_packet"
    assert "page .0009 of RVK0000101, which has 4 pages" in finding.message
    assert "not a Bates prefix" not in finding.message


def test_a_range_running_past_the_documents_pages_is_unsupported() -> None:
    (finding,) = _findings("Petra Lindqvist approved the minutes (RVK0000101.0003-.0012).")

    assert finding.status == "unsupported"
    assert "page .0012 of RVK0000101, which has 4 pages" in finding.message


def test_a_suffix_on_a_number_of_another_document_count_is_checked_against_that_one() -> None:
    (finding,) = _findings("Imelda Voss replied about the ledger (RVK0000102.0003).")

    assert finding.status == "unsupported"
    assert "page .0003 of RVK0000102, which has 2 pages" in finding.message


def test_a_suffixed_number_that_is_not_in_the_packet_is_out_of_range() -> None:
    (finding,) = _findings("Imelda Voss replied about the ledger (RVK0000180.0001).")

    assert finding.status == "unsupported"
    assert "not in the packet" in finding.message
    assert "RVK0000101.0001-RVK0000102.0002" in finding.message  # the production's first and last


def test_a_suffix_on_a_number_stamped_without_suffixes() -> None:
    first = _findings("The lease was signed by Imelda Voss (ORD000050.1).")
    other = _findings("The lease was signed by Imelda Voss (ORD000050.0002).")

    assert first[0].status == "supported"  # a one-page number's page 1 is itself
    assert other[0].status == "unsupported"
    assert "page .0002 of ORD000050" in other[0].message


@pytest.mark.parametrize(
    "text",
    [
        "Voss spoke (RVK0000101.).",
        "Voss spoke (RVK0000101.0000001).",  # seven digits: no page suffix
        "Voss spoke (RVK0000101.0000).",
        "Voss spoke (RVK0000101.999999-.000001).",
        "Voss spoke (RVK0000101.0002-.).",
    ],
)
def test_odd_suffixes_give_a_finding_never_a_crash(text: str) -> None:
    claims = extract_claims(text, bates_prefixes=["RVK"])
    results = verify_text(text, claims, INDEX)

    assert [r.claim.kind for r in results if r.claim.kind == "record_cite"]
    assert all(r.message for r in results)
