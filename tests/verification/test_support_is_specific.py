"""Support is specific (issue 20 req 1, issue 28 reqs 1 and 3), on packets of our own: a cited
page must beat its neighbours for the sentence, and a neighbour that states the sentence's facts
together in one sentence beats a page that holds the same words apart; the drafter's frame ("The
record shows that") is no fact a page must carry; a quotation that only shares most of its words
with another page's passage says nothing of the cite; pins of star-paged opinions are held to
the same rule; a day in words broken at a line's end is still read."""

import os
import subprocess
import sys

import pytest
from django.conf import settings

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord
from tests.verification.packets import findings_by_claim, numbered_index

PREFIX = "HLD"

# A permit file of two pages that share their parties and their vocabulary: page 1 states who
# signed the escrow letter; page 2 names the same person and the same letter, in other
# sentences.
PERMIT_FILE = [
    """BOILER PERMIT FILE - HALDEN MILLWORKS
Entry of May 7, 2019: Dana Whitlock signed the escrow letter.
The permit fee for the new boiler was paid by Halden Millworks.
Permit file - Page 1 of 2""",
    """BOILER PERMIT FILE - HALDEN MILLWORKS (continued)
On June 2, 2019, Dana Whitlock, plant manager, approved the survey plat.
The survey plat was signed by the county clerk.
Whitlock wrote: the escrow letter must be returned before the permit issues.
Permit file - Page 2 of 2""",
]
# Another document whose one sentence states the same fact: not a neighbour of the file.
MINUTES = [
    """BOARD MINUTES - HALDEN MILLWORKS
Dana Whitlock signed the escrow letter, the minutes record.
Minutes - Page 1 of 1""",
]


def _index(*documents: list[str]) -> PacketIndex:
    return numbered_index(PREFIX, *documents)


def _findings(text: str, index: PacketIndex) -> dict[str, Finding]:
    return findings_by_claim(text, index, PREFIX)


def test_a_neighbour_stating_the_facts_together_beats_a_page_holding_them_apart() -> None:
    index = _index(PERMIT_FILE)
    wrong = _findings("Whitlock signed the escrow letter (HLD000002).", index)["HLD000002"]
    assert wrong.status == "unsupported"
    assert "as a sentence on HLD000001 does" in wrong.message

    right = _findings("Whitlock signed the escrow letter (HLD000001).", index)["HLD000001"]
    assert right.status == "supported"


def test_a_page_of_another_document_is_not_read_by_sentence() -> None:
    # The minutes state the fact in one sentence, and the permit file's page 2 holds its words
    # apart; pages of different documents are told apart by their words only.
    index = _index(PERMIT_FILE[1:], MINUTES)
    found = _findings("Whitlock signed the escrow letter (HLD000001).", index)["HLD000001"]
    assert found.status == "supported"


# A page that prints the drafter's frame words ("record", "shows") and the actor, beside the
# neighbour that states the fact.
INSPECTION = [
    """BOILER INSPECTION FILE
Kestrel Varga approved the boiler permit on May 3, 2021.
Inspection file - Page 1 of 2""",
    """BOILER INSPECTION FILE (continued)
The inspection record shows no defects in the burner. Kestrel Varga filed it.
Inspection file - Page 2 of 2""",
]


@pytest.mark.parametrize("frame", ["The record shows that", "Records show that"])
def test_the_drafters_frame_is_no_fact_the_page_must_carry(frame: str) -> None:
    # "Records show that": the kind of source cited, as the frame's subject (no function word
    # first), is the record speaking of itself too.
    index = _index(INSPECTION)
    text = f"{frame} Kestrel approved the boiler permit (HLD000002)."
    wrong = _findings(text, index)["HLD000002"]
    assert wrong.status == "unsupported"
    assert "HLD000001" in wrong.message
    right = _findings(text.replace("HLD000002", "HLD000001"), index)["HLD000001"]
    assert right.status == "supported"


# An opinion whose page 411 prints the words of a frame ("court", "held") and the party, and
# page 410 the holding.
QUARRY_HEAD = "Quarry Mills LLC v. Ostrander Leasing Co., 88 F.4th 410 (9th Cir. 2023)"
QUARRY = (
    f"{QUARRY_HEAD}\nA landlord that accepts late rent waives the default. *411 The trial court "
    "held a hearing on the landlord's motion. *412 The judgment is affirmed."
)


def _pin_finding(text: str, index: PacketIndex) -> Finding:
    claims = extract_claims(text, bates_prefixes=["OP"])
    return next(f for f in verify_text(text, claims, index) if f.claim.kind == "case_citation")


