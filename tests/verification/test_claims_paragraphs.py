"""Paragraph pins of record cites ("KTR-0012345 ¶ 3", "¶¶ 4-6", "Compl. ¶ 4") checked against the
numbered paragraphs of the cited pages, on drafts and packets of our own (a 7-digit prefix with a
hyphen, OCR pages, pilcrow markers, non-breaking spaces, paragraphs over a page break)."""

from __future__ import annotations

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord
from apps.verification.paragraphs import paragraph_numbers, paragraphs_of

PREFIX = "KTR-"

LEASE_1 = """GROUND LEASE
This Ground Lease is made between Oriel Basin Holdings and Tamsin Crofts Bakery.
1. PREMISES. Landlord leases to Tenant the parcel at 14 Wharf Lane, Port Ellery.
2. RENT. Tenant shall pay base rent of $3,900.00 per month, due on the fifth day of each
month, without setoff or deduction.
3. INSURANCE. Tenant shall insure the building against fire and flood for its full
replacement value and name Landlord as an additional insured.
4. REPAIRS. Landlord shall repair the roof, the foundation and the structural walls.
5. ASSIGNMENT. Tenant shall not assign this lease or sublet the parcel without Landlord's
written consent, which Landlord may withhold
Ground Lease - Page 1 of 2"""
LEASE_2 = """in its sole discretion for any bakery competitor or franchise.
6. HOLDOVER. A tenant holding over after expiry pays double rent for each month.
Ground Lease - Page 2 of 2"""
OCR_MINUTES = """MINUTES OF THE BOARD
1, The board approved the purchase of the ovens from Halvard Kilnworks.
\u00b6 2 The treasurer reported that the bakery's overdraft facility was renewed."""
LETTER = """Dear Ms. Crofts,
Thank you for your letter about the flooding in the cellar. We will send a surveyor.
Yours, Oriel Basin Holdings"""
COMPLAINT = """COMPLAINT
1. Plaintiff Tamsin Crofts Bakery operates a bakery at 14 Wharf Lane.
2. Defendant Oriel Basin Holdings owns the parcel and leased it to Plaintiff.
3. In March the roof collapsed after Defendant refused to repair it."""
DECLARATION = """DECLARATION OF IMOGEN SMITH
1. I am the head baker of Tamsin Crofts Bakery.
2. I saw water pouring through the roof onto the ovens on the morning of the collapse."""


def _packet(*extra: tuple[str, str, str]) -> PacketIndex:
    texts = [
        ("01-ground-lease.pdf", LEASE_1, "text_layer"),
        ("01-ground-lease.pdf", LEASE_2, "text_layer"),
        ("02-board-minutes.pdf", OCR_MINUTES, "ocr"),
        ("03-letter.pdf", LETTER, "text_layer"),
        *extra,
    ]
    documents: dict[str, int] = {}
    pages = []
    for i, (filename, text, source) in enumerate(texts):
        document = documents.setdefault(filename, len(documents) + 1)
        number = sum(1 for f, _, _ in texts[:i] if f == filename) + 1
        pages.append(
            PageRecord(
                position=i + 1,
                document_id=document,
                filename=filename,
                page_number=number,
                bates=(f"{PREFIX}{12345 + i:07d}",),
                text=text,
                source=source,
                ocr_confidence=92.0 if source == "ocr" else None,
                origin="client",
            )
        )
    return PacketIndex.build(pages)


def _cite_findings(text: str, packet: PacketIndex | None = None) -> list[Finding]:
    claims = extract_claims(text, bates_prefixes=(PREFIX,))
    findings = verify_text(text, claims, packet or _packet())
    return [f for f in findings if f.claim.kind == "record_cite"]


def _one(text: str, packet: PacketIndex | None = None) -> Finding:
    (finding,) = _cite_findings(text, packet)
    return finding


# --- reading pins and paragraphs ---------------------------------------------------------------


