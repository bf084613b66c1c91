"""Forms that the twenty-third session's held-out round showed (an EEOC position statement on
an exhibit binder, a Minnesota appeal, a New York Commercial Division motion), each tested on
text of our own from the rule it follows:

- a binder's tab ("Tab 7 at 3", "(See Tab 12.)"): the document that prints or is named by that
  tab, else the binder's document in that place, as an exhibit of a packet that labels none;
  a signal before an exhibit's label ("(See Ex. 4.)") is no part of it;
- Minnesota's transcript ("T. 45" the transcript production's page; "T. II 5" and "2T. 5"
  volume II's page 5, which the volume's file names);
- New York's e-filed record ("NYSCEF Doc. No. 45, at 3"): the third page stamped "NYSCEF DOC.
  NO. 45" at its head.
"""

from apps.verification.checks import verify_text
from apps.verification.claims import extract_claims
from tests.verification.packets import labelled_index, transcript_page


def _findings(text: str, index, prefixes: list[str]) -> dict[str, str]:
    claims = extract_claims(text, bates_prefixes=prefixes)
    return {f.claim.text: f.status for f in verify_text(text, claims, index)}


BINDER = [
    ("01-job-description.pdf", [("RESP-0001201", "JOB DESCRIPTION\nThe huddle starts at 5:30.")]),
    (
        "02-attendance-policy.pdf",
        [
            ("RESP-0001202", "ATTENDANCE POLICY\nA tardy counts half a point."),
            ("RESP-0001203", "ATTENDANCE POLICY\nTermination follows at eight points."),
        ],
    ),
    ("03-warning.pdf", [("RESP-0001204", "FINAL WARNING\nMs. Lund reached six points.")]),
]


def test_a_binders_tab_is_its_document_in_that_place() -> None:
    index = labelled_index(BINDER)
    text = (
        "A tardy counts half a point (Tab 2 at 1). Termination follows at eight points (Tab "
        "2, p. 2). Ms. Lund reached six points (Tab 3 at 1). The huddle starts at 5:30 (Tab 2 "
        "at 1). Ms. Lund never asked for leave. (See Tab 9.) Ms. Lund reached six points. "
        "(See Ex. 3.)"
    )
    claims = extract_claims(text, bates_prefixes=["RESP-"])
    found = [(f.claim.text, f.status) for f in verify_text(text, claims, index)]

    assert [(t, s) for t, s in found if t.startswith(("Tab", "Ex"))] == [
        ("Tab 2 at 1", "supported"),
        ("Tab 2, p. 2", "supported"),
        ("Tab 3 at 1", "supported"),
        ("Tab 2 at 1", "unsupported"),  # the huddle is tab 1's
        ("Tab 9", "unsupported"),  # three documents: no ninth
        ("Ex. 3", "supported"),  # after "See": the exhibit, not the signal
    ]


def test_a_tab_a_document_prints_is_that_document_wherever_it_stands() -> None:
    index = labelled_index(
        [
            ("12-solicitation.pdf", [("AR1200", "[AR Tab 12]\nSECTION M\nPrice is weighed.")]),
            ("14-worksheet.pdf", [("AR1210", "[AR Tab 14]\nWORKSHEET\nCastellan rated Good.")]),
        ]
    )
    text = "Castellan rated Good (Tab 14 at 1). Price is weighed (Tab 14 at 1)."
    claims = extract_claims(text, bates_prefixes=["AR"])
    statuses = [f.status for f in verify_text(text, claims, index) if f.claim.kind == "record_cite"]

    # (the packet's second document, named by the tab it prints, not its 14th)
    assert statuses == ["supported", "unsupported"]


def _volume(filename: str, head: str, labels: list[str], lines: dict) -> tuple:
    return (
        filename,
        [
            (label, transcript_page(head, k + 1, lines.get(k + 1, {})))
            for k, label in enumerate(labels)
        ],
    )


def test_minnesotas_transcript_by_page_and_by_volume() -> None:
    index = labelled_index(
        [
            ("01-order.pdf", [("A0001", "ORDER\nThe contract was cancelled on June 1, 2023.")]),
            _volume(
                "12-trial-transcript-vol-1.pdf",
                "COURT TRIAL - VOLUME I",
                ["TR0001", "TR0002"],
                {2: {4: "A. We mailed the check on March 28."}},
            ),
            _volume(
                "13-trial-transcript-vol-2.pdf",
                "COURT TRIAL - VOLUME II",
                ["TR0003", "TR0004"],
                {2: {6: "A. I never received that check."}},
            ),
        ]
    )
    text = (
        "The Solheims mailed the check on March 28 (T. 2). Rasmussen never received that "
        "check. (T. II 2.) He never received the check (2T. 2). The contract was cancelled "
        "(A. 1). Rasmussen never received that check (T. II 1). The Solheims mailed the check "
        "(T. 9)."
    )
    found = _findings(text, index, ["A", "TR"])

    assert found["T. 2"] == "supported"
    assert found["T. II 2"] == "supported"  # volume II's page 2 (TR0004), not TR0002
    assert found["2T. 2"] == "supported"
    assert found["A. 1"] == "supported"
    assert found["T. II 1"] != "supported"  # the check is on page 2
    assert found["T. 9"] == "unsupported"  # the transcript has four pages


def _filed(entry: int, texts: list[str], first: int) -> list[tuple[str, str]]:
    head = (
        "FILED: NEW YORK COUNTY CLERK 03/15/2024 05:41 PM         INDEX NO. 651847/2023\n"
        f"NYSCEF DOC. NO. {entry}                                 RECEIVED NYSCEF: 03/15/2024\n"
    )
    return [(f"CPI{first + k:07d}", head + text) for k, text in enumerate(texts)]


def test_new_yorks_e_filed_record_by_document_number_and_its_pages_in_order() -> None:
    index = labelled_index(
        [
            (
                "01-policy.pdf",
                _filed(39, ["DECLARATIONS\nPolicy period one year.", "The vacancy clause."], 1),
            ),
            ("02-notice.pdf", _filed(40, ["LOSS NOTICE\nThe fire was reported April 24."], 3)),
        ]
    )
    text = (
        "The policy has a vacancy clause (NYSCEF Doc. No. 39, at 2). The fire was reported "
        "April 24 (NYSCEF Doc. No. 40 at 1). The policy period was one year (NYSCEF Doc. No. 39 "
        "at 2). The fire was reported late (NYSCEF Doc. No. 45 at 1)."
    )
    found = _findings(text, index, ["CPI"])

    assert found["NYSCEF Doc. No. 39, at 2"] == "supported"
    assert found["NYSCEF Doc. No. 40 at 1"] == "supported"
    assert found["NYSCEF Doc. No. 39 at 2"] == "unsupported"  # the period is on its page 1
    assert found["NYSCEF Doc. No. 45 at 1"] != "supported"  # no document 45 in the packet