def _pinned_to_411(proposition: str, index: PacketIndex) -> Finding:
    """The finding on `proposition` pinned to page 411 of Quarry, once its pin to page 410
    (which states it) is supported."""
    holding = (
        f"{proposition} Quarry Mills LLC v. Ostrander Leasing Co., 88 F.4th 410, {{}} "
        "(9th Cir. 2023)."
    )
    assert _pin_finding(holding.format(410), index).status == "supported"
    return _pin_finding(holding.format(411), index)


def test_courts_holding_is_the_frame_of_a_pinned_proposition_not_its_facts() -> None:
    record = PageRecord(1, 1, "quarry.pdf", 1, ("OP0001",), QUARRY, "text_layer", None, "public")
    index = PacketIndex.build([record])
    wrong = _pinned_to_411(
        "Courts have long held that a landlord that accepts late rent waives the default.", index
    )
    assert wrong.status == "unsupported"
    assert wrong.message == (
        "page 411 of the opinion does not carry 'accepts', 'default', 'late', 'rent'; page 410 does"
    )


# The words a finding names, in the same order in every process: words of equal weight by
# their spelling, never by the order of a set (which Python's string hashing varies).
SAME_WORDS = """
import django
django.setup()
from apps.verification.index import PacketIndex, PageRecord
from tests.verification.test_support_is_specific import QUARRY, _pin_finding
record = PageRecord(1, 1, "quarry.pdf", 1, ("OP0001",), QUARRY, "text_layer", None, "public")
print(_pin_finding(
    "A landlord that accepts late rent waives the default. "
    "Quarry Mills LLC v. Ostrander Leasing Co., 88 F.4th 410, 411 (9th Cir. 2023).",
    PacketIndex.build([record]),
).message)
"""


@pytest.mark.slow
def test_a_findings_words_are_named_in_the_same_order_in_every_process() -> None:
    messages = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "DJANGO_SETTINGS_MODULE": "lexweb.settings"}
        done = subprocess.run(
            [sys.executable, "-c", SAME_WORDS],
            capture_output=True,
            text=True,
            env=env,
            cwd=settings.BASE_DIR,
            check=True,
            timeout=120,
        )
        messages.add(done.stdout.strip())
    assert messages == {
        "page 411 of the opinion does not carry 'accepts', 'default', 'late', 'rent'; page 410 does"
    }


LETTERS = [
    """LETTER - RUIZ TO HALDEN
Ruiz wrote: we cannot release the boiler permit without a signed inspection report.""",
    """LETTER - RUIZ TO HALDEN (continued)
Ruiz wrote: we should not finalize the tank order without a signed fire certificate from
Halden Corp.""",
]


def test_an_invented_quotation_sharing_most_words_with_another_page_leaves_the_cite() -> None:
    index = _index(LETTERS)
    text = (
        'Ruiz wrote that "we should not certify the boiler permit without a signed fire '
        'certificate from Halden Corp" (HLD000001).'
    )
    found = _findings(text, index)
    assert found["HLD000001"].status == "supported"
    quote = next(f for f in found.values() if f.claim.kind == "quote")
    assert quote.status == "unsupported"


def test_a_misquote_of_another_pages_passage_still_moves_the_cite() -> None:
    index = _index(LETTERS)
    text = (
        'Ruiz wrote that "we should not finalize the tank order without a signed fire '
        'certificate from Halden Inc." (HLD000001).'
    )
    cite = _findings(text, index)["HLD000001"]
    assert cite.status == "unsupported"
    assert "HLD000002" in cite.message


# A star-paged opinion: reporter pages 1480-1482 marked in one file page. The holding is stated
# on 1480; 1482 holds its closing words in another holding and its other words in a sentence
# after a footnote call.
ASHBY = (
    "Ashby Capital Inc. v. Corr Labs Inc. (2022) 68 Cal.5th 1480\n"
    "A landlord that keeps the benefit of the work after the cure period has run bears the "
    "cost of the resulting delay. *1481 The lease was signed in 2015 and renewed twice. *1482 "
    "A tenant that fails to give notice bears the cost of the resulting delay.2 The landlord "
    "said the cure period had run and kept the deposit.\n"
    "2 The notice must be written."
)


def test_a_pin_to_a_star_page_holding_the_words_apart_is_wrong() -> None:
    index = PacketIndex.build(
        [PageRecord(1, 1, "ashby.pdf", 1, ("OP0001",), ASHBY, "text_layer", None, "public_record")]
    )
    holding = (
        "A landlord that keeps the benefit of the work after the cure period has run bears the "
        "cost of the resulting delay. (Ashby Capital Inc. v. Corr Labs Inc. (2022) 68 "
        "Cal.5th 1480, {}.)"
    )

    def pin(page: int) -> Finding:
        text = holding.format(page)
        claims = extract_claims(text, bates_prefixes=["OP"])
        return next(f for f in verify_text(text, claims, index) if f.claim.kind == "case_citation")

    assert pin(1480).status == "supported"
    wrong = pin(1482)
    assert wrong.status == "unsupported"
    assert "page 1480 does" in wrong.message


