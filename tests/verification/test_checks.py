"""The deterministic checks on drafts and packets of our own: other prefixes than the dev set's,
7-digit numbers, ranges, OCR pages, opinions. Claims come from the real extractor, as in the
product, except where a test needs a claim the extractor would not make."""

from apps.verification.checks import Finding, verify_text
from apps.verification.checks.cases import NOT_IN_EVIDENCE, pin_numbers
from apps.verification.claims import CaseCite, Claim, extract_claims
from apps.verification.index import PacketIndex, PageRecord

PREFIX = "ZQX-"

LEASE_1 = """COMMERCIAL LEASE
This Lease is made on the 3rd day of March, 2024 between HARBOR POINT LLC ("Landlord")
and KESTREL FOODS INC. ("Tenant").
1. RENT. Tenant shall pay monthly rent of $12,450.00 on the first day of each month.
2. DEPOSIT. Tenant has paid a security deposit of $24,900.00, refundable within thirty
days after the Tenant surrenders the premises in good condition.
Harbor Point Lease - Page 1 of 2"""
LEASE_2 = """3. TERM. The term ends on February 28, 2027. Either party may terminate this Lease on
ninety (90) days' written notice after the second anniversary.
4. USE. The premises shall be used only as a commissary kitchen and for no other purpose.
Harbor Point Lease - Page 2 of 2"""
EMAIL = """From: Dana Whitcomb
Sent: Tue, Jun 11, 2024, 9:14 AM
Subject: Walk-in freezer
The walk-in freezer failed again overnight and we lost the entire dairy inventory. Please
send a technician today."""
INVOICE_OCR = """HARBOR POINT LLC - INVOICE 2211
Invoice date: O7/O1/2O24
Repair of walk-in freezer compressor 3,180.00
Total due $3,18O.OO"""
OPINION = [
    "Orrin Mills, Inc. v. Falk, 77 N.W.2d 310 (Minn. 2019)\n310\nORRIN MILLS, INC. v. FALK\n"
    "A landlord who accepts rent after a breach waives the right to terminate for that breach.",
    "Orrin Mills, Inc. v. Falk, 77 N.W.2d 310 (Minn. 2019)\n311\nA tenant who keeps paying rent "
    "while the premises are unusable does not thereby waive its claim for damages.",
]


def _packet(*, review: float | None = None) -> PacketIndex:
    texts = [
        (1, 1, LEASE_1, "text_layer", None),
        (1, 2, LEASE_2, "text_layer", None),
        (2, 1, EMAIL, "text_layer", None),
        (3, 1, INVOICE_OCR, "ocr", 58.0),
        (4, 1, OPINION[0], "text_layer", None),
        (4, 2, OPINION[1], "text_layer", None),
    ]
    pages = [
        PageRecord(
            position=i + 1,
            document_id=doc,
            filename=f"doc-{doc}.pdf",
            page_number=number,
            bates=(f"{PREFIX}{1000 + i:07d}",),
            text=text,
            source=source,
            ocr_confidence=confidence,
            origin="public_record" if doc == 4 else "client",
        )
        for i, (doc, number, text, source, confidence) in enumerate(texts)
    ]
    return PacketIndex.build(pages)


INDEX = _packet()


def _check(text: str, *, review: float | None = None) -> list[Finding]:
    claims = extract_claims(text, bates_prefixes=[PREFIX])
    findings = verify_text(text, claims, INDEX, ocr_review_confidence=review)
    assert len(findings) == len(claims)
    for finding, claim in zip(findings, claims, strict=True):
        # One finding per claim, in order; a range running past the packet marks its end.
        assert finding.claim == claim or (
            claim.start <= finding.claim.start < finding.claim.end == claim.end
            and finding.claim.text == text[finding.claim.start : finding.claim.end]
        )
    return findings


def _of(findings: list[Finding], text: str) -> Finding:
    matches = [f for f in findings if f.claim.text == text]
    assert matches, [f.claim.text for f in findings]
    return matches[0]


