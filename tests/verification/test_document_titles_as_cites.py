"""A cite naming a packet document by its title (issue 20 req 1: decide from the packet's own
documents, never from a list of words). A title may hold a word the system's own work also
uses ("Discharge Summary", "Draft Schedule"): where every word of the cited name is in a packet
document's file name or title, the cite is that document's, checked as one; a reference that
names no packet document ("the earlier summary at 2") is still the system's own work. Packets
of our own, not the evaluation's sentences."""

from apps.verification.checks import Finding
from apps.verification.claims import extract_claims
from tests.verification.packets import findings_by_claim, text_index

PREFIX = "TTL"

DOCUMENTS = [
    (
        "01-admission-form.pdf",
        ["ADMISSION FORM\nThe patient, Ines Calloway, was admitted on May 3, 2022."],
    ),
    (
        "02-discharge-summary.pdf",
        [
            "DISCHARGE SUMMARY\nInes Calloway left the ward on May 9, 2022 with a walker.",
            "DISCHARGE SUMMARY (continued)\nA follow-up visit was set for June 14, 2022.",
        ],
    ),
    ("03-draft-schedule.pdf", ["DRAFT SCHEDULE\nThe crane is booked for the week of July 4."]),
]


def _cite(text: str, cite: str) -> Finding:
    return findings_by_claim(text, text_index(PREFIX, DOCUMENTS), PREFIX)[cite]


def test_a_title_holding_a_word_of_the_systems_own_work_is_a_record_cite() -> None:
    found = _cite(
        "A follow-up visit was set for June 14, 2022 (Discharge Summary at 2).",
        "Discharge Summary at 2",
    )
    assert found.status == "supported", found.message
    assert "02-discharge-summary.pdf" in found.message

    found = _cite("The crane is booked for July (Draft Schedule, p. 1).", "Draft Schedule, p. 1")
    assert found.status == "supported", found.message


def test_such_a_cite_is_checked_as_a_record_cite() -> None:
    # The right document, the wrong page: the neighbour carries the sentence.
    wrong = _cite(
        "A follow-up visit was set for June 14, 2022 (Discharge Summary at 1).",
        "Discharge Summary at 1",
    )
    assert wrong.status == "unsupported"
    assert wrong.check == "record_cite_page"
    # A page the document does not have.
    past = _cite("The walker was issued (Discharge Summary at 7).", "Discharge Summary at 7")
    assert past.status == "unsupported" and "no page 7" in past.message


def test_a_reference_naming_no_packet_document_is_still_the_systems_own_work() -> None:
    found = _cite("The patient left on May 9, 2022 (earlier summary at 2).", "earlier summary at 2")
    assert found.status == "unsupported"
    assert found.check == "system_generated_reference"
    # Words of a title spread over a document's first page do not make it its name.
    found = _cite("She used a walker (Walker Summary at 1).", "Walker Summary at 1")
    assert found.check == "system_generated_reference"


def test_a_citation_sentence_of_its_own_naming_a_document_is_read() -> None:
    # "Admission Form at 1." with no signal or parenthesis vouches for the sentence before.
    text = "Ines Calloway was admitted on May 3, 2022. Admission Form at 1."
    found = _cite(text, "Admission Form at 1")
    assert found.claim.kind == "record_cite"
    assert found.status == "supported", found.message
    assert "01-admission-form.pdf" in found.message

    wrong = _cite(
        "A follow-up visit was set for June 14, 2022.\nDischarge Summary at 1.",
        "Discharge Summary at 1",
    )
    assert wrong.status == "unsupported" and wrong.check == "record_cite_page"


def test_a_citation_sentence_of_its_own_naming_no_document_is_left_for_review() -> None:
    # It may be a case's short form or a time: not flagged, a person reads it.
    found = _cite("The walker was issued on May 9, 2022. Halvorsen at 4.", "Halvorsen at 4")
    assert found.status == "needs_review"
    # In running prose or in a sentence of its own words, no cite is read.
    text = "The crane arrived at 4. The meeting ended at 5."
    claims = extract_claims(text, bates_prefixes=[PREFIX])
    assert [c for c in claims if c.kind == "record_cite"] == []