def test_a_day_in_words_broken_at_a_lines_end_is_read_whole() -> None:
    index = _index(
        [
            "CLAIM NOTE\nNerys Whitcombe reserved rights on the adjuster's estimate on the "
            "twenty-\nseventh of June, 2020.\n"
        ]
    )
    text = "Whitcombe reserved rights on the adjuster's estimate on June 27, 2020 (HLD000001)."
    date = next(f for f in _findings(text, index).values() if f.claim.kind == "date")
    assert date.status == "supported"


def test_an_amount_in_words_broken_by_a_hyphen_and_a_transcripts_line_number_is_read_whole() -> (
    None
):
    index = _index(
        [
            " 6  The severance payment was four hundred seventy-nine\n"
            " 7  thousand five hundred thirty-eight dollars and seventy-\n"
            " 8  eight cents.\n"
        ]
    )
    text = (
        "The severance payment was four hundred seventy-nine thousand five hundred "
        "thirty-eight dollars and seventy-eight cents (HLD000001)."
    )
    amount = next(f for f in _findings(text, index).values() if f.claim.kind == "amount")
    assert amount.status == "supported"


def test_a_checks_cents_read_by_ocr_with_a_space_beside_the_slash_are_read() -> None:
    index = _index(
        [
            "A capital call of Seventy Thousand Three Hundred Nine and 25/ 100 Dollars was paid.",
            "A capital call of Seventy Thousand Three Hundred Nine and. 25/100 Dollars was paid.",
        ]
    )
    for page in ("HLD000001", "HLD000002"):
        text = f"The capital call was $70,309.25 ({page})."
        amount = next(f for f in _findings(text, index).values() if f.claim.kind == "amount")
        assert amount.status == "supported"


def test_a_cited_page_stating_no_two_of_the_facts_together_loses_to_a_neighbour() -> None:
    # Page 2 holds only the rare verb, in a sentence about something else; page 1 states who
    # and which shipment in one sentence; a report elsewhere holds those words apart, so they
    # weigh less than the verb.
    index = _index(
        [
            "FREIGHT FILE\nMara Quell inspected the grain shipment on May 2.\nFreight file - 1",
            "FREIGHT FILE (continued)\nThe storage was invoiced by the carrier.\nFreight file - 2",
        ],
        ["GRAIN REPORT\nQuell reviewed the grain prices. The shipment season ended early."],
    )
    wrong = _findings("Quell invoiced the grain shipment (HLD000002).", index)["HLD000002"]
    assert wrong.status == "unsupported"
    assert "as a sentence on HLD000001 does" in wrong.message


# An opinion of two reporter pages whose holdings differ in their subject only.
YARROW_HEAD = "Yarrow Systems LLC v. Westmarch Capital LLC, 115 F.3d 910 (7th Cir. 2014)"
YARROW = [
    f"{YARROW_HEAD}\n910\nYARROW v. WESTMARCH\nA landlord that fails to give notice is bound. "
    "The lease ran for ten years.",
    f"{YARROW_HEAD}\n911\nA tenant that fails to give notice is bound. The argument was not "
    "raised below.",
]


def test_the_subject_of_a_holding_is_a_fact_not_the_drafters_frame() -> None:
    records = [
        PageRecord(n, 1, "yarrow.pdf", n, (f"OP{n:04d}",), text, "text_layer", None, "public")
        for n, text in enumerate(YARROW, 1)
    ]
    index = PacketIndex.build(records)
    holding = (
        "A tenant that fails to give notice is bound. Yarrow Systems LLC v. Westmarch Capital "
        "LLC, 115 F.3d 910, {} (7th Cir. 2014)."
    )

    def pin(page: int) -> Finding:
        text = holding.format(page)
        claims = extract_claims(text, bates_prefixes=["OP"])
        return next(f for f in verify_text(text, claims, index) if f.claim.kind == "case_citation")

    assert pin(911).status == "supported"
    wrong = pin(910)
    assert wrong.status == "unsupported"
    assert "page 911 does" in wrong.message


def test_a_date_whose_day_follows_a_transcripts_line_number_is_read() -> None:
    index = _index(
        [
            " 3  Q. What happened with the records?\n"
            " 4  A. Elspeth Brannigan reviewed the overtime records on June\n"
            " 5  9, 2023.\n"
        ]
    )
    text = "Brannigan reviewed the overtime records on June 9, 2023 (HLD000001 at 4:4-5)."
    date = next(f for f in _findings(text, index).values() if f.claim.kind == "date")
    assert date.status == "supported"


