"""The checks' principles (issue 20 requirement 1, issue 28 requirements 5 and 6) on packets of
our own: a cited page must beat its neighbours for the sentence's distinctive facts; every cite
of a sentence counts; what stands where a record cite belongs and is none says why, from the
packet; short forms bind to a packet opinion by name, volume and reporter; pins carry the
proposition; quotations are word for word. Claims come from the real extractor."""

import tempfile
import time
from pathlib import Path

import pytest

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord
from bench import verifier_eval
from tests.verification.principles import build, sealed, tuning

PREFIX = "WHX-"

# A warehouse lease dispute: the lease's pages share most of their words; so do the two
# monthly meter readings.
LEASE = [
    """INDUSTRIAL LEASE - BAYSHORE LOGISTICS PARK, BUILDING 4
Landlord: Corvina Properties LP   Tenant: Ashdown Cold Chain Inc.
1. PREMISES. Building 4, 86,400 square feet, with twelve dock doors.
2. BASE RENT. Tenant shall pay base rent of $51,840.00 per month.
Lease page 1 of 3""",
    """INDUSTRIAL LEASE - BAYSHORE LOGISTICS PARK, BUILDING 4
3. ROOF. Landlord shall keep the roof membrane and the roof drains watertight and shall
repair any leak within five business days after written notice from Tenant.
4. HOLDOVER. Rent during any holdover is one hundred fifty percent of base rent.
Lease page 2 of 3""",
    """INDUSTRIAL LEASE - BAYSHORE LOGISTICS PARK, BUILDING 4
5. ASSIGNMENT. Tenant may not assign this Lease without Landlord's written consent, which
Landlord shall not unreasonably withhold.
6. NOTICES. Notices go to the addresses on the signature page by certified mail.
Lease page 3 of 3""",
]
METER = [
    """UTILITY METER READING - BUILDING 4
Reading date: March 31, 2024   Reader: T. Okonjo
Electric: 412,880 kWh   Water: 18,204 gallons
Remarks: compressor room dry; freezer alarms silent.""",
    """UTILITY METER READING - BUILDING 4
Reading date: April 30, 2024   Reader: T. Okonjo
Electric: 455,310 kWh   Water: 61,977 gallons
Remarks: standing water under roof drain 7; pallets of frozen salmon moved to dock 3.""",
]
NOTICE = [
    """CERTIFIED MAIL - ASHDOWN COLD CHAIN INC.
April 22, 2024
To: Corvina Properties LP
Roof drain 7 over the freezer aisle is leaking again. Please repair it under Section 3 of
the Lease. Our loss so far is $23,615.00 in spoiled product.
Rafaela Quint, Operations Director
Previously produced as CRV-000318""",
]
OPINIONS = [
    """Dunmore Freight Co. v. Halcyon Realty Tr., 214 A.3d 655 (Md. 2019)
655
DUNMORE FREIGHT CO. v. HALCYON REALTY TRUST
A landlord who covenants to keep the roof watertight is liable for a tenant's inventory
damaged by a leak it failed to repair within the agreed time after notice.""",
    """Dunmore Freight Co. v. Halcyon Realty Tr., 214 A.3d 655 (Md. 2019)
656
A tenant's damages for spoiled goods are measured by their market value at the time of the
loss, less any salvage.""",
    """Dunmore Freight Co. v. Halcyon Realty Tr., 214 A.3d 655 (Md. 2019)
657
A consent to assignment may not be withheld for a reason unrelated to the assignee's
ability to perform the lease.""",
]


def _index() -> PacketIndex:
    documents = [
        ("01-lease.pdf", LEASE, "client"),
        ("02-meter-readings.pdf", METER, "client"),
        ("03-notice.pdf", NOTICE, "client"),
        ("04-opinion-dunmore.pdf", OPINIONS, "public_record"),
    ]
    pages = []
    for document_id, (name, texts, origin) in enumerate(documents, 1):
        for number, text in enumerate(texts, 1):
            pages.append(
                PageRecord(
                    position=len(pages) + 1,
                    document_id=document_id,
                    filename=name,
                    page_number=number,
                    bates=(f"{PREFIX}{500 + len(pages):07d}",),
                    text=text,
                    source="text_layer",
                    ocr_confidence=None,
                    origin=origin,
                )
            )
    return PacketIndex.build(pages)


