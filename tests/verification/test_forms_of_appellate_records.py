"""Forms that the twenty-first session's second held-out round showed (appeals on a
Massachusetts record appendix, a California clerk's and reporter's transcript, a Texas clerk's
and reporter's record), each tested on text of our own from the rule it follows:

- a record appendix numbered through its volumes is cited by volume and page ("R.A. II:34",
  "R.A. I:20-21") or by page alone and unpadded ("RA 31"): the page is the production's number;
- a transcript cited by a Roman volume and its page ("Tr. II:112") is that page of the
  transcript; where no file names the volume, of the one transcript holding them all;
- an exhibit label ending a file's name ("04-emails-trial-ex-7.pdf") or opening a head line
  before a column gap ("PLAINTIFF'S TRIAL EXHIBIT 7      Civil Action No. ...") labels it;
- a tracking number's groups ("Certified Mail No. 7019 2280 0001 4471 3390") are one number;
- "(*Id.* at p. 1090.)": a pin after Id.'s emphasis is its pin;
- a bold title's note ("**APPELLANT'S OPENING BRIEF** (working draft 4, not for filing)")
  is no cite;
- an answer is read with its question: the lines cited from "A. Call it $46,000." hold the
  question's "What would it cost to redo the north and west walls?";
- a Bates page:line cite running onto a later page ("RR 106:21-107:12") names both pages.
"""

from apps.verification.checks import Finding
from apps.verification.claims import extract_claims
from tests.verification.packets import findings_by_claim, labelled_index, transcript_page

APPENDIX = [
    ("RA031", "FINDINGS\n12. The units serving Suite 410 were installed in 2004.\nR.A. 031"),
    ("RA032", "13. Ferncliff could not use the suite for four months.\nR.A. 032"),
]
EMAILS = [
    (
        "RA012",
        "PLAINTIFF'S TRIAL EXHIBIT 7                      Civil Action No. 2281CV01877\n\n"
        "From: Leland Prout\nThe rooftop units serving the fourth floor were replaced in 2019.",
    ),
]
TRANSCRIPT = [
    (
        "RA022",
        "Ferncliff v. Harwick Mill - Day 2\nVolume II                                  Page 112\n"
        + "\n".join(
            f"{n:2d}  {line}"
            for n, line in enumerate(
                [
                    "Q.  When were the units installed?",
                    "A.  In 2004, as far as I know.",
                    *[""] * 23,
                ],
                1,
            )
        ),
    ),
]


def _massachusetts(text: str) -> dict[str, Finding]:
    index = labelled_index(
        [
            ("04-emails-trial-ex-7.pdf", EMAILS),
            ("09-trial-transcript-excerpts.pdf", TRANSCRIPT),
            ("10-findings-and-order.pdf", APPENDIX),
        ]
    )
    return findings_by_claim(text, index, "RA")


def test_a_record_appendix_by_volume_and_page_a_transcript_volume_and_exhibits() -> None:
    findings = _massachusetts(
        "The units serving Suite 410 were installed in 2004. (R.A. II:31.) Ferncliff could not "
        "use the suite for four months (RA 32). The units were installed in 2004. (Tr. II:112.) "
        "Prout wrote that the rooftop units were replaced in 2019. (Ex. 7.) The suite was "
        "unusable for four months. (R.A. II:58.)"
    )
    for cite in ("R.A. II:31", "RA 32", "Tr. II:112", "Ex. 7"):
        assert findings[cite].status == "supported", (cite, findings[cite].message)
    assert findings["Ex. 7"].page is not None and findings["Ex. 7"].page.bates == ("RA012",)
    assert findings["R.A. II:58"].status == "unsupported", findings["R.A. II:58"].message


def test_a_tracking_numbers_groups_are_one_number() -> None:
    text = "It served its demand by mail (Certified Mail No. 7019 2280 0001 4471 3390). Next."
    claims = extract_claims(text, bates_prefixes=["RA"])
    assert [c.text for c in claims if c.kind == "not_a_record_cite"] == [
        "Certified Mail No. 7019 2280 0001 4471 3390"
    ]


OPINION = [
    (
        f"AUTH000{k}",
        f"ARDMORE v. QUINTESSA HOMES, LLC          {page}\n     Cite as 91 Cal.App.5th 1088\n\n"
        + body,
    )
    for k, (page, body) in enumerate(
        [
            (1088, "The owners sued the builder over stucco."),
            (1089, "The trial court awarded the full plaster cost."),
            (1090, "Notice of one defect is not notice of a different defect in another part."),
        ],
        1,
    )
]


def test_a_pin_after_id_s_emphasis_and_a_bold_titles_note() -> None:
    text = (
        "**APPELLANT'S OPENING BRIEF** (working draft 4, not for filing)\n\n"
        "The court awarded the plaster cost. (*Ardmore v. Quintessa Homes, LLC* (2023) 91 "
        'Cal.App.5th 1088, 1089.) It held: "Notice of one defect is not notice of a different '
        'defect in another part." (*Id.* at p. 1090.)'
    )
    claims = extract_claims(text, bates_prefixes=["RT"])
    assert not [c for c in claims if c.kind == "not_a_record_cite"]
    findings = findings_by_claim(text, labelled_index([("12-ardmore.pdf", OPINION)]), "RT")
    (pinned,) = [f for t, f in findings.items() if t.endswith("at p. 1090")]
    assert pinned.status == "supported", pinned.message


REPORTER = [
    (
        "RT0010",
        transcript_page(
            "FARROW - CROSS",
            10,
            {
                14: "Q.  How many core samples did you take?",
                15: "A.  Six, on the north and west elevations.",
                24: "Q.  What would it cost to redo only the north and west walls?",
            },
        ),
    ),
    (
        "RT0011",
        transcript_page(
            "FARROW - CROSS",
            11,
            {
                1: "A.  I'd have to price it. Call it $46,000.",
                3: "Q.  Your roof number, that's what Sierra Crest charged?",
                4: "A.  Yes, I used their invoice.",
            },
        ),
    ),
]


def test_an_answer_is_read_with_its_question_and_lines_run_onto_a_later_page() -> None:
    index = labelled_index([("10-rt-vol2.pdf", REPORTER)])
    findings = findings_by_claim(
        "He put the cost to redo the north and west walls at $46,000. (2 RT 11:1.) He "
        "priced the north and west walls. (2 RT 10:24-11:1.)",
        index,
        "RT",
    )
    assert findings["RT 11:1"].status == "supported", findings["RT 11:1"].message
    across = findings["RT 10:24-11:1"]
    assert across.status == "supported", across.message
    assert across.claim.bates[0].first == 10 and across.claim.bates[0].last == 11
