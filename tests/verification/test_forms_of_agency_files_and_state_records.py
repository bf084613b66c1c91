"""Forms that the twenty-third session's second held-out round showed (an appeal to the Merit
Systems Protection Board, an Arizona appeal, a Georgia appeal), each tested on text of our own
from the rule it follows:

- an agency's appeal file by tab, subtab and page ("IAF, Tab 15 at 2", "IAF, Tab 9, Subtab 4e
  at 2"), its hearing transcript by page ("HT at 45", "HT 45");
- an index of record's item ("IR 31 at 2"): the document that prints or is named by it;
  Arizona's reporter's transcript by day ("RT 3/5/24 at 43"); "(App. 2020)", Arizona's Court
  of Appeals in a case's parenthetical, is no page of an appendix stamped "APP", and no court
  of its own (courts-db reads "App." as Appomattox County's);
- an "Id." after a citation and its parallel in parentheses, Georgia's form ("352 Ga. App.
  414, 416 (873 SE2d 201) (2019)"): the case, in the reporter the packet holds.
"""

from apps.verification.checks import verify_text
from apps.verification.claims import extract_claims
from tests.verification.packets import labelled_index, transcript_page


def _findings(text: str, index, prefixes: list[str]) -> list[tuple[str, str]]:
    claims = extract_claims(text, bates_prefixes=prefixes)
    return [(f.claim.text, f.status) for f in verify_text(text, claims, index)]


def _hearing(filename: str, head: str, label: str, number: int, lines: dict) -> tuple:
    return (filename, [(label, transcript_page(head, number, lines))])


def test_an_agency_appeal_file_by_tab_subtab_and_page_and_its_hearing_transcript() -> None:
    index = labelled_index(
        [
            ("IAF-Tab-09-Subtab-4d-written-reply.pdf", [("AF-000011", "IAF Tab 9\nREPLY")]),
            (
                "IAF-Tab-09-Subtab-4e-fact-finding-report.pdf",
                [
                    ("AF-000013", "IAF Tab 9\nFACT-FINDING REPORT\nScope of the inquiry."),
                    ("AF-000014", "IAF Tab 9\nThe badge log shows no entry on March 3."),
                ],
            ),
            (
                "IAF-Tab-15-order.pdf",
                [
                    ("AF-000023", "IAF Tab 15\nORDER\nThe hearing is set."),
                    ("AF-000024", "IAF Tab 15\nThe parties stipulated to the timecards."),
                ],
            ),
            _hearing(
                "hearing-transcript-2023-11-14-excerpts.pdf",
                "Delgado v. Department of Veterans Affairs - Hearing",
                "HRG-00302",
                45,
                {7: "A. I signed the timecard for March 3."},
            ),
        ]
    )
    text = (
        "The badge log shows no entry on March 3 (IAF, Tab 9, Subtab 4e at 2). The parties "
        "stipulated to the timecards (IAF, Tab 15 at 2). He signed the timecard for March 3 "
        "(HT at 45). He signed the timecard (HT 45). The badge log shows no entry (IAF, Tab 9, "
        "Subtab 4d at 1). The parties stipulated to the timecards (IAF, Tab 15 at 1)."
    )
    found = _findings(text, index, ["AF-", "HRG-"])

    assert [(t, s) for t, s in found if t.startswith(("IAF", "HT"))] == [
        ("IAF, Tab 9, Subtab 4e at 2", "supported"),
        ("IAF, Tab 15 at 2", "supported"),
        ("HT at 45", "supported"),
        ("HT 45", "supported"),
        ("IAF, Tab 9, Subtab 4d at 1", "unsupported"),  # the written reply, not the report
        ("IAF, Tab 15 at 1", "unsupported"),  # the stipulation is on its page 2
    ]


def test_an_index_of_records_items_and_a_reporters_transcript_by_day() -> None:
    index = labelled_index(
        [
            ("01-ir07-purchase-agreement.pdf", [("APP0001", "IR 7\nPURCHASE AGREEMENT")]),
            (
                "04-ir31-inspection-report.pdf",
                [
                    ("APP0010", "IR 31\nINSPECTION REPORT\nScope."),
                    ("APP0011", "The stucco was five-eighths of an inch thick."),
                ],
            ),
            _hearing(
                "09-rt-2024-03-05-trial-day1.pdf",
                "Trevino v. Copper Mesa Homes - Reporter's Transcript",
                "TRV00205",
                43,
                {12: "A. The stucco cracked within a year."},
            ),
        ]
    )
    text = (
        "The stucco was five-eighths of an inch thick (IR 31 at 2). The stucco cracked within "
        "a year (RT 3/5/24 at 43:12). The stucco was five-eighths of an inch thick (IR 7 at 1). "
        "A builder warrants its work. Halvorsen v. Desert Crest Homes, 248 Ariz. 311, 315 "
        "(App. 2020)."
    )
    found = _findings(text, index, ["APP", "TRV"])
    cites = [(t, s) for t, s in found if t.startswith(("IR", "RT", "App"))]

    assert cites == [
        ("IR 31 at 2", "supported"),
        ("RT 3/5/24 at 43:12", "supported"),
        ("IR 7 at 1", "unsupported"),
    ]  # and "(App. 2020)" is no appendix page
    checks = {
        f.check
        for f in verify_text(text, extract_claims(text, bates_prefixes=["APP", "TRV"]), index)
        if f.claim.kind == "case_citation"
    }
    assert checks == {"case_in_packet"}  # not in the packet; its court no county's


def test_an_id_after_a_parallel_in_parentheses_is_the_case_the_packet_holds() -> None:
    head = "352 Ga. App. 414          KESSLER v. PIEDMONT FOODS, INC."
    index = labelled_index(
        [
            (
                "09-kessler-v-piedmont-foods.pdf",
                [
                    ("R-0125", f"{head}\n\nA proprietor is liable for what it knew."),
                    (
                        "R-0126",
                        "352 Ga. App. 415\n\nA proprietor defeats that showing by proving a "
                        "reasonable inspection procedure that was carried out.",
                    ),
                ],
            )
        ]
    )
    text = (
        "A proprietor is liable for what it knew. Kessler v. Piedmont Foods, Inc., 352 Ga. "
        "App. 414, 414 (873 SE2d 201) (2019). A proprietor defeats that showing by proving a "
        "reasonable inspection procedure that was carried out. Id. The owner's duty ends "
        "there. Id. at 999."
    )
    ids = [(t, s) for t, s in _findings(text, index, ["R-"]) if t.startswith("Id.")]

    assert ids == [("Id.", "supported"), ("Id. at 999", "unsupported")]
