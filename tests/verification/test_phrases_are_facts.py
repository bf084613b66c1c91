"""Support is specific (issue 20 req 1): a name or a term of two words is one fact. A cited
page that holds a draft's two-word name or term only apart ("Okonjo" in one sentence, "Marguerite
wrote" in another; "the minimum royalty" and "a report") carries less of the sentence than a
page that prints it whole, and loses to a neighbour that states the sentence with it. A phrase
the cited page prints adds nothing to its words, and a name followed by its verb is no phrase.
Packets of our own, not the evaluation's sentences."""

from apps.verification.checks import Finding
from apps.verification.index import PacketIndex
from tests.verification.packets import findings_by_claim, numbered_index

PREFIX = "PHR"

# A site file of two pages sharing their people and vocabulary. Page 1 states what Marguerite
# Okonjo did with the drainage permit; page 2 names her in full in one sentence and the drainage
# permit in another, where she is "Marguerite" only.
SITE_FILE = [
    """SITE FILE - BRAMLEY QUARRY
Entry of March 4, 2020: Marguerite Okonjo escalated the east drainage permit.
The haul road was graded by Fenwick Civil.
Site file - Page 1 of 2""",
    """SITE FILE - BRAMLEY QUARRY (continued)
On April 9, 2020, Marguerite Okonjo, site lead, returned the crane schedule.
Marguerite wrote: we must hold the crane schedule until the east drainage permit is
stamped.
Site file - Page 2 of 2""",
]

# Other documents of the packet, so that the words above are as rare as in a real packet.
OTHER = [
    """WEIGHBRIDGE LOG
Tickets 40-77 were issued to Fenwick Civil for the haul road, signed by M. Okonjo.
Weighbridge log - Page 1 of 1""",
    """SAFETY MEMO
Blasting is suspended on Sundays. Ear protection is required past the gate.
Safety memo - Page 1 of 1""",
]

# A licence file: the cited page names Tomas Brandt and a royalty ("the minimum royalty") and
# no report; another document states that he delivered the royalty report.
LICENCE = [
    """LICENCE LEDGER
On 06/01/2022, Tomas Brandt, controller, audited the minimum royalty.
All figures are stated in euros.
Ledger - Page 1 of 1""",
]
REPORTS = [
    """REPORTING LETTER
Tomas Brandt delivered the royalty report to the licensor on 3 May 2022.
Letter - Page 1 of 1""",
]


def _index(*documents: list[str]) -> PacketIndex:
    return numbered_index(PREFIX, *documents)


def _findings(text: str, index: PacketIndex) -> dict[str, Finding]:
    return findings_by_claim(text, index, PREFIX)


def test_a_name_held_apart_loses_to_a_neighbour_stating_it_whole() -> None:
    # The draft's verb is the page's in other words ("raised" for "escalated"): no page holds
    # it, so the name and the term decide.
    index = _index(SITE_FILE, *[[page] for page in OTHER])
    wrong = _findings("Marguerite Okonjo raised the east drainage permit (PHR000002).", index)
    assert wrong["PHR000002"].status == "unsupported"
    assert "PHR000001" in wrong["PHR000002"].message

    right = _findings("Marguerite Okonjo raised the east drainage permit (PHR000001).", index)
    assert right["PHR000001"].status == "supported"


def test_a_term_held_apart_is_a_fact_the_cited_page_lacks() -> None:
    index = _index(LICENCE, REPORTS, *[[page] for page in OTHER])
    wrong = _findings("Brandt handed over the royalty report (PHR000001).", index)["PHR000001"]
    assert wrong.status == "unsupported"
    assert "PHR000002" in wrong.message
    assert "royalty report" in wrong.message

    right = _findings("Brandt handed over the royalty report (PHR000002).", index)["PHR000002"]
    assert right.status == "supported"


def test_a_page_stating_the_fact_in_other_words_keeps_its_cite() -> None:
    # Page 1 states it with the term's words in another order ("the permit for drainage");
    # page 2 prints the term whole, in a sentence about something else: no lead.
    pages = [
        """SITE FILE - BRAMLEY QUARRY
Entry of March 4, 2020: Okonjo stamped the permit for drainage.
Site file - Page 1 of 2""",
        """SITE FILE - BRAMLEY QUARRY (continued)
The drainage permit was posted at the gate by the county.
Site file - Page 2 of 2""",
    ]
    index = _index(pages, *[[page] for page in OTHER])
    found = _findings("Okonjo stamped the drainage permit (PHR000001).", index)["PHR000001"]
    assert found.status == "supported"


def test_a_name_and_its_verb_are_no_phrase() -> None:
    # "Northcott recorded" is a name and a verb: page 1, where Northcott's name and the scan
    # stand together, is the right page although "recorded" is printed on page 2 only.
    pages = [
        """IMAGING FILE
On 2 May 2023, Gideon Northcott, radiologist, documented the CT scan.
Imaging file - Page 1 of 2""",
        """IMAGING FILE (continued)
The discharge was recorded by the ward clerk.
Imaging file - Page 2 of 2""",
    ]
    index = _index(pages, *[[page] for page in OTHER])
    wrong = _findings("Northcott recorded the CT scan (PHR000002).", index)["PHR000002"]
    assert wrong.status == "unsupported"
    assert "PHR000001" in wrong.message
