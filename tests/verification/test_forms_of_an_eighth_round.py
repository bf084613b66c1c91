"""Forms that the nineteenth session's cases showed (an eighth round of cases written by hand,
then a ninth), each tested on text of our own from the rule it follows:

- a regulation's decimal section after what would be a reporter's page ("940 CMR 3.08",
  "105 CMR 130.020") is no case citation: reporters number their pages whole;
- what closes a clause where a record cite belongs and is a thing's number is none of this
  case's: a purchase order's "P.O. 24-3318" (an initialism, not the page abbreviation "P."),
  an account's last digits behind its mask ("Visa x4417", "Acct. ****4417"), and digits in
  hyphenated groups that no page range reads ("4500-1219 at 1", "24-046-003412") where the
  case's numbers carry letters (a range ending after it starts, "1041-45", and a date,
  "2024-03-07", are not such numbers);
- the case's one production stamped as its record ("AR 014", an administrative record) is
  cited as the transcript or the record by page ("(Tr. 17)", "Tr. 25:3-5", "R. 27"), as
  Social Security appeals cite the certified transcript; never after another word ("Hr'g Tr.
  215"), nor a court rule ("R. 4:50-1"), nor where no production is a record's;
- a scale letter stands on its figure's line and is no initial ("$8,839.58" above "B. A.
  Castellano" is no $8.8 trillion);
- "Ex. A at ACME000002" where no document is labelled Exhibit A and the cited page's own
  document carries no label either: the packet prints only some of the draft's labels, and
  the Bates number says which page (a page of a document labelled otherwise, or a label that
  another document carries, is still the wrong exhibit);
- a production stamped with its separator may number its pages unpadded, as the Ninth
  Circuit's excerpts of record are ("2-ER-22", "3-ER-26-27", "1-SER-3"); a prefix stamped
  without one is still read from three digits ("ACME 12" is none of "ACME000012");
- a transcript excerpt filed as a court filing's exhibit prints the filing's "Page 5 of 14"
  above its own "Page 38": its page is the transcript's; and a Bates page cited for a
  transcript's page and lines ("2-ER-12 (Varga Dep. 40:23-25)") must be the page that
  prints them, else it is the wrong page, named with the page that does;
- a chat channel ("Slack, #cbef-claims-qa"), an address or a message's id ("Msg. ID
  CAB7d2@mail.example.com") where a cite belongs is none; a chronology's "entry 22" pins
  the team's own draft ("Chronology draft v3, entry 22");
- a time on the 24-hour clock in four digits before its word ("0240 hours") is the time of day
  a flowsheet prints "02:40": with a reading ("78/42") it puts the sentence on the page of the
  hour that prints both, not on its neighbour of the hour before;
- (the ninth round: an ICC arbitration, an antitrust class action, a Tax Court case) a
  production numbered by document with page suffixes from one digit ("CWS-1.0002", a witness
  statement) is looked up by its prefix; a prefix "R" alone (a respondent's exhibits) names
  no record the transcript's "Tr." could mean;
- a document tells the order it writes its numeric dates in: a date only day first can be
  ("28/08/2023"), a dotted date ("09.10.2023") or a declared "dd/mm/yyyy" makes its
  "03/07/2023" 3 July (the finding says it read it so, as its document writes its dates); and
  "28. August 2023" is a date;
- a first page whose running head spells its reporter out ("214   161 UNITED STATES TAX
  COURT REPORTS", as reporters-db names "T.C.") is the opinion at that page;
- the Tax Court's stipulated exhibits carry their party's letter ("Ex. 25-P at 2", "Ex. 1-J"),
  labelled at the end of a head line ("Docket No. 14382-22      EXHIBIT 25-P");
- a quotation a page prints in two paragraphs is carried by the cited one, the second;
- "161 T.C. at 219" is a short form in every process: reporters-db lists "T.C. at" among the
  reporter's variations, and eyecite's pattern tries it first in some processes (a set's
  order), reading a full citation of page 219;
- a table stating "($ millions)" gives its figures in millions; "per" opens a citation only
  where a clause opens ("price per dozen" is a rate), and a table's cell ends one; a caption
  set in bold holds no cite; a statistical program's files ("overcharge_main.do") and a
  table of the team's own draft ("draft v1, tbl. 4") are no record cites; a transcript cite
  whose lines hold none of the sentence's terms while other lines hold three or more of them
  (a third of their weight) is the wrong lines, named;
- amounts in other currencies by their ISO codes, before or after the figure, and Swiss
  grouping ("CHF 480'000.00", "1,250 CAD"), a figure in groups or with cents (a code before
  a bare run of digits, "CAD 000123", may be a Bates label); a web address, a network share or
  a drive's path where a cite belongs is no record cite, whatever its words;
- (a tenth round: a California criminal appeal, a FINRA arbitration, a cyber-insurance case)
  an opinion named by its party alone and pinned by its reporter's page ("(Ishikawa-Dunne, at
  p. 304.)", as the California Style Manual allows) is read on that reporter page; a
  parenthetical after a person's name on a line that goes on with the person's role
  ("Hannah L. Cheng (SBN 298311), Attorney for Appellant") or after a caption's number ("No.
  C0_____ (related appeal No. C097236)") holds no cite.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from apps.verification import amounts, dates
from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, split_label
from tests.verification.packets import (
    findings_by_claim,
    labelled_index,
    text_index,
    transcript_page,
)


def test_a_regulations_decimal_section_is_no_case_citation() -> None:
    claims = extract_claims(
        "The regulation forbids it. 940 CMR 3.08(1). So does 105 CMR 130.020. The court said "
        "so in Doe v. Roe, 40 Mass. App. Ct. 12, 14 (1996).",
        bates_prefixes=["RA"],
    )
    cases = [c.text for c in claims if c.kind == "case_citation"]
    assert cases == ["Doe v. Roe, 40 Mass. App. Ct. 12, 14 (1996)"], cases


def _cites(text: str, prefixes: list[str]) -> list[tuple[str, str]]:
    return [
        (c.kind, c.text)
        for c in extract_claims(text, bates_prefixes=prefixes)
        if c.kind in ("record_cite", "not_a_record_cite")
    ]


def test_a_things_number_where_a_cite_belongs_is_none_of_this_case() -> None:
    text = (
        "The part had been on order since March (P.O. 24-3318). The card shows the charge. "
        "(Visa x4417.) The account was debited. (Acct. ****4417.) Buckeye prepaid the freight. "
        "(4500-1219 at 1.) The car was not stolen. (24-046-003412.) The invoice says so. "
        "(BPS000010.)"
    )
    assert _cites(text, ["BPS"]) == [
        ("not_a_record_cite", "P.O. 24-3318"),
        ("not_a_record_cite", "Visa x4417"),
        ("not_a_record_cite", "Acct. ****4417"),
        ("not_a_record_cite", "4500-1219 at 1"),
        ("not_a_record_cite", "24-046-003412"),
        ("record_cite", "BPS000010"),
    ]


def test_page_ranges_dates_and_the_page_abbreviation_stay_what_they_are() -> None:
    text = (
        "The lease says so (p. 4). The meeting was held then (2024-03-07). The notice went "
        "out (1041-45). The invoice followed. (BPS000010-12.)"
    )
    assert _cites(text, ["BPS"]) == [("record_cite", "BPS000010-12")]
    # A case whose numbers are digits alone: digits in groups may be its numbers.
    assert ("not_a_record_cite", "4500-1219") not in _cites("It was paid. (4500-1219.)", [""])


DECISION = [
    "NOTICE OF DECISION - UNFAVORABLE\nThe claimant has severe impairments: rheumatoid "
    "arthritis and carpal tunnel syndrome.",
    "The claimant is not disabled. The vocational expert testified that a marker job exists.",
    transcript_page(
        "HEARING TRANSCRIPT",
        3,
        {3: "Q. Can she use a pricing gun all day?", 4: "A. Frequently, yes, the expert said."},
    ),
]


def _record(text: str, prefixes: tuple[str, str] = ("AR ", "WC-")) -> dict[str, Finding]:
    index = text_index(prefixes[0], [("01-alj-decision.pdf", DECISION)], first=14)
    claims = extract_claims(text, bates_prefixes=list(prefixes))
    return {f.claim.text: f for f in verify_text(text, claims, index)}


def test_the_record_production_is_cited_as_the_transcript_or_the_record() -> None:
    found = _record(
        "The ALJ found rheumatoid arthritis and carpal tunnel syndrome severe. (Tr. 14.) He "
        "found the claimant not disabled. R. 15. The expert said she could use a pricing gun "
        "frequently. Tr. 16:3-4. The Appeals Council denied review. (Tr. 412.)"
    )
    assert found["Tr. 14"].status == "supported", found["Tr. 14"].message
    assert found["R. 15"].status == "supported", found["R. 15"].message
    assert found["Tr. 16:3-4"].status == "supported", found["Tr. 16:3-4"].message
    assert found["Tr. 412"].status == "unsupported", found["Tr. 412"].message


def test_the_records_words_are_no_cite_after_a_word_in_a_rule_or_without_a_record() -> None:
    text = "He admitted it. Hr'g Tr. 15:3-5. Relief lies under R. 4:50-1. The ALJ erred (Tr. 15)."
    cites = [(c.kind, c.text) for c in extract_claims(text, bates_prefixes=["AR ", "WC-"])]
    assert ("record_cite", "Tr. 15") in cites, cites
    assert not any(t.startswith(("R. 4", "Tr. 15:3")) for _, t in cites), cites
    cites = [c.text for c in extract_claims("The ALJ erred (Tr. 15).", bates_prefixes=["APP"])]
    assert "Tr. 15" not in cites, cites


def test_a_scale_letter_stands_on_its_figures_line_and_is_no_initial() -> None:
    page = "Castellano - 2024 work   35.1   $251.84   $8,839.58\nB. A. Castellano - 2025 work"
    assert [v for _, _, v in amounts.amount_values(page)] == ["25184", "883958"]
    assert [v for _, _, v in amounts.amount_values("$8,839.58 B. A. Castellano")] == ["883958"]
    assert [v for _, _, v in amounts.amount_values("a $1.2B deal, $40K.")] == [
        "120000000000",
        "4000000",
    ]


def test_an_exhibit_label_the_packet_does_not_print_leaves_the_bates_number_to_decide() -> None:
    index = text_index(
        "ACME",
        [
            ("08-fee-agreement.pdf", ["ATTORNEY FEE AGREEMENT\nClient owes no retainer."]),
            ("10-rate.pdf", ["EXHIBIT C\nEAJA HOURLY RATE COMPUTATION\nRate $251.84."]),
        ],
    )
    found = findings_by_claim(
        "The client paid no retainer. (Ex. A at ACME000001.) The rate was computed. (Ex. C at "
        "ACME000001.) The agreement says so. (Ex. A at ACME000002.)",
        index,
        "ACME",
    )
    assert found["Ex. A at ACME000001"].status == "supported", found["Ex. A at ACME000001"]
    assert found["Ex. C at ACME000001"].status == "unsupported", found["Ex. C at ACME000001"]
    assert found["Ex. A at ACME000002"].status == "unsupported", found["Ex. A at ACME000002"]


def _ecf_page(filing_page: int, page: int, lines: dict[int, str]) -> str:
    header = (
        f"Case 3:23-cv-01144-HLB   Document 47-2   Filed 02/09/24   Page {filing_page} of 14\n\n"
    )
    return header + transcript_page("", page, lines)


DEPOSITION = [
    _ecf_page(5, 39, {3: "Q. Did he respond?", 4: "A. He told me to drop the overbilling."}),
    _ecf_page(
        6, 40, {23: "Q. Before February 14, had you ever been disciplined?", 24: "A. Never."}
    ),
]


def test_unpadded_numbers_of_a_production_stamped_with_its_separator() -> None:
    text = "She was fired. 3-ER-26-27. She complained. 1-SER-3. It was filed. ACME 12."
    cites = [(c.kind, c.text) for c in extract_claims(text, bates_prefixes=["ER-", "SER-", "ACME"])]
    assert cites == [("record_cite", "ER-26-27"), ("record_cite", "SER-3")], cites


def test_a_bates_page_must_print_the_transcript_page_its_parenthetical_cites() -> None:
    index = text_index("ER-", [("03-varga-deposition-excerpts.pdf", DEPOSITION)], first=12)
    found = findings_by_claim(
        "She had never been disciplined. ER-000013 (Varga Dep. 40:23-24). Before that she had "
        "never been disciplined either. ER-000012 (Varga Dep. 40:23-24). He told her to drop "
        "the overbilling. Varga Dep. 39:3-4.",
        index,
        "ER-",
    )
    assert found["ER-000013"].status == "supported", found["ER-000013"].message
    wrong = found["ER-000012"]
    assert wrong.status == "unsupported", wrong.message
    assert "ER-000012 is its page 39" in wrong.message and "40 is on ER-000013" in wrong.message
    assert found["Varga Dep. 39:3-4"].status == "supported", found["Varga Dep. 39:3-4"].message


def test_channels_addresses_and_a_chronologys_entries_are_no_record_cites() -> None:
    text = (
        "She posted it. (Slack, #cbef-claims-qa.) He wrote back. ER-21 (Msg. ID "
        "CAB7d2Qw81-0210.4412@mail.example.com). He stopped inviting her. Chronology draft v3, "
        "entry 22."
    )
    cites = [(c.kind, c.text) for c in extract_claims(text, bates_prefixes=["ER-"])]
    assert cites == [
        ("not_a_record_cite", "Slack, #cbef-claims-qa"),
        ("record_cite", "ER-21"),
        ("not_a_record_cite", "Msg. ID CAB7d2Qw81-0210.4412@mail.example.com"),
        ("not_a_record_cite", "Chronology draft v3, entry 22"),
    ], cites


def _flowsheet(block: str, rows: list[str]) -> str:
    head = "EMERGENCY DEPARTMENT NURSING FLOWSHEET - HOURLY\nPatient: HALVORSEN, ERIK J\n"
    table = "Time   HR   BP      MAP\n" + "\n".join(rows)
    return f"{head}Hour block: {block}\n\nVITAL SIGNS\n{table}\nBlood pressure per hour."


def test_a_time_in_four_digits_before_its_word_is_the_time_a_page_prints() -> None:
    index = text_index(
        "HALV",
        [
            (
                "03-ed-nursing-flowsheets.pdf",
                [
                    _flowsheet(
                        "01:00 - 01:59", ["01:00  124  94/56   69", "01:45  127  88/52   64"]
                    ),
                    _flowsheet(
                        "02:00 - 02:59", ["02:10  131  84/48   60", "02:40  134  78/42   54"]
                    ),
                ],
            ),
            (
                "10-expert-report.pdf",
                [
                    "OPINIONS\nHis mean arterial pressure had fallen below 65 before any "
                    "antibiotic was given; sepsis was recognised late."
                ],
            ),
        ],
    )
    text = (
        "By 0240 hours his blood pressure had fallen to 78/42, a mean arterial pressure of 54 "
        "(HALV000001). At 0145 hours it was 88/52 (HALV000001)."
    )
    claims = extract_claims(text, bates_prefixes=["HALV"])
    wrong, right = [f for f in verify_text(text, claims, index) if f.claim.text == "HALV000001"]
    assert wrong.status == "unsupported" and "HALV000002 does" in wrong.message, wrong.message
    assert right.status == "supported", right.message


def _packet(documents: list[tuple[str, list[tuple[str, str]]]]) -> PacketIndex:
    """An index of (file name, [(label, text), ...]) documents."""
    return labelled_index(documents)


def _judged(text: str, index: PacketIndex, prefixes: list[str]) -> list[Finding]:
    return verify_text(text, extract_claims(text, bates_prefixes=prefixes), index)


def test_page_suffixes_after_a_one_digit_number_and_no_record_in_a_respondents_prefix() -> None:
    assert split_label("CWS-1.0002") == ("CWS", "1", "0002")
    index = _packet(
        [
            ("10-cws1.pdf", [("CWS-1.0001", "WITNESS STATEMENT"), ("CWS-1.0002", "I signed it.")]),
            ("07-invoices.pdf", [("R-0007.0001", "INVOICE RTM-2023-1184")]),
        ]
    )
    found = _judged("She signed it (CWS-1.0002).", index, ["CWS-", "R-"])
    assert [(f.claim.text, f.status) for f in found] == [("CWS-1.0002", "supported")], found
    cites = [c.text for c in extract_claims("He said so (Tr. 15).", bates_prefixes=["R-", "P-"])]
    assert "Tr. 15" not in cites, cites


def test_a_document_tells_the_order_of_its_numeric_dates() -> None:
    assert dates.document_order(["Meeting of 28/08/2023; next on 03/07/2023"]) == "dmy"
    assert dates.document_order(["FAT planned for 09.10.2023"]) == "dmy"
    assert dates.document_order(["All dates are dd/mm/yyyy. Held 03/07/2023."]) == "dmy"
    assert dates.document_order(["Paid 12/31/2023 and 03/07/2023"]) == "mdy"
    assert dates.document_order(["Held 03/07/2023"]) is None
    assert dates.document_order(["28/08/2023 and 12/31/2023"]) is None
    assert dates.date_values("Gesendet: Montag, 28. August 2023 17:25") == [(18, 33, "2023-08-28")]
    index = _packet(
        [
            ("03-minutes.pdf", [("C-0003.0001", "MINUTES 03/07/2023\nNext meeting 28/08/2023.")]),
            ("04-us-letter.pdf", [("C-0004.0001", "LETTER of 03/07/2023")]),
        ]
    )
    found = _judged(
        "The meeting was held on 3 July 2023 (C-0003.0001). The letter is of March 7, 2023 "
        "(C-0004.0001). The meeting was not held on 7 March 2023 (C-0003.0001).",
        index,
        ["C-"],
    )
    by_text = {f.claim.text: f for f in found}
    assert by_text["3 July 2023"].status == "supported", by_text["3 July 2023"].message
    assert "as its document writes its dates" in by_text["3 July 2023"].message
    assert by_text["March 7, 2023"].status == "supported", by_text["March 7, 2023"].message
    assert by_text["7 March 2023"].status == "contradicted", by_text["7 March 2023"].message


TAX_COURT = [
    (
        "APPX-0007",
        "214                       161 UNITED STATES TAX COURT REPORTS\n\n"
        "HOLLISTER GAP PRESERVE, LLC v. COMMISSIONER\nP granted a conservation easement.",
    ),
    (
        "APPX-0008",
        "HOLLISTER GAP PRESERVE, LLC v. COMMISSIONER                    215\n\n"
        "An appraisal need not attach every worksheet on which the appraiser relied.",
    ),
]


def test_a_running_head_that_spells_its_reporter_out_names_the_opinion() -> None:
    index = _packet([("13-opinion-hollister-gap.pdf", TAX_COURT)])
    found = _judged(
        "An appraisal need not attach every worksheet. Hollister Gap Preserve, LLC v. "
        "Commissioner, 161 T.C. 214, 215 (2023). Nor every worksheet. Hollister Gap, 161 T.C. "
        "at 216.",
        index,
        ["APPX-"],
    )
    by_text = {f.claim.text: f for f in found}
    full = by_text["Hollister Gap Preserve, LLC v. Commissioner, 161 T.C. 214, 215 (2023)"]
    assert full.status == "supported", full.message
    assert by_text["Hollister Gap, 161 T.C. at 216"].status == "unsupported"


def test_tax_court_exhibits_carry_their_partys_letter() -> None:
    index = _packet(
        [
            (
                "07-appraisal.pdf",
                [
                    ("P-000001", "Docket No. 14382-22             EXHIBIT 25-P\nAPPRAISAL REPORT"),
                    ("P-000002", "The before value is $4,870,000 by the development method."),
                ],
            ),
            (
                "10-rar.pdf",
                [("R-000001", "Docket No. 14382-22              EXHIBIT 8-R\nREPORT of the agent")],
            ),
        ]
    )
    found = _judged(
        "The before value was $4,870,000. (Ex. 25-P at 2.) The appraisal has no third page. "
        "(Ex. 25-P at 3.) The agent reported it. (Ex. 8-R at P-000002.)",
        index,
        ["P-", "R-"],
    )
    by_text = {f.claim.text: f for f in found}
    assert by_text["Ex. 25-P at 2"].status == "supported", by_text["Ex. 25-P at 2"].message
    assert by_text["Ex. 25-P at 3"].status == "unsupported", by_text["Ex. 25-P at 3"].message
    assert by_text["Ex. 8-R at P-000002"].status == "unsupported"


def test_a_quotation_printed_in_two_paragraphs_is_the_cited_ones() -> None:
    index = _packet(
        [
            (
                "10-rar.pdf",
                [
                    (
                        "R-000002",
                        "7. An appraisal must state the specific basis for the valuation.\n\n"
                        "8. The report omits the schedule; it does not state the specific basis "
                        "for the valuation.\n\n9. The plat was never recorded.",
                    )
                ],
            )
        ]
    )
    found = _judged(
        'The agent says the report does not state "the specific basis for the valuation." '
        "(R-000002 ¶ 8.)",
        index,
        ["R-"],
    )
    cite = next(f for f in found if f.claim.kind == "record_cite")
    assert cite.status == "supported", cite.message


SHORT_FORM = """
import sys
from apps.verification.claims import extract_claims
claims = extract_claims(
    "It was rejected in Hollister Gap Preserve, LLC v. Commissioner, 161 T.C. 214, 215 (2023). "
    "Use matters. Hollister Gap, 161 T.C. at 219. Then."
)
last = [c for c in claims if c.kind == "case_citation"][-1].citation
print(last.reporter, last.short, last.pin)
"""


@pytest.mark.slow
def test_a_short_form_whose_reporter_eyecite_may_read_with_its_at_is_a_short_form() -> None:
    # eyecite's choice between reading "161 T.C. at 219" by the variation "T.C. at" (a full
    # citation of page 219) and as a short form follows the string hash of its process: the
    # product's processes each take their own, so the test reads it in processes of several.
    root = Path(__file__).resolve().parents[2]
    read = {
        subprocess.run(
            [sys.executable, "-c", SHORT_FORM],
            cwd=root,
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout.strip()
        for seed in range(1, 7)
    }
    assert read == {"T.C. True 219"}, read


def test_a_tables_millions_per_as_a_rate_captions_programs_and_own_tables() -> None:
    index = _packet(
        [
            (
                "08-report-exhibits.pdf",
                [
                    (
                        "ACH_000007",
                        "Aggregate overcharges by year ($ millions)\n\n"
                        "Year                  Class purchases     Overcharge\n"
                        "2020                        612.4             27.5\n"
                        "2022                      1,004.1             45.1\n"
                        "Total                     2,310.0            103.7",
                    )
                ],
            )
        ]
    )
    found = _judged("The overcharge was $103.7 million (ACH_000007).", index, ["ACH_"])
    amount = next(f for f in found if f.claim.kind == "amount")
    assert amount.status == "supported", amount.message
    text = (
        "**Table R-1. Large White (15-dozen case), price schedules**\n\n"
        "| Schedule | Price per dozen at base |\n|---|---|\n| PS-2019-09 | $0.68 |\n\n"
        "The program is unchanged. overcharge_main.do. I used the format of Reply Decl. draft "
        "v1, tbl. 4. The data say so, per the report (HVST-000123)."
    )
    cites = [
        (c.kind, c.text)
        for c in extract_claims(text, bates_prefixes=["HVST-"])
        if c.kind in ("record_cite", "not_a_record_cite")
    ]
    assert cites[:2] == [
        ("not_a_record_cite", "overcharge_main.do"),
        ("not_a_record_cite", "Reply Decl. draft v1, tbl. 4"),
    ], cites
    bold = "**Harvest raised the spread the next day (Ex. 3 at 2).**\n"
    held = [c.text for c in extract_claims(bold, bates_prefixes=["HVST-"])]
    assert "Ex. 3 at 2" in held, held  # a sentence set in bold is no caption
    assert ("record_cite", "HVST-000123") in cites and len(
        [c for c in cites if c[0] == "not_a_record_cite"]
    ) == 2, cites


PAGE_77 = {
    1: "Q.  Ms. Tamsett, Tamsett Exhibit 9 is an e-mail you",
    2: "sent to Gwen Okabe on October 17, 2019. Do you see it?",
    3: "A.  I do.",
    4: 'Q.  You wrote, "discipline is the word for the next',
    5: 'twelve months." What did you mean?',
    6: "A.  That we weren't going to give away margin to buy",
    7: "volume. It has nothing to do with our competitors.",
    8: 'Q.  You also wrote that "HR is moving Large to +18 on',
    9: 'Nov 4." HR is Harvest Ridge?',
    20: "Q.  Did you hear it at the NCEMA meeting the day",
    21: "before?",
    22: "A.  I may have. I go to a lot of meetings.",
}
PAGE_78 = {
    3: "A.  That was a note to myself about what we were going",
    4: "to do.",
    5: "Q.  Had Prairie Gold decided to go to plus 18 before",
    6: "the members-only session?",
    7: "A.  We had been considering it for a while.",
    8: "Q.  Had you decided?",
    9: "A.  I'd say we decided that week.",
    20: "Q.  Do your larger customers negotiate their own",
    21: "spread?",
}


def test_lines_holding_none_of_the_sentence_beside_lines_holding_it_are_the_wrong_lines() -> None:
    pages = [transcript_page("", 77, PAGE_77), transcript_page("", 78, PAGE_78)]
    # (a packet where the company's name and its testimony's words are on many pages)
    lists = [
        f"PRAIRIE GOLD PRICE SCHEDULE {n}\nThe Prairie Gold spread this week." for n in range(9)
    ]
    index = text_index(
        "PA-",
        [("04-prairie-gold-price-lists.pdf", lists), ("11-tamsett-deposition-excerpts.pdf", pages)],
    )
    sentence = (
        "Tamsett testified that Prairie Gold decided on its own increase the week of the NCEMA "
        "meeting."
    )
    found = findings_by_claim(
        f"{sentence} Tamsett Dep. 77:5-9. {sentence} Tamsett Dep. 78:5-9.", index, "PA-"
    )
    wrong, right = found["Tamsett Dep. 77:5-9"], found["Tamsett Dep. 78:5-9"]
    assert wrong.status == "unsupported" and "78:5-9" in wrong.message, wrong.message
    # (the right lines hold under half the sentence's weight: not flagged, left to a person)
    assert right.status == "needs_review" and "read the lines" in right.message, right.message


def test_other_currencies_by_their_codes_and_swiss_grouping() -> None:
    values = [v for _, _, v in amounts.amount_values("CHF 480'000.00, 1,250 CAD, CAD 000123")]
    assert values == ["CHF:48000000", "CAD:125000"], values
    index = _packet(
        [("07-invoices.pdf", [("R-0007.0002", "INVOICE RTM-2023-1261\nCHF 480'000.00")])]
    )
    found = _judged(
        "Invoice RTM-2023-1261 is for CHF 480'000.00 (R-0007.0002). It is not for CHF "
        "840'000.00 (R-0007.0002).",
        index,
        ["R-"],
    )
    by_text = {f.claim.text: f for f in found}
    assert by_text["CHF 480'000.00"].status == "supported", by_text["CHF 480'000.00"].message
    assert by_text["CHF 840'000.00"].status == "contradicted", by_text["CHF 840'000.00"].message


def test_a_place_a_file_is_kept_is_no_record_cite() -> None:
    text = (
        "The letter is on file (https://firm.sharepoint.com/sites/OSW/Shared Documents/LOI "
        "signed.pdf). The share has it (\\\\fs01\\matters\\LOI.pdf). So does her drive "
        "(C:\\Users\\dw\\Desktop\\LOI final.pdf). The letter says so (C-0001.0002)."
    )
    cites = [
        c.kind
        for c in extract_claims(text, bates_prefixes=["C-"])
        if c.kind in ("record_cite", "not_a_record_cite")
    ]
    assert cites == ["not_a_record_cite"] * 3 + ["record_cite"], cites


STAR_PAGED = [
    (
        "AUTH-001",
        "People v. Ishikawa-Dunne (2023) 15 Cal.5th 301\n\nPEOPLE v. ISHIKAWA-DUNNE\n"
        "The trial court instructed the jury on provocation. [*302] The instruction requires "
        "evidence that the defendant intended to provoke the fight.",
    ),
    (
        "AUTH-002",
        "[*303] Without such evidence the instruction misleads. [*304] Giving CALCRIM No. 3472 "
        "without evidence of an intent to provoke is error.",
    ),
]


def test_an_opinion_named_alone_is_pinned_by_its_reporter_page() -> None:
    index = _packet([("14-opinion-ishikawa-dunne.pdf", STAR_PAGED)])
    found = _judged(
        "Giving CALCRIM No. 3472 without evidence of an intent to provoke is error. "
        "(Ishikawa-Dunne, at p. 304.)",
        index,
        ["AUTH-"],
    )
    cite = next(f for f in found if "Ishikawa-Dunne" in f.claim.text)
    assert cite.status == "supported" and "reporter page 304" in cite.message, cite.message


def test_a_parenthetical_after_a_name_and_its_role_or_a_caption_number_is_no_cite() -> None:
    text = (
        "No. C0_____ (related appeal No. C097236)\n\nThe jury was so instructed (1 CT 41).\n\n"
        "Hannah L. Cheng (SBN 298311), Attorney for Appellant\n"
    )
    cites = [
        (c.kind, c.text)
        for c in extract_claims(text, bates_prefixes=["1 CT "])
        if c.kind in ("record_cite", "not_a_record_cite")
    ]
    assert cites == [("record_cite", "1 CT 41")], cites