def test_pins_name_paragraphs_singly_and_in_ranges() -> None:
    assert paragraph_numbers(["\u00b6 4"]) == [4]
    assert paragraph_numbers(["\u00b6\u00b6 4-6"]) == [4, 5, 6]
    assert paragraph_numbers(["\u00b6\u00b6 4\u20136", "\u00b6 9"]) == [4, 5, 6, 9]
    assert paragraph_numbers(["at 3", ":12"]) == []


def test_numbered_paragraphs_run_over_a_page_break_of_their_document() -> None:
    index = _packet()
    paragraphs = paragraphs_of(index, [0, 1])
    assert [p.number for p in paragraphs] == [1, 2, 3, 4, 5, 6]
    fifth = paragraphs[4]
    assert [part[0] for part in fifth.parts] == [0, 1]
    assert "bakery competitor" in fifth.text(index)


def test_ocr_pages_read_a_comma_for_the_period_and_a_pilcrow_marker() -> None:
    index = _packet()
    assert [p.number for p in paragraphs_of(index, [2])] == [1, 2]


# --- Bates cites with paragraph pins ---------------------------------------------------------


def test_the_pinned_paragraph_carries_the_sentence() -> None:
    finding = _one("The tenant must insure the building against flood (KTR-0012345 \u00b6 3).")
    assert finding.status == "supported"
    assert finding.check == "record_cite_paragraph"
    assert finding.page is not None and finding.match is not None
    assert finding.page.text[finding.match[0] :].startswith("3. INSURANCE")


def test_a_pin_to_the_wrong_paragraph_names_the_one_that_has_it() -> None:
    finding = _one("The tenant must insure the building against flood (KTR-0012345 \u00b6 2).")
    assert finding.status == "unsupported"
    assert "\u00b6 3 has it" in finding.message


def test_a_paragraph_the_page_does_not_have_is_unsupported_with_what_it_has() -> None:
    finding = _one("The tenant must insure the building (KTR-0012345 \u00b6 9).")
    assert finding.status == "unsupported"
    assert finding.message == "KTR-0012345 has no \u00b6 9 (its numbered paragraphs: 1-5)"


def test_a_paragraph_on_another_page_of_the_document_is_named() -> None:
    finding = _one("A tenant holding over pays double rent (KTR-0012345 \u00b6 6).")
    assert finding.status == "unsupported"
    assert "KTR-0012346" in finding.message


def test_a_range_of_paragraphs_and_a_range_of_pages() -> None:
    ok = _one(
        "Rent is $3,900.00 and the building is insured "
        "(Ex. 1 at KTR-0012345 \u00b6\u00b6 2\u20133)."
    )
    assert ok.status == "supported"
    wrapped = _one("Consent may be withheld for a franchise (KTR-0012345-46 at \u00b6 5).")
    assert wrapped.status == "supported"
    short = _one("The roof and assignment terms (KTR-0012345 \u00b6\u00b6 4-6).")
    assert short.status == "unsupported"
    assert "\u00b6 6" in short.message and "KTR-0012346" in short.message


def test_a_quotation_in_another_paragraph_makes_the_pin_wrong() -> None:
    text = 'The lease says "Landlord shall repair the roof, the foundation" (KTR-0012345 \u00b6 2).'
    finding = _one(text)
    assert finding.status == "unsupported"
    assert finding.message.startswith("the quotation is in \u00b6 4 of KTR-0012345")


def test_non_breaking_spaces_and_the_ocr_pilcrow_paragraph() -> None:
    finding = _one("The overdraft facility was renewed (KTR-0012347\u00a0\u00b6\u00a02).")
    assert finding.status == "supported"
    assert finding.page is not None and finding.page.source == "ocr"


def test_a_page_without_numbered_paragraphs_leaves_the_pin_for_review() -> None:
    finding = _one("The landlord promised a surveyor (KTR-0012348 \u00b6 2).")
    assert finding.status == "needs_review"
    assert "no numbered paragraphs" in finding.message