INDEX = _index()
# WHX-0000500..502 lease, 503..504 meter readings, 505 notice, 506..508 opinion (655-657)


def _findings(text: str) -> list[Finding]:
    claims = extract_claims(text, bates_prefixes=[PREFIX])
    return verify_text(text, claims, INDEX)


def _one(text: str, written: str) -> Finding:
    found = [f for f in _findings(text) if f.claim.text == written]
    assert len(found) == 1, [(f.claim.text, f.status) for f in _findings(text)]
    return found[0]


# -- support is specific: the cited page must beat its neighbours ---------------------------


def test_a_fact_on_the_next_page_of_the_same_document_flags_the_cite_and_names_that_page() -> None:
    text = "Corvina had to repair roof leaks within five business days of notice (WHX-0000500)."

    finding = _one(text, "WHX-0000500")

    assert finding.status == "unsupported"
    assert "WHX-0000501 does" in finding.message
    assert finding.page is not None and finding.page.bates == ("WHX-0000501",)


def test_the_page_that_carries_the_fact_beats_its_neighbours_and_is_supported() -> None:
    text = "Corvina had to repair roof leaks within five business days of notice (WHX-0000501)."

    assert _one(text, "WHX-0000501").status == "supported"


def test_a_neighbour_reading_with_the_same_form_but_other_facts_is_beaten() -> None:
    # Both readings share their form's words; the standing water and the salmon are April's.
    text = "The April reading found standing water under roof drain 7 (WHX-0000503)."

    finding = _one(text, "WHX-0000503")

    assert finding.status == "unsupported"
    assert "WHX-0000504" in finding.message


def test_a_date_that_stands_on_the_neighbour_page_moves_the_cite() -> None:
    text = "On April 30, 2024 the meter reader saw water under the roof drain (WHX-0000503)."

    findings = {f.claim.text: f for f in _findings(text)}

    assert findings["WHX-0000503"].status == "unsupported"
    assert "WHX-0000504" in findings["WHX-0000503"].message
    # The date is not on the cited page; its finding says where it stands.
    assert findings["April 30, 2024"].status != "supported"
    assert "it stands on WHX-0000504" in findings["April 30, 2024"].message


def test_an_altered_amount_under_the_right_cite_flags_the_amount_not_the_cite() -> None:
    text = "Ashdown's notice claimed $26,315.00 of spoiled product (WHX-0000505)."

    findings = {f.claim.text: f for f in _findings(text)}

    assert findings["WHX-0000505"].status == "supported"
    assert findings["$26,315.00"].status == "contradicted"
    assert "$23,615.00" in findings["$26,315.00"].message


# -- every cite of a sentence counts ------------------------------------------------------


def test_a_run_of_cites_is_supported_when_any_of_its_pages_carries_the_fact() -> None:
    text = "Consent to an assignment may not be unreasonably withheld (WHX-0000500; WHX-0000502)."

    findings = {f.claim.text: f for f in _findings(text)}

    assert findings["WHX-0000500"].status == "supported"
    assert findings["WHX-0000502"].status == "supported"
    # The finding names the page that carries it.
    assert "WHX-0000502" in findings["WHX-0000500"].message
    assert findings["WHX-0000500"].page is not None
    assert findings["WHX-0000500"].page.bates == ("WHX-0000502",)


def test_an_amount_on_the_second_cite_of_its_sentence_is_supported_by_that_page() -> None:
    text = (
        "Holdover rent is 150 percent of the $51,840.00 monthly base rent "
        "(WHX-0000501, WHX-0000500)."
    )

    finding = _one(text, "$51,840.00")

    assert finding.status == "supported"
    assert finding.page is not None and finding.page.bates == ("WHX-0000500",)


def test_a_run_of_cites_none_of_which_carries_the_fact_is_flagged() -> None:
    text = "The April reading found standing water under roof drain 7 (WHX-0000500; WHX-0000503)."

    findings = {f.claim.text: f for f in _findings(text)}

    assert findings["WHX-0000500"].status == "unsupported"
    assert findings["WHX-0000503"].status == "unsupported"