def test_a_record_cite_of_the_page_that_carries_the_fact_is_supported() -> None:
    found = _check("The monthly rent is $12,450.00 (ZQX-0001000).")

    cite = _of(found, "ZQX-0001000")
    assert cite.status == "supported" and cite.page is not None
    assert cite.page.bates == ("ZQX-0001000",)
    assert cite.match is not None
    assert cite.page.text[cite.match[0] : cite.match[1]] == "$12,450.00"
    assert _of(found, "$12,450.00").status == "supported"


def test_a_cite_outside_the_packet_or_running_past_its_end_is_unsupported() -> None:
    found = _check("The lease is at ZQX-0001099. The whole production is ZQX-0001000-ZQX-0001009.")

    assert [f.status for f in found if f.claim.kind == "record_cite"] == [
        "unsupported",
        "unsupported",
    ]
    assert "ZQX-0001000-ZQX-0001005" in found[0].message
    assert "runs past" in found[1].message
    # The range's first pages are in the packet: the finding marks the end that is not.
    assert found[1].claim.text == "ZQX-0001009"


def test_a_cite_whose_page_lacks_the_quotation_names_the_page_that_has_it() -> None:
    found = _check(
        'Whitcomb wrote that "The walk-in freezer failed again overnight and we lost the '
        'entire dairy inventory" (ZQX-0001001).'
    )

    cite = _of(found, "ZQX-0001001")
    assert cite.status == "unsupported" and "ZQX-0001002" in cite.message
    quote = next(f for f in found if f.claim.kind == "quote")
    assert quote.status == "supported"  # the words are in the packet, only the cite is wrong


def test_a_cite_whose_page_lacks_the_key_terms_another_page_has_is_unsupported() -> None:
    found = _check("The commissary kitchen use restriction and ninety days notice (ZQX-0001002).")

    cite = _of(found, "ZQX-0001002")
    assert cite.status == "unsupported" and "ZQX-0001001" in cite.message


def test_a_value_error_under_a_right_cite_flags_the_value_not_the_cite() -> None:
    found = _check("Kestrel paid a deposit of $29,400.00 (ZQX-0001000).")

    amount = _of(found, "$29,400.00")
    assert amount.status == "contradicted" and amount.found_value == "2490000"
    assert _of(found, "ZQX-0001000").status == "supported"


def test_a_date_on_the_cited_page_in_another_form_is_supported_and_a_shifted_one_contradicted(
) -> None:  # fmt: skip
    found = _check(
        "The lease was signed on March 3, 2024 (ZQX-0001000). The freezer failed on June 12, "
        "2024 (ZQX-0001002)."
    )

    assert _of(found, "March 3, 2024").status == "supported"
    shifted = _of(found, "June 12, 2024")
    assert shifted.status == "contradicted" and shifted.found_value == "2024-06-11"


def test_values_without_a_cite_are_looked_for_anywhere_in_the_packet() -> None:
    found = _check("Rent was USD 12,450 from 03/03/2024. The repair cost $9,999.00 on May 5, 2020.")

    assert _of(found, "USD 12,450").status == "supported"
    assert _of(found, "03/03/2024").status == "supported"
    assert _of(found, "$9,999.00").status == "unsupported"
    assert "nowhere" in _of(found, "May 5, 2020").message


def test_ocr_figures_read_through_look_alikes_and_low_confidence_asks_for_review() -> None:
    text = "The freezer repair cost $3,180.00 (ZQX-0001003)."

    plain = _check(text)
    reviewed = _check(text, review=70)

    assert _of(plain, "$3,180.00").status == "supported"
    finding = _of(reviewed, "$3,180.00")
    assert finding.status == "needs_review" and "58%" in finding.message


