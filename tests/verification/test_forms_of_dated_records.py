"""Forms that the twenty-second session's second held-out round showed (a Colorado appeal, a
Washington appeal), each tested on text of our own from the rule it follows:

- a date after a production's prefix is no label ("TR 3/5/24" is no page 3 of "TR");
- Colorado's record (C.A.R. 28(e)): the court file by its prefix and page ("CF, p. 222",
  "CF, pp. 235-38"), transcripts by their hearing's day and page ("TR 3/5/24, p. 43:16-17",
  "Tr. 3/5/24, pp. 45-46"): that day's transcript, at the page it prints;
- Washington's report of proceedings by its day (RAP 10.3: "RP (Mar. 5, 2024) at 44"): the
  file naming "rp" and that day, at the page it prints;
- a public-domain citation ("2021 COA 87, ¶ 12") names its opinion whatever reporter pages
  the opinion prints ("495 P.3d 612"); its pins are paragraphs.
"""

from apps.verification.checks import verify_text
from apps.verification.claims import extract_claims
from tests.verification.packets import labelled_index, transcript_page

COURT_FILE = [
    ("CF222", "FINE LETTER\nThe Association fined the owners $500 on June 2, 2023."),
    ("CF223", "BOARD MINUTES\nThe board tabled the pergola application."),
]


def _day(filename: str, head: str, labels: list[str], first: int, lines: dict) -> tuple:
    return (
        filename,
        [
            (label, transcript_page(head, first + k, lines.get(first + k, {})))
            for k, label in enumerate(labels)
        ],
    )


def _findings(text: str, index, prefixes: list[str]) -> list[tuple[str, str]]:
    claims = extract_claims(text, bates_prefixes=prefixes)
    return [(f.claim.text, f.status) for f in verify_text(text, claims, index)]


def test_colorados_court_file_and_transcripts_by_day() -> None:
    index = labelled_index(
        [
            ("05-fine-letters.pdf", COURT_FILE),
            _day(
                "09-hearing-transcript-2024-03-05.pdf",
                "Aspen Hollow v. Whitcombe - Bench Trial - March 5, 2024",
                ["TR43", "TR44"],
                43,
                {
                    43: {16: "A. The board never voted on the pergola.", 17: "Q. Never?"},
                    44: {2: "A. We fined them five hundred dollars."},
                },
            ),
        ]
    )
    text = (
        "The board never voted on the pergola (TR 3/5/24, p. 43:16-17). The Association "
        "fined the owners $500 on June 2, 2023. CF, p. 222. The board tabled the pergola "
        "application (CF, pp. 222-23). The board never voted on the pergola. TR 3/5/24, p. "
        "44:2. The board tabled it. CF, p. 241."
    )
    found = _findings(text, index, ["CF", "TR"])
    cites = [(t, s) for t, s in found if t.startswith(("TR", "CF"))]

    assert [text for text, _ in cites] == [
        "TR 3/5/24, p. 43:16-17",
        "CF, p. 222",
        "CF, pp. 222-23",
        "TR 3/5/24, p. 44:2",
        "CF, p. 241",
    ]
    status = dict(cites)
    for right in ("TR 3/5/24, p. 43:16-17", "CF, p. 222", "CF, pp. 222-23"):
        assert status[right] == "supported", right
    assert status["TR 3/5/24, p. 44:2"] != "supported"  # line 2 of page 44: the fine, not the vote
    assert status["CF, p. 241"] == "unsupported"


def test_washingtons_report_of_proceedings_by_day() -> None:
    index = labelled_index(
        [
            _day(
                "08-rp-vol1-2024-03-05.pdf",
                "Farrand v. Cedar Hollow - Verbatim Report of Proceedings",
                ["1 RP 43", "1 RP 44"],
                43,
                {43: {5: "A. The mold was behind the bedroom wall."}, 44: {3: "A. I moved out."}},
            ),
            _day(
                "09-rp-vol2-2024-03-06.pdf",
                "Farrand v. Cedar Hollow - Verbatim Report of Proceedings",
                ["2 RP 113"],
                113,
                {113: {9: "A. The deposit statement went out in May."}},
            ),
        ]
    )
    text = (
        "The mold was behind the bedroom wall. RP (Mar. 5, 2024) at 43. The deposit "
        "statement went out in May. RP (Mar. 6, 2024) at 113. She moved out after the mold "
        "was found. RP (Mar. 5, 2024) at 14."
    )
    found = dict(_findings(text, index, ["1 RP ", "2 RP "]))

    assert found["RP (Mar. 5, 2024) at 43"] == "supported"
    assert found["RP (Mar. 6, 2024) at 113"] == "supported"
    assert found["RP (Mar. 5, 2024) at 14"] != "supported"


def test_a_public_domain_citation_names_its_opinion_whatever_pages_it_prints() -> None:
    head = "PINECREST MEADOWS v. HALVORSEN          Colo. App.\nCite as 495 P.3d 612"
    index = labelled_index(
        [
            (
                "10-opinion-pinecrest.pdf",
                [
                    (
                        "AUTH001",
                        f"{head}          612\n\n2021 COA 87\n\n¶ 12 An association that "
                        "does not act on a complete application within sixty days approves "
                        "it.\n¶ 13 The owners bear no burden of proving conformity.",
                    ),
                ],
            )
        ]
    )
    text = (
        "An association that does not act on a complete application within sixty days "
        "approves it. Pinecrest Meadows Owners Ass'n v. Halvorsen, 2021 COA 87, ¶ 12."
    )
    (finding,) = [(t, s) for t, s in _findings(text, index, ["AUTH"]) if t.startswith("Pinecrest")]
    assert finding[1] == "supported"