def test_a_cite_without_a_paragraph_pin_is_left_to_the_page_check() -> None:
    finding = _one("The tenant must insure the building against flood (KTR-0012345).")
    assert finding.check != "record_cite_paragraph"


# --- pleadings without Bates pages -----------------------------------------------------------


def test_a_pleading_cite_is_checked_in_the_one_document_titled_so() -> None:
    packet = _packet(
        ("04-complaint.pdf", COMPLAINT, "text_layer"),
        ("05-declaration-of-imogen-smith.pdf", DECLARATION, "text_layer"),
        ("06-declaration-of-arlo-penn.pdf", "DECLARATION OF ARLO PENN\n1. I am a surveyor.", "ocr"),
    )
    roof = _one(
        "The roof collapsed after the landlord refused to repair it (Compl. \u00b6 3).", packet
    )
    assert roof.status == "supported"
    assert roof.page is not None and roof.page.filename == "04-complaint.pdf"
    wrong = _one(
        "The roof collapsed after the landlord refused to repair it (Compl. \u00b6 9).", packet
    )
    assert wrong.status == "unsupported"
    assert "04-complaint.pdf has no \u00b6 9" in wrong.message
    seen = _one("Water poured through the roof onto the ovens (Smith Decl. \u00b6 2).", packet)
    assert seen.status == "supported"
    assert seen.page is not None and seen.page.filename.startswith("05-declaration")


def test_a_pleading_cite_without_one_matching_document_stays_for_review() -> None:
    none = _one("The roof collapsed (Compl. \u00b6 3).")
    assert (none.status, none.check) == ("needs_review", "record_cite_unstamped")
    packet = _packet(
        ("05-declaration-of-imogen-smith.pdf", DECLARATION, "text_layer"),
        ("06-declaration-of-arlo-penn.pdf", "DECLARATION OF ARLO PENN\n1. I am a surveyor.", "ocr"),
    )
    two = _one("Water poured through the roof (Decl. \u00b6 2).", packet)
    assert (two.status, two.check) == ("needs_review", "record_cite_unstamped")


def test_a_pleading_page_pin_is_confirmed_on_that_page_of_the_document_or_left_for_review() -> None:
    packet = _packet(
        ("04-complaint.pdf", COMPLAINT, "text_layer"),
        (
            "04-complaint.pdf",
            "4. The roof fell on March 4, 2024, and ruined $8,250.00 of flour.",
            "ocr",
        ),
    )
    on_page = _one("The roof fell on March 4, 2024 (Compl. at 2).", packet)
    assert (on_page.status, on_page.check) == ("supported", "record_cite_document_page")
    assert on_page.page is not None and on_page.page.page_number == 2
    assert on_page.match is not None
    other_page = _one("The roof fell on March 4, 2024 (Compl. at 1).", packet)
    assert (other_page.status, other_page.check) == ("needs_review", "record_cite_unstamped")
    assert "page 1 of 04-complaint.pdf does not show" in other_page.message
    past = _one("The roof fell on March 4, 2024 (Compl. at 7).", packet)
    assert past.status == "needs_review" and "has 2 pages" in past.message
    transcript = _one("The roof fell on March 4, 2024 (Compl. 2:4).", packet)
    assert transcript.check == "record_cite_unstamped"


def test_a_paragraph_running_onto_the_cited_page_is_on_it() -> None:
    finding = _one("Consent may be withheld for any bakery competitor (KTR-0012346 \u00b6 5).")
    assert finding.status == "supported"
    assert finding.page is not None and finding.page.bates == ("KTR-0012346",)


def test_a_gap_in_the_numbering_is_left_for_review() -> None:
    packet = _packet(
        ("07-notice.pdf", "NOTICE\n1. First item.\n2. Second item.\n4. Fourth.", "ocr")
    )
    finding = _one("The notice lists a third item (KTR-0012349 \u00b6 3).", packet)
    assert finding.status == "needs_review"
    assert "not marked" in finding.message