# -- what stands where a record cite belongs -------------------------------------------------


def test_things_used_as_cites_are_unsupported_with_the_reason() -> None:
    cases = {
        "(see ROOF_SENSOR_FEED)": "ROOF_SENSOR_FEED",
        "(leak_photos_final.zip)": "leak_photos_final.zip",
        "(Ticket #44170)": "Ticket #44170",
        "(A6000-GPU-NODE)": "A6000-GPU-NODE",
        "(Case No. 1:24-cv-00912)": "Case No. 1:24-cv-00912",
    }
    for cite, written in cases.items():
        finding = _one(f"The roof drain leaked for weeks {cite}.", written)
        assert finding.status == "unsupported", cite
        assert "not one of this case" in finding.message, cite
        assert "WHX-0000500-WHX-0000508" in finding.message, cite


def test_after_at_or_ex_a_name_of_a_thing_closing_the_clause_is_used_as_a_cite() -> None:
    flagged = _one(
        "The leak reports are collected at roof_leaks_2024.xlsx.", "roof_leaks_2024.xlsx"
    )
    exhibit = _one("The drain photos are at Ex. RTX3060.", "RTX3060")
    times = _findings("The crew arrived at 10:15 and left at I-95. They met at Gate B-12.")

    assert flagged.status == "unsupported" and "a file name" in flagged.message
    assert exhibit.status == "unsupported"
    assert [f for f in times if f.status in ("unsupported", "contradicted")] == []


def test_another_productions_stamp_printed_on_a_page_is_no_cite_and_the_page_is_named() -> None:
    for written in ("CRV-000318", "CRV 000318", "CRV000318"):
        finding = _one(f"Ashdown gave written notice of the leak ({written}).", written)
        assert finding.status == "unsupported"
        assert "printed on WHX-0000505" in finding.message
        assert finding.page is not None and finding.page.bates == ("WHX-0000505",)


def test_a_token_of_the_case_prefix_that_is_no_number_of_the_production_says_so() -> None:
    text = "Ashdown gave written notice of the leak (WHX-2024-07)."

    finding = next(f for f in _findings(text) if f.status == "unsupported")

    assert finding.claim.text == "WHX-2024-07"
    assert "starts with this production's prefix but is not one of its numbers" in finding.message


def test_descriptive_parentheticals_and_legal_forms_are_no_cites() -> None:
    text = (
        "The compressor (model XR-200) failed twice. Corvina filed its annual report (Form "
        "10-K). The lease follows the statute (Section 4.2). Sales fell during the pandemic "
        '(COVID-19). The tenant (the "Tenant") paid.'
    )

    assert [f for f in _findings(text) if f.status in ("unsupported", "contradicted")] == []


def test_a_packet_document_cited_by_its_file_name_and_page_is_checked_on_that_page() -> None:
    right = _one(
        "Corvina had to repair roof leaks within five business days (01-lease.pdf at 2).",
        "01-lease.pdf at 2",
    )
    wrong = _one(
        "Corvina had to repair roof leaks within five business days (01-lease.pdf at 3).",
        "01-lease.pdf at 3",
    )
    missing = _one("Corvina had to repair roof leaks (01-lease.pdf at 9).", "01-lease.pdf at 9")

    assert right.status == "supported"
    assert wrong.status == "unsupported" and "WHX-0000501" in wrong.message
    assert missing.status == "unsupported" and "no page 9" in missing.message


# -- short forms and pins ------------------------------------------------------------------


def test_a_short_form_with_no_full_cite_in_the_draft_binds_to_the_packet_opinion() -> None:
    text = "Spoiled goods are valued at market less salvage. Dunmore, 214 A.3d at 656."

    finding = _one(text, "Dunmore, 214 A.3d at 656")

    assert finding.status == "supported"
    assert finding.page is not None and finding.page.bates == ("WHX-0000507",)


def test_supra_and_id_chain_to_the_packet_opinion() -> None:
    text = (
        "A landlord who must keep the roof watertight answers for inventory a leak damaged. "
        "Dunmore, supra, at 655. Damages are the goods' market value less salvage. Id. at 656."
    )

    findings = {f.claim.text: f for f in _findings(text)}

    assert findings["Dunmore, supra, at 655"].status == "supported"
    assert findings["Id. at 656"].status == "supported"