def test_a_quotation_is_verbatim_modulo_line_breaks_quotes_ellipses_and_brackets() -> None:
    found = _check(
        "The deposit is \u201crefundable within thirty days after the Tenant surrenders the "
        'premises in good condition\u201d (ZQX-0001000). It is "refundable . . . after the '
        'Tenant surrenders the premises" and "[t]he premises shall be used only as a '
        'commissary kitchen" (ZQX-0001001).'
    )

    quotes = [f for f in found if f.claim.kind == "quote"]
    assert [f.status for f in quotes] == ["supported", "supported", "supported"]


def test_one_changed_word_is_a_misquote_naming_the_passage() -> None:
    found = _check(
        'The lease says "The premises shall be used primarily as a commissary kitchen" '
        "(ZQX-0001001)."
    )

    quote = next(f for f in found if f.claim.kind == "quote")
    assert quote.status == "unsupported" and quote.message.startswith("misquote")
    assert "used only as a commissary kitchen" in quote.message
    assert _of(found, "ZQX-0001001").status == "supported"


def test_an_invented_quotation_and_a_running_footer_are_not_in_the_packet() -> None:
    found = _check(
        'Whitcomb admitted that "the freezer had been switched off by our own staff" '
        '(ZQX-0001002). The lease calls itself "Harbor Point Lease - Page 1 of 2 COMMERCIAL".'
    )

    quotes = [f for f in found if f.claim.kind == "quote"]
    assert quotes[0].status == "unsupported" and "no such passage" in quotes[0].message
    assert quotes[1].status == "unsupported"


def test_a_case_in_the_packet_with_a_pin_on_its_pages_is_supported() -> None:
    found = _check(
        '"A landlord who accepts rent after a breach waives the right to terminate for that '
        'breach." Orrin Mills, Inc. v. Falk, 77 N.W.2d 310, 310 (Minn. 2019). A tenant who '
        "pays rent while the premises are unusable keeps its claim for damages. Id. at 311."
    )

    cases = [f for f in found if f.claim.kind == "case_citation"]
    assert [f.status for f in cases] == ["supported", "supported"]
    assert cases[0].page is not None and cases[0].page.bates == ("ZQX-0001004",)


def test_a_pin_outside_the_opinion_or_away_from_its_quotation_is_unsupported() -> None:
    found = _check(
        'Orrin Mills, Inc. v. Falk, 77 N.W.2d 310, 315 (Minn. 2019). The court held that "A '
        "landlord who accepts rent after a breach waives the right to terminate for that "
        'breach." Orrin Mills, 77 N.W.2d at 311.'
    )

    cases = [f for f in found if f.claim.kind == "case_citation"]
    assert [f.status for f in cases] == ["unsupported", "unsupported"]
    assert "310-311" in cases[0].message
    assert "at 310" in cases[1].message


def test_an_authority_not_in_the_packet_is_not_in_the_evidence_not_fabricated() -> None:
    found = _check("See Brandt v. Coastal Cold Storage, 412 F.3d 88, 91 (9th Cir. 2005).")

    case = next(f for f in found if f.claim.kind == "case_citation")
    assert case.status == "unsupported" and NOT_IN_EVIDENCE in case.message


def _cite_claim(text: str, needle: str, citation: CaseCite) -> Claim:
    start = text.index(needle)
    return Claim(
        kind="case_citation",
        start=start,
        end=start + len(needle),
        text=needle,
        sentence=(0, len(text)),
        citation=citation,
    )


def test_an_unbound_id_and_a_year_outside_the_reporter_never_pass() -> None:
    text = "Id. at 4. Orrin Mills, Inc. v. Falk, 77 N.W.2d 310 (Minn. 1930)."
    unbound = _cite_claim(
        text, "Id. at 4", CaseCite("", "", "", "4", None, None, None, True, False)
    )
    early = _cite_claim(
        text,
        "Orrin Mills, Inc. v. Falk, 77 N.W.2d 310 (Minn. 1930)",
        CaseCite("77", "N.W.2d", "310", None, "Orrin Mills, Inc. v. Falk", 1930, "Minn.", False,
                 True),
    )  # fmt: skip

    first, second = verify_text(text, [unbound, early], INDEX)

    assert first.status == "unsupported" and first.check == "case_short_form"
    assert second.status == "unsupported" and second.check == "case_reporter_year"


