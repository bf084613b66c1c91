"""Forms that the twenty-first session's reading of a held-out Pennsylvania appeal showed, each
tested on text of our own from the rule it follows:

- a reproduced record numbers its pages with a small letter ("258a", Pa.R.A.P. 2173), cited
  "R.R. 258a-59a": the letter is no part of the number, and a range's end carries it too;
- notes of testimony are cited by the hearing's day and the transcript's page ("N.T.,
  3/15/2023, at 203"): the transcript whose file names that day, at the page it prints (a
  trial transcript prints it alone at the right, under its caption's line); the day is the
  cite's, no date the sentence claims; a transcript cited by its pages alone is judged on
  those pages' lines;
- a brief cited by the party the draft's own title names ("Appellant's Br. at 9" in the
  appellant's reply, "Opp. Br. at 12" in the opposer's) is the drafting side's own argument,
  no record; another party's brief is left alone;
- a section every appellate brief has ("Statement of Questions Involved", "See Argument
  II.B", "Appellant's Br., Statement of the Case, Part B.3") where a record cite belongs is a
  part of a brief; a record's document of a like name with its pin stays a record cite;
- a serial's number by its label alone ("S/N 22-0418-77") where a record cite belongs is no
  record cite; a part's number naming an item of a list ("a plug assembly (P/N 40-1120-04), a
  tether ...") says which thing it is.
"""

from apps.verification.checks import Finding
from apps.verification.claims import extract_claims
from tests.verification.packets import findings_by_claim, labelled_index

_CAPTION = "OBERHOLTZER v. KEELSON LADDER CO. - JURY TRIAL, DAY 3 - MARCH 15, 2023"


def _trial_page(number: int, lines: dict[int, str], rr: int) -> str:
    body = "\n".join(f"{n:2d}    {lines.get(n, '')}" for n in range(1, 26))
    return f"{_CAPTION}\n{' ' * 70}{number}\n\n{body}\n\n{' ' * 40}{rr}a"


VERDICT = [
    ("RR-0258", "VERDICT SLIP\nQUESTION 1: Was the ladder defective in design?  YES\n258a"),
    (
        "RR-0259",
        "VERDICT SLIP (continued)\nQUESTION 5: damages of Raymond Oberholtzer   TOTAL "
        "$1,907,428.41\nQUESTION 6: consortium of Linda Oberholtzer   $95,000.00\n"
        "Date: 3/15/23\n259a",
    ),
]
TRIAL = [
    (
        "RR-0252",
        _trial_page(
            203,
            {
                16: "Q.  What about Dr. Pryor's ten-degree test?",
                17: "A.  It is not a recognized configuration. No user standing between the",
                18: "    rails can produce a ten-degree side load.",
            },
            252,
        ),
    ),
    (
        "RR-0253",
        _trial_page(
            204,
            {
                2: "Q.  And the cost of his alternative design?",
                3: "A.  Keelson's cost accounting puts it at six dollars forty per unit.",
            },
            253,
        ),
    ),
]


def _record(text: str) -> dict[str, Finding]:
    index = labelled_index(
        [("10-verdict-slip.pdf", VERDICT), ("08-nt-2023-03-15-excerpt.pdf", TRIAL)]
    )
    return findings_by_claim(text, index, "RR-")


def test_a_reproduced_records_lettered_pages_and_ranges() -> None:
    text = (
        "The jury awarded $1,907,428.41 to Mr. Oberholtzer and $95,000.00 to his wife. (R.R. "
        "258a-59a.) It found the design defective. (R.R. 258a.)"
    )
    cites = [
        c.text for c in extract_claims(text, bates_prefixes=["RR-"]) if c.kind == "record_cite"
    ]
    assert cites == ["R.R. 258a-59a", "R.R. 258a"]
    findings = _record(text)
    assert findings["R.R. 258a-59a"].status == "supported", findings["R.R. 258a-59a"].message
    for amount in ("$1,907,428.41", "$95,000.00"):
        assert findings[amount].status == "supported", findings[amount].message


def test_notes_of_testimony_by_the_day_and_the_page_the_transcript_prints() -> None:
    text = (
        "Ms. Szabo testified that no user standing between the rails can produce a ten-degree "
        "side load. (N.T., 3/15/2023, at 203.) She called the test unrecognized. (N.T. "
        "3/15/23, 207.)"
    )
    claims = extract_claims(text, bates_prefixes=["RR-"])
    assert not [c for c in claims if c.kind == "date"]  # the day names the transcript
    findings = _record(text)
    right = findings["N.T., 3/15/2023, at 203"]
    assert right.status == "supported" and right.page is not None, right.message
    assert right.page.bates == ("RR-0252",)
    past = findings["N.T. 3/15/23, 207"]
    assert past.status == "unsupported" and "no page 207" in past.message, past.message


def test_the_cost_on_the_next_page_of_the_transcript_moves_the_cite() -> None:
    findings = findings_by_claim(
        "She put the alternative design at six dollars forty per unit in Keelson's cost "
        "accounting. (N.T., 3/15/2023, at 203.)",
        labelled_index([("08-nt-2023-03-15-excerpt.pdf", TRIAL)]),
        "RR-",
    )
    wrong = findings["N.T., 3/15/2023, at 203"]
    assert wrong.status == "unsupported" and "204:" in wrong.message, wrong.message


REPLY = "**REPLY BRIEF FOR APPELLANT KEELSON LADDER COMPANY, INC.**\n\n"


def _not_cites(text: str) -> list[str]:
    claims = extract_claims(text, bates_prefixes=["RR-"])
    return [c.text for c in claims if c.kind == "not_a_record_cite"]


def test_the_drafting_partys_own_brief_is_no_record() -> None:
    text = (
        REPLY + "He never claimed otherwise. (Appellant's Br. at 9.) Appellees say he did. "
        "(Appellee's Br. at 12.) The record is set out in full. (Appellant's Br., Statement of "
        "the Case, Part B.3.)"
    )
    assert _not_cites(text) == [
        "Appellant's Br. at 9",
        "Appellant's Br., Statement of the Case, Part B.3",
    ]
    opposer = "# OPPOSER'S REPLY BRIEF\n\nBuyers act on impulse. Opp. Br. at 12. App. Br. at 4."
    assert _not_cites(opposer) == ["Opp. Br. at 12"]
    # With no title naming a party, a party's brief is left alone; nor is the party a title
    # answers the drafter's ("IN OPPOSITION TO DEFENDANT'S MOTION").
    assert _not_cites("He never claimed otherwise. (Appellant's Br. at 9.)") == []
    answering = (
        "# MEMORANDUM IN OPPOSITION TO DEFENDANT'S MOTION\n\nIt says so. (Def.'s Mem. at 4.)"
    )
    assert _not_cites(answering) == []


def test_a_briefs_sections_where_a_record_cite_belongs_are_its_own_parts() -> None:
    text = (
        "Keelson preserved the point. (Statement of Questions Involved; R.R. 258a.) The label "
        "played no part. (See Argument II.B.) The facts were agreed. (Joint Statement of "
        "Undisputed Facts ¶ 4.)"
    )
    assert _not_cites(text) == ["Statement of Questions Involved", "Argument II.B"]


def test_a_serial_number_is_no_cite_and_a_part_number_names_a_list_item() -> None:
    text = (
        "The incident ladder was never load-tested. (S/N 22-0418-77.) The system has a sealing "
        "plug assembly (P/N 40-1120-04), a tether (P/N 40-1131-01), and a sleeve."
    )
    assert _not_cites(text) == ["S/N 22-0418-77"]