def test_a_pin_whose_page_lacks_the_proposition_is_unsupported_naming_the_page() -> None:
    text = (
        "Consent to assignment cannot be withheld for unrelated reasons. Dunmore, 214 A.3d at 656."
    )

    finding = _one(text, "Dunmore, 214 A.3d at 656")

    assert finding.status == "unsupported"
    assert "page 657 does" in finding.message


def test_a_pin_outside_the_opinion_and_an_unbound_id_are_unsupported() -> None:
    outside = _one("Salvage is deducted. Dunmore, 214 A.3d at 671.", "Dunmore, 214 A.3d at 671")
    unbound = _one("Salvage is deducted. Id. at 656.", "Id. at 656")
    elsewhere = _one("Salvage is deducted. Dunmore, 88 A.3d at 656.", "Dunmore, 88 A.3d at 656")

    assert outside.status == "unsupported" and "outside the opinion's pages" in outside.message
    assert unbound.status == "unsupported" and "no opinion of the packet" in unbound.message
    assert elsewhere.status == "unsupported"


def test_a_star_paged_opinion_is_read_by_its_reporter_pages() -> None:
    # Only the first reporter page is in the head; the others are marked in the text.
    pages = [
        "Pike v. Arno Mills, 61 N.W.2d 300 (Iowa 2020)\nPIKE v. ARNO MILLS\nA buyer who keeps "
        "using goods after discovering a defect accepts them. *301 Acceptance does not bar a "
        "claim for damages if the buyer notified the seller within a reasonable time.",
        "Pike v. Arno Mills, 61 N.W.2d 300 (Iowa 2020)\nreasonable time is measured from "
        "discovery. [*302] A seller's cure offered after rejection must be made before the "
        "contract time for performance expires.",
    ]
    records = [
        PageRecord(
            k + 1,
            1,
            "pike.pdf",
            k + 1,
            (f"PK{k + 1:04d}",),
            text,
            "text_layer",
            None,
            "public_record",
        )
        for k, text in enumerate(pages)
    ]
    index = PacketIndex.build(records)

    def pin(text: str) -> Finding:
        claims = extract_claims(text, bates_prefixes=["PK"])
        return next(f for f in verify_text(text, claims, index) if f.claim.kind == "case_citation")

    full = "Pike v. Arno Mills, 61 N.W.2d 300, {} (Iowa 2020)."
    cure = "A seller must cure before the contract time for performance expires. "
    notice = "Notice within a reasonable time keeps the damages claim. "
    assert pin(cure + full.format(302)).status == "supported"
    assert pin(notice + full.format(301)).status == "supported"
    wrong = pin(cure + full.format(301))
    assert wrong.status == "unsupported" and "page 302 does" in wrong.message
    assert pin(cure + full.format(303)).status == "unsupported"
    # A quotation running over a star marker holds on either page, and on no other.
    over = "The court said that \"reasonable time is measured from discovery. A seller's cure "
    over += 'offered after rejection" must be prompt. '
    assert pin(over + full.format(301)).status == "supported"
    assert pin(over + full.format(302)).status == "supported"
    elsewhere = pin(over + full.format(300))
    assert elsewhere.status == "unsupported" and "the quotation is at 301" in elsewhere.message


# -- quotations ----------------------------------------------------------------------------


def test_quotations_are_word_for_word_with_marked_alterations_allowed() -> None:
    exact = '"Roof drain 7 over the freezer aisle is leaking again" (WHX-0000505).'
    marked = '"[r]oof drain 7 . . . is leaking again" (WHX-0000505).'
    changed = '"Roof drain 7 over the loading aisle is leaking again" (WHX-0000505).'
    invented = (
        '"Roof drain 7 has leaked over the freezer aisle every week since March" (WHX-0000505).'
    )

    def quote(text: str) -> Finding:
        return next(f for f in _findings(f"Ashdown wrote: {text}") if f.claim.kind == "quote")

    assert quote(exact).status == "supported"
    assert quote(marked).status == "supported"
    assert quote(changed).status == "unsupported" and "misquote" in quote(changed).message
    assert quote(invented).status == "unsupported"