def test_things_cited_as_record_that_are_not_and_earlier_drafts_are_unsupported() -> None:
    text = "The freezer log is at RTX3060. The damages are in Draft v2 at 3."
    claims = [
        Claim("not_a_record_cite", text.index("RTX3060"), text.index("RTX3060") + 7, "RTX3060",
              (0, 30)),
        Claim("not_a_record_cite", text.index("Draft v2"), text.index("Draft v2") + 13,
              "Draft v2 at 3", (31, len(text))),
    ]  # fmt: skip

    found = verify_text(text, claims, INDEX)

    assert [f.status for f in found] == ["unsupported", "unsupported"]
    assert found[1].check == "system_generated_reference"


def test_an_empty_draft_has_no_findings() -> None:
    assert verify_text("", [], INDEX) == []
    assert _check("   \n\n") == []


def test_pin_ranges_are_read_as_pages() -> None:
    assert pin_numbers("1045") == [1045]
    assert pin_numbers("1045-46") == [1045, 1046]
    assert pin_numbers("1045 & 1047") == [1045, 1047]


def test_a_cite_of_a_page_without_text_is_left_for_review() -> None:
    blank = PageRecord(1, 9, "scan.pdf", 1, ("BLK000001",), "", "none", None, "client")
    index = PacketIndex.build([blank])
    text = "The photograph shows the freezer (BLK000001)."
    claims = extract_claims(text, bates_prefixes=["BLK"])

    (finding,) = verify_text(text, claims, index)

    assert finding.status == "needs_review" and "no text" in finding.message


def test_a_pleading_or_docket_cite_without_a_bates_page_is_left_for_review() -> None:
    found = _check(
        "The complaint alleges a rent of $12,450.00 (Compl. ¶ 4). So held (Dkt. 12 at 3)."
    )

    assert [f.status for f in found if f.claim.kind == "record_cite"] == [
        "needs_review",
        "needs_review",
    ]
    assert _of(found, "$12,450.00").status == "supported"  # looked for anywhere


def test_a_misquote_of_another_pages_passage_flags_the_cite_as_well() -> None:
    found = _check(
        'Whitcomb wrote that "The walk-in freezer failed again overnight and we lost the '
        'whole dairy inventory" (ZQX-0001000).'
    )

    assert next(f for f in found if f.claim.kind == "quote").status == "unsupported"
    cite = _of(found, "ZQX-0001000")
    assert cite.status == "unsupported" and "ZQX-0001002" in cite.message


# --- Wrong page: the cited page must carry what the sentence attributes to it ------------------

YARD = [
    "INCIDENT LOG - NORTH YARD\nThe forklift struck the loading dock door on May 3, 2024.\n"
    "The driver, Corin Ashby, was not hurt. The forklift was parked for the day.",
    "SAFETY REVIEW - NORTH YARD\nThe forklift's brake line was worn through and the parking "
    "brake failed.\nThe mechanic, Oswin Tull, replaced the brake line on May 6, 2024.",
    "NOTICE TO STAFF - NORTH YARD\nThe forklift is out of service until further notice.\n"
    "Use the pallet jack at the loading dock.",
    "UPTIME - NORTH YARD\nMonth  Availability  SLA\n2024-04  99.1%  MET\n2024-05  96.2%  MISSED",
]
YARD_INDEX = PacketIndex.build(
    [
        PageRecord(
            i + 1,
            i + 1,
            f"yard-{i + 1}.pdf",
            1,
            (f"NY{i + 1:07d}",),
            text,
            "text_layer",
            None,
            "client",
        )
        for i, text in enumerate(YARD)
    ]
)


def _yard(text: str) -> list[Finding]:
    return verify_text(text, extract_claims(text, bates_prefixes=["NY"]), YARD_INDEX)