# Two pages of one agreement: page 1 prints "put" beside the fee; page 2 states who signed the
# invoice. A drafter's "put a name to" is the signing, in other words.
AGREEMENT = [
    """MASTER TRANSPORTATION AGREEMENT
Gideon Quigley surveyed the delivery receipt on 2 May 2025.
Quigley put the detention fee at $362,718.32.
Agreement - Page 1 of 2""",
    """MASTER TRANSPORTATION AGREEMENT (continued)
Entry of May 17, 2024: Hesper Ashgrove signed the detention invoice.
The parties reserve all rights under the agreement.
Agreement - Page 2 of 2""",
]


def test_a_light_verb_is_no_fact_a_page_must_carry() -> None:
    # "put" is on page 1 only, which made it the sentence's rarest word; it says nothing of its
    # own ("put a name to", "made a payment", "took delivery"), so the page that names the
    # person and the invoice is the one the sentence is about.
    index = _index(AGREEMENT)
    text = "The documents confirm that Ashgrove put a name to the detention invoice (HLD000001)."
    wrong = _findings(text, index)["HLD000001"]
    assert wrong.status == "unsupported"
    assert "HLD000002" in wrong.message

    text = "The documents confirm that Ashgrove put a name to the detention invoice (HLD000002)."
    assert _findings(text, index)["HLD000002"].status == "supported"


def test_a_pin_to_another_holding_in_the_same_words_is_wrong_however_common_they_are() -> None:
    # Page 411 states another holding in the words of page 410's but two ("tenant" for
    # "landlord", "deposit" for "rent"), and a rent ledger makes those two common in the
    # packet: page 410 states the draft's sentence whole, page 411 lacks two of its words and
    # holds nothing page 410 lacks.
    opinion = [
        f"{QUARRY_HEAD}\nA landlord that fails to give written notice of a defect waives the "
        "right to withhold the rent. *411 The judgment is affirmed in part.",
        "QUARRY v. OSTRANDER\nWe turn to the remedy. A tenant that fails to give written notice "
        "of a defect waives the right to withhold the deposit.",
    ]
    ledger = [f"RENT LEDGER\nThe landlord entered the rent for month {k}." for k in (1, 2, 3)]
    records = [
        PageRecord(n, 1, "quarry.pdf", n, (f"OP{n:04d}",), text, "text_layer", None, "public")
        for n, text in enumerate(opinion, 1)
    ] + [
        PageRecord(
            2 + k, 2, "ledger.pdf", k, (f"OP{2 + k:04d}",), text, "text_layer", None, "public"
        )
        for k, text in enumerate(ledger, 1)
    ]
    index = PacketIndex.build(records)
    wrong = _pinned_to_411(
        "A landlord that fails to give written notice of a defect waives the right to withhold "
        "the rent.",
        index,
    )
    assert wrong.status == "unsupported"
    assert (
        wrong.message == "page 411 of the opinion does not carry 'landlord', 'rent'; page 410 does"
    )


# A ledger of two pages: page 1 prints the CAM reconciliation beside another person; page 2
# names who granted it. The draft's verb is neither page's ("allowed").
LEDGER = [
    """RENT LEDGER
Caspian Valderrama refused the move-out inspection on 24 March 2020.
A CAM reconciliation charge of $18,250.00 was recorded against it.
Rent ledger - Page 1 of 2""",
    """RENT LEDGER (continued)
Entry of February 24, 2019: Calla Castellanos granted the CAM reconciliation.
The tenants asked for the late fee to be waived.
Rent ledger - Page 2 of 2""",
]


def test_a_page_that_never_prints_the_sentences_name_loses_to_the_neighbour_that_does() -> None:
    index = _index(LEDGER)
    text = "Castellanos allowed the CAM reconciliation (HLD000001)."
    wrong = _findings(text, index)["HLD000001"]
    assert wrong.status == "unsupported"
    assert wrong.message == "the cited page HLD000001 does not carry 'castellanos'; HLD000002 does"
    right = _findings(text.replace("HLD000001", "HLD000002"), index)["HLD000002"]
    assert right.status == "supported"


def test_one_word_the_packet_prints_in_lower_case_is_no_name() -> None:
    # "Tenants" opens the sentence with a capital, but the packet prints it "tenants": one
    # common word that the neighbour adds is no sign of the wrong page.
    index = _index(LEDGER)
    text = "Tenants allowed the CAM reconciliation (HLD000001)."
    assert _findings(text, index)["HLD000001"].status == "supported"