def test_a_quotation_running_onto_the_next_page_or_over_a_star_marker_is_verbatim() -> None:
    pages = [
        "Orrin v. Tell, 9 F.4th 20 (1st Cir. 2021)\n20\nA lessor that accepts late rent without\n"
        "objection may not later declare a default for that lateness alone, because the",
        "Orrin v. Tell, 9 F.4th 20 (1st Cir. 2021)\n21\nacceptance *21 waived the strict time "
        "for payment. A written reservation of rights avoids that result.",
    ]
    records = [
        PageRecord(
            k + 1,
            1,
            "orrin.pdf",
            k + 1,
            (f"OT{k + 1:04d}",),
            text,
            "text_layer",
            None,
            "public_record",
        )
        for k, text in enumerate(pages)
    ]
    index = PacketIndex.build(records)
    text = (
        'A lessor "may not later declare a default for that lateness alone, because the '
        'acceptance waived the strict time for payment." Orrin v. Tell, 9 F.4th 20, 20 (1st Cir. '
        "2021)."
    )
    claims = extract_claims(text, bates_prefixes=["OT"])

    quote = next(f for f in verify_text(text, claims, index) if f.claim.kind == "quote")

    assert quote.status == "supported"
    assert quote.page is not None and quote.page.bates == ("OT0001",)


def test_trial_exhibit_cites_are_record_cites_left_for_review_not_flagged() -> None:
    for cite in ("PX-12", "DTX 7", "JX3 at 4"):
        finding = _one(f"The roof drain leaked for weeks ({cite}).", cite)
        assert finding.status == "needs_review", cite


def test_a_short_quoted_term_with_one_word_altered_is_a_misquote_a_scare_quote_is_not() -> None:
    def quote(text: str) -> Finding:
        return next(f for f in _findings(text) if f.claim.kind == "quote")

    altered = quote(
        'The reader found the compressor room "wet" and the alarms "loud" (WHX-0000503).'
    )
    changed = quote('The reader noted "freezer alarms unsilent" (WHX-0000503).')
    dropped = quote('The reader noted "freezer alarms" (WHX-0000503).')
    own = quote('The reader called it a "routine visit" (WHX-0000503).')

    assert quote('The reader noted "freezer alarms silent" (WHX-0000503).').status == "supported"
    assert changed.status == "unsupported" and "silent" in changed.message
    assert dropped.status == "supported"  # two words that stand as printed
    assert own.status == "needs_review"
    assert altered.status == "needs_review"  # one word: a term, not a quotation to compare


@pytest.mark.slow
def test_a_long_draft_of_short_forms_and_tokens_used_as_cites_is_checked_quickly() -> None:
    sentence = (
        "Salvage is deducted. Dunmore, 214 A.3d at 656. Id. at 655. The drain leaked "
        '(leak_{n}.pdf). Ashdown wrote "freezer alarms silent" (WHX-0000503; CRV 000318).\n'
    )
    text = "".join(sentence.format(n=n) for n in range(300))

    started = time.perf_counter()
    findings = _findings(text)
    elapsed = time.perf_counter() - started

    assert len(findings) >= 1500
    assert elapsed < 10, elapsed


# -- the hand-annotated cases the checks were tuned on ---------------------------------------


def test_the_tuning_cases_meet_the_targets() -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = build.write_set(tuning.CASES, Path(folder))
        result = verifier_eval.run_fast(root, root / "findings.jsonl")["result"]

    assert result["targets_met"], (result["missed"], result["wrong_flags"])


def test_the_sealed_cases_hold_their_measured_figures() -> None:
    # Written before the checks were changed and never tuned on (see sealed.py): the figures
    # are what they measured (the one miss is a file name in running prose after "as", where
    # no cite belongs); before these changes: recall 0.90, precision 0.90, false flags 3.7%.
    with tempfile.TemporaryDirectory() as folder:
        root = build.write_set(sealed.CASES, Path(folder))
        result = verifier_eval.run_fast(root, root / "findings.jsonl")["result"]

    assert result["recall"] >= 0.95
    assert result["precision"] >= 0.95
    assert result["false_flag_rate"] <= 0.03