def test_a_page_sharing_only_the_common_words_is_the_wrong_page_and_the_right_one_is_named() -> (
    None
):
    # "forklift" is on every page; the brake line, the mechanic and "worn" only on NY0000002.
    found = _yard("The mechanic found the forklift's brake line worn through (NY0000001).")

    (cite,) = [f for f in found if f.claim.kind == "record_cite"]
    assert cite.status == "unsupported"
    assert "NY0000002 does" in cite.message and "'brake'" in cite.message
    assert cite.page is not None and cite.page.bates == ("NY0000002",)


def test_the_right_page_in_other_words_is_supported() -> None:
    found = _yard("Oswin Tull put in a new brake line (NY0000002).")
    assert [f.status for f in found] == ["supported"]
    # A paraphrase: "restricted to" for "use the ... only", "halted" words on no page.
    found = _yard("Staff were told to use the pallet jack instead (NY0000003).")
    assert [f.status for f in found] == ["supported"]


def test_a_cite_whose_page_keeps_some_of_the_facts_while_another_has_more_asks_for_review() -> None:
    # Corin Ashby is only on the cited page; the brake facts only on NY0000002.
    found = _yard(
        "Corin Ashby said the brake line was worn through and the parking brake failed (NY0000001)."
    )

    (cite,) = [f for f in found if f.claim.kind == "record_cite"]
    assert cite.status == "needs_review" and "NY0000002" in cite.message


def test_a_cite_with_too_few_words_of_its_own_is_read_with_the_sentence_before() -> None:
    def cites(text: str) -> list[Finding]:
        found = verify_text(text, extract_claims(text, bates_prefixes=["NY"]), YARD_INDEX)
        return [f for f in found if f.claim.kind == "record_cite"]

    # "Nothing before that" says nothing by itself: the sentence before is its subject, and
    # its date and facts are on NY0000002, not on the notice to staff.
    before = "The mechanic replaced the worn brake line on May 6, 2024 (NY0000002). "
    first, second = cites(before + "Nothing before that (NY0000003).")
    assert first.status == "supported"
    assert second.status == "unsupported" and "NY0000002 does" in second.message
    assert "'May 6, 2024'" in second.message
    assert [c.status for c in cites(before + "Nothing before that (NY0000002).")] == [
        "supported",
        "supported",
    ]
    # On words alone (no date or amount of the sentence before), a person checks.
    (cite,) = cites("The brake line was worn through. Nothing before that (NY0000003).")
    assert cite.status == "needs_review" and "NY0000002" in cite.message
    # Another item of a list is not the sentence this one continues.
    listed = "- Brake line replaced on May 6, 2024 (NY0000002).\n- Nothing else (NY0000003).\n"
    assert [c.status for c in cites(listed)] == ["supported", "supported"]


def test_a_table_page_carries_its_months_and_abbreviations() -> None:
    # "May" is the 2024-05 row; "Service Level" is what "SLA" stands for.
    found = _yard("May availability missed the Service Level (NY0000004).")
    assert [f.status for f in found] == ["supported"]


def test_an_ocr_page_carries_a_term_it_read_one_slip_away() -> None:
    # The scan read "impeller" as "impeiler" and "overheated" as "overheatad": still its words.
    scan = "SURVEY\nThe raw-water impeiler had lost its vanes and the engine overheatad."
    other = "REPAIR QUOTE\nNew raw-water impeller, new vanes; the engine overheated."
    pages = [
        PageRecord(1, 1, "survey.pdf", 1, ("SV000001",), scan, "ocr", 91.0, "client"),
        PageRecord(2, 2, "quote.pdf", 1, ("SV000002",), other, "text_layer", None, "client"),
        PageRecord(
            3,
            3,
            "log.pdf",
            1,
            ("SV000003",),
            "ENGINE LOG\nNo entries.",
            "text_layer",
            None,
            "client",
        ),
    ]
    index = PacketIndex.build(pages)
    text = "The impeller had lost its vanes and the engine overheated (SV000001)."

    found = verify_text(text, extract_claims(text, bates_prefixes=["SV"]), index)

    assert [f.status for f in found] == ["supported"]
