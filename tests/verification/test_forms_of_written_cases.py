"""More forms that drafts and productions take (issues 20 and 28), each from the rule it
follows, on packets of our own (the sixteenth session's cases written by hand showed them):

- every cite of a sentence vouches for it: a deposition cited by page and line beside a Bates
  cite ("(Okafor Dep. 31:17-20; WLD000001)") lends its lines' pages to the Bates cite's check;
- a time of day ("23:58") and a reading of two numbers ("94/56") are facts a cited page must
  carry, as a decimal quantity is;
- an amount printed after a minus sign that stands apart ("Payment  -41,207.33") is the
  amount a sentence states ("paid $41,207.33");
- a date of the sentence that another page prints apart from the sentence's words, while the
  cited page prints a date of its kind beside them, is the cited page's date altered: the
  date is flagged, not the cite;
- a case's subsequent history (", cert. denied, 140 S. Ct. 1234 (2020)") is part of its
  citation, no authority of its own, and an "Id." after it is the case's;
- a citation is never split into sentences at its abbreviations ("Inc. Sec. Litig.",
  "(S.D.N.Y. 2024)"), and a clause after it ("..., holding that ...") says what it is cited
  for;
- the judge an opinion's caption names ("Okonjo, J.") is its caption's, no fact its pinned
  page must print; a quoted word or two decides no pin;
- a parenthetical after an exhibit's label says what the exhibit is ("Ex. 7 (sales plan and
  execution summary)"), unless it carries the marks of the team's own work ("v2");
- a document named with its number ("Change Order No. 7 at 2") is the file numbered so
  ("change-order-007.pdf");
- what follows a signal and is itself followed by a record cite ("per Revision 3 of
  SD-CW-204 (WLD000001)") is what the cite shows, no cite; a specification's section in
  groups of digits ("Spec. 08 44 13") standing as a cite is a name of a thing.
"""

import pytest

from apps.verification.checks import Finding
from apps.verification.claims import extract_claims, sentences
from apps.verification.index import PacketIndex
from tests.verification.packets import findings_by_claim, text_index

PREFIX = "WLD"


def _found(text: str, documents: list[tuple[str, list[str]]]) -> dict[str, Finding]:
    return findings_by_claim(text, text_index(PREFIX, documents), PREFIX)


def _deposition_page(page: int, lines: dict[int, str]) -> str:
    body = "\n".join(f"{n:>2}  {lines.get(n, '')}".rstrip() for n in range(1, 26))
    return f"{' ' * 60}Page {page}\n{body}\nLindgren Reporting - Okafor, Tamsin"


POLICY = [
    "SEPSIS POLICY PC-114\n5.4 Fluids: the provider shall order 30 mL/kg of crystalloid within "
    "3 hours of time zero.\n5.5 Documentation of each bundle element is required."
]
OKAFOR = [
    _deposition_page(1, {3: "ORAL DEPOSITION OF TAMSIN OKAFOR"}),
    _deposition_page(
        31,
        {
            17: "Q. How much fluid had he received by the time the",
            18: "pip-tazo was hung?",
            19: "A. About two liters. The first liter and most of the",
            20: "second.",
        },
    ),
]


def test_a_deposition_cited_beside_a_bates_cite_vouches_for_their_sentence() -> None:
    documents = [("policy-pc-114.pdf", POLICY), ("deposition-okafor.pdf", OKAFOR)]
    sentence = (
        "By the time the antibiotic was hung, he had received about two liters, short of the "
        "30 mL/kg the policy requires ({})."
    )
    both = _found(sentence.format("Okafor Dep. 31:17-20; WLD000001"), documents)
    assert both["WLD000001"].status == "supported", both["WLD000001"].message
    # Alone, the policy page lacks the testimony's facts, which the transcript's page holds.
    alone = _found(sentence.format("WLD000001"), documents)["WLD000001"]
    assert alone.status != "supported", alone.message
    assert "WLD000003" in alone.message


FLOWSHEETS = [
    "NURSING FLOWSHEET\nDate: 11/08/2022  Hour block: 23:00-23:59  Location: WAITING ROOM\n"
    "Time   HR   BP       SpO2\n23:58  120  100/62   93%\nPt reassessed. Awaiting bed.",
    "NURSING FLOWSHEET\nDate: 11/09/2022  Hour block: 01:00-01:59  Location: ED BED 14\n"
    "Time   HR   BP       SpO2\n01:00  124  94/56    95%\n01:45  127  88/52    94%\n"
    "Pt more confused. IV team paged.",
]
PROTOCOL = [
    "SEPSIS PROTOCOL\nSevere sepsis includes a systolic blood pressure under 90 and a drop in "
    "blood pressure after fluids; his pressure must be rechecked."
]


@pytest.mark.parametrize(("cited", "status"), [("WLD000002", "supported"), ("WLD000001", "")])
def test_times_and_readings_are_facts_the_cited_page_must_carry(cited: str, status: str) -> None:
    found = _found(
        f"His blood pressure was 94/56 at 01:00 and 88/52 at 01:45 ({cited}).",
        [("flowsheets.pdf", FLOWSHEETS), ("protocol.pdf", PROTOCOL)],
    )[cited]
    if status:
        assert found.status == status, found.message
    else:  # the neighbour prints the readings and times: the cite is that page's
        assert found.status == "unsupported", found.message
        assert "WLD000002" in found.message


STATEMENT = [
    "ITEMIZED STATEMENT\nTotal charges                          118,426.85\n"
    "Payment - Lone Star Health Plan        -41,207.33\n"
    "Contractual adjustment                 -52,764.19\nBALANCE DUE    24,455.33"
]


def test_an_amount_printed_after_a_minus_sign_is_the_amount_a_sentence_states() -> None:
    found = _found(
        "After Lone Star paid $41,207.33 and wrote off $52,764.19, the balance is $24,455.33 "
        "(WLD000001).",
        [("statement.pdf", STATEMENT)],
    )
    for amount in ("$41,207.33", "$52,764.19", "$24,455.33"):
        assert found[amount].status == "supported", found[amount].message
    # A hyphen inside a number is none: "22-3130487.00" is no amount 3,130,487.00.
    account = _found(
        "The account is $3,130,487.00 (WLD000001).", [("a.pdf", ["Acct 22-3130487.00"])]
    )
    assert account["$3,130,487.00"].status != "supported"


TRANSFER = [
    "ED TO ICU TRANSFER SUMMARY\nEmergency department arrival: 11/08/2022 22:47\n"
    "ICU transfer: 11/09/2022 06:20\nAccepting: Dr. Fenwick"
]
LAB = [
    "LABORATORY REPORT\nEmergency department, then ICU bed 6\nUrine culture   Collected 11/09/2022 "
    "02:25   Final 11/10/2022: E. coli"
]


def test_a_date_printed_apart_from_the_sentences_words_elsewhere_is_the_cited_pages_altered() -> (
    None
):
    sentence = (
        "He was moved from the emergency department to the ICU on November 10, 2022 (WLD000001)."
    )
    found = _found(sentence, [("transfer.pdf", TRANSFER), ("lab.pdf", LAB)])
    assert found["WLD000001"].status == "supported", found["WLD000001"].message
    assert found["November 10, 2022"].status == "contradicted"
    # Where the other page prints the date beside the sentence's words, the cite is that page's.
    moved = ["ICU LOG\nMoved from the emergency department to the ICU on 11/10/2022."]
    found = _found(sentence, [("transfer.pdf", TRANSFER), ("icu-log.pdf", moved)])
    assert found["WLD000001"].status in ("unsupported", "needs_review"), found["WLD000001"].message


def _opinion_page(number: int, body: str) -> str:
    return f"TALVANE v. ORR    {number}\nCite as 88 F.4th 301 (2d Cir. 2023)\n{body}"


OPINION = [
    _opinion_page(
        301,
        "TALVANE v. ORR.\nBefore OKONJO, District Judge.\nHoldings: statements of present fact "
        "about known trial data are actionable.\nOkonjo, J., delivered the opinion.",
    ),
    _opinion_page(302, "Puffery is generalized optimism about a company's prospects."),
    _opinion_page(303, "A statement of present fact about known trial data is actionable."),
    _opinion_page(304, "Scienter may rest on sales made after learning of the results."),
]


def _cases(text: str, documents: list[tuple[str, list[str]]] | None = None) -> list[Finding]:
    """The findings on the case citations of `text`, against a packet of `documents` (the
    Talvane opinion)."""
    index = text_index(PREFIX, documents or [("opinion-talvane.pdf", OPINION)])
    return [
        f
        for f in findings_by_claim(text, index, PREFIX).values()
        if f.claim.kind == "case_citation"
    ]


def test_subsequent_history_is_part_of_the_citation_and_its_id_is_the_cases() -> None:
    found = _cases(
        "A statement of present fact about known trial data is actionable. Talvane v. Orr, 88 "
        "F.4th 301, 303 (2d Cir. 2023), cert. denied, 144 S. Ct. 2291 (2024). Scienter may "
        "rest on sales made after learning of the results. Id. at 304."
    )
    assert [f.status for f in found] == ["supported", "supported"], [f.message for f in found]
    assert found[0].claim.text.endswith("144 S. Ct. 2291 (2024)")  # the history is its own


def test_a_citation_is_one_sentence_and_a_holding_clause_after_it_is_what_it_is_cited_for() -> None:
    text = (
        "The court applied these principles to identical facts in In re Talvane Pharms., Inc. "
        'Sec. Litig., 88 F.4th 301, {} (S.D.N.Y. 2024), holding that "a statement of present '
        'fact about known trial data is actionable." Accord Orr, 88 F.4th at 302.'
    )
    # The splitter alone stops at "Inc." and "(S.D.N.Y."; the citation's sentence is one.
    assert len(sentences(text.format(303))) == 3
    claims = extract_claims(text.format(303), bates_prefixes=[PREFIX])
    (sentence,) = {c.sentence for c in claims}
    assert sentence[0] == 0 and sentence[1] == len(text.format(303))
    # "In re" begins the case's name: the claim is the whole citation as written.
    assert claims[0].text.startswith("In re Talvane Pharms., Inc. Sec. Litig., 88 F.4th 301, 303")
    right, wrong = _cases(text.format(303))[0], _cases(text.format(304))[0]
    assert right.status == "supported", right.message
    assert wrong.status == "unsupported" and "303" in wrong.message, wrong.message


def test_the_judge_the_caption_names_and_a_quoted_word_decide_no_pin() -> None:
    (found,) = _cases(
        'Judge Okonjo found "actionable" what was said of known trial data. Talvane v. Orr, '
        "88 F.4th 301, 303 (2d Cir. 2023)."
    )
    assert found.status == "supported", found.message


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("Exhibit 7 (Liang sales plan and execution summary) is attached.", ()),
        (
            "Ex. 7 (Liang sales plan and execution summary) shows the trades (WLD000001).",
            (),
        ),
        (
            "My chronology is attached as Exhibit A (case chronology v2, row 14).",
            ("case chronology v2, row 14",),
        ),
    ],
)
def test_a_parenthetical_after_an_exhibits_label_says_what_the_exhibit_is(
    text: str, flagged: tuple[str, ...]
) -> None:
    found = _found(text, [("07-sales-plan.pdf", ["Trading plan of Liang. Sales executed."])])
    assert tuple(k for k, f in found.items() if f.status == "unsupported") == flagged


CHANGE_ORDERS = [
    ("03-change-order-007.pdf", ["CHANGE ORDER 007\nSunshade fins.", "Signed 9/14/23."]),
    ("04-change-order-009.pdf", ["CHANGE ORDER 009\nTemporary heat.", "Signed 2/9/24."]),
]


def test_a_document_named_with_its_number_is_the_file_numbered_so() -> None:
    found = _found("The owner signed it on 9/14/23 (Change Order No. 7 at 2).", CHANGE_ORDERS)
    finding = found["Change Order No. 7 at 2"]
    assert finding.status == "supported", finding.message
    assert "03-change-order-007.pdf" in finding.message


RFI_LOG = ["RFI LOG\nRFI-112 answered 08/09/23: minimum embed 4-1/2 in. per SD-CW-204 Rev 3."]


def test_what_a_record_cite_after_a_signal_shows_is_no_cite_and_a_spec_section_is_a_thing() -> None:
    found = _found(
        "The Architect directed a minimum embed of 4-1/2 inches per Revision 3 of SD-CW-204 "
        "(WLD000001). HSW's scope included the slab-edge anchors (Spec. 08 44 13).",
        [("rfi-log.pdf", RFI_LOG)],
    )
    assert found["WLD000001"].status == "supported", found["WLD000001"].message
    assert not [k for k in found if "SD-CW-204" in k]
    assert found["Spec. 08 44 13"].status == "unsupported"
    assert found["Spec. 08 44 13"].check == "not_a_record_cite"


def test_a_reading_needs_both_its_numbers_and_its_separator() -> None:
    from apps.verification.checks.context import Context
    from apps.verification.checks.weighing import weighed_terms

    index: PacketIndex = text_index(PREFIX, [("f.pdf", FLOWSHEETS), ("p.pdf", PROTOCOL)])
    text = "At 1:00 his pressure was 94/56, at 23:58 it was 9/4, and 56:94 later (WLD000002)."
    ctx = Context(text, extract_claims(text, bates_prefixes=[PREFIX]), index)
    terms = weighed_terms(ctx, (0, len(text)), values=True)
    readings = {k: t.pages for k, t in terms.items() if k.startswith("reading:")}
    assert readings == {
        "reading:1:0": frozenset({1}),  # printed "01:00" on the second page
        "reading:94/56": frozenset({1}),
        "reading:23:58": frozenset({0}),
    }  # "9/4" is a date or a fraction; no page prints "56:94"


# An opinion paged by star markers inside its text: its reporter pages 506 and 507 share a
# packet page, the word the draft quotes printed in 506's part.
STAR_PAGED = [
    "In re Halcyne Bio, Inc. Securities Litigation, 719 F.Supp.3d 505 (2024)\n\n719 F.Supp.3d "
    "505\nUnited States District Court, S.D. New York.\nSynopsis: the chief executive called the "
    'safety data "pristine."\nOkonjo, J.',
    "In re Halcyne Bio, Inc. Securities Litigation, 719 F.Supp.3d 505 (2024)\n\n*506 He called "
    'the data "pristine." Optimism about prospects is not actionable.\n*507 '
    "A description of known safety data offered to reassure analysts is a concrete "
    "representation about the state of the data, not puffery.\n*508 The trading plan gave no "
    "cover.",
]


@pytest.mark.parametrize(("pin", "status"), [("507", "supported"), ("506", "unsupported")])
def test_a_quoted_word_printed_on_the_synopsis_decides_no_star_pin(pin: str, status: str) -> None:
    text = (
        "The court so held in In re Halcyne Bio, Inc. Sec. Litig., 719 F. Supp. 3d 505, "
        f'{pin} (S.D.N.Y. 2024), holding that a description of safety data as "pristine," '
        'offered to reassure analysts, "is a concrete representation about the state of the '
        'data, not puffery."'
    )
    (found,) = _cases(text, [("opinion-halcyne.pdf", STAR_PAGED)])
    assert found.status == status, found.message
    if status == "unsupported":  # the quotation is on 507, not the word on 506
        assert "507" in found.message


LAB_CALL = [
    "LABORATORY RESULTS\nCollected: 11/09/2022 01:14   Resulted: 01:52\n"
    "CRITICAL VALUE: lactate 4.6 called to Dr. Sandoval 11/09/2022 1:55 AM."
]


@pytest.mark.parametrize(
    ("written", "status"),
    [
        ("11/9/22 at 01:15", "contradicted"),
        ("11/9/22 at 1:55 a.m.", "supported"),
        ("11/9/22 at 13:52", "supported"),  # "01:52" on a page of twelve-hour times
        ("11/9/22", "supported"),
        ("11/9/22 at about 2:00", "supported"),  # an approximate time states no minute
    ],
)
def test_a_time_written_with_a_date_is_a_fact_the_dates_page_must_print(
    written: str, status: str
) -> None:
    found = _found(
        f"The laboratory called the critical lactate to Dr. Sandoval on {written} (WLD000001).",
        [("lab.pdf", LAB_CALL)],
    )
    (date,) = [f for f in found.values() if f.claim.kind == "date"]
    assert date.status == status, date.message
    if status == "contradicted":
        assert "01:15" in date.message and "1:55 AM" in date.message


def test_a_transcript_cite_naming_no_witness_is_the_packets_one_deposition() -> None:
    documents = [("policy-pc-114.pdf", POLICY), ("09-okafor-deposition-excerpts.pdf", OKAFOR)]
    right = _found("She had received about two liters by then (Tr. 31:19-20).", documents)
    assert right["Tr. 31:19-20"].status == "supported", right["Tr. 31:19-20"].message
    wrong = _found("The pip-tazo was hung (Tr. 1:3).", documents)["Tr. 1:3"]
    assert wrong.status == "unsupported", wrong.message
    # Two transcripts: "Tr." names neither.
    two = _found(
        "She had received about two liters by then (Tr. 31:19-20).",
        [*documents, ("10-sandoval-deposition.pdf", OKAFOR)],
    )["Tr. 31:19-20"]
    assert two.status == "needs_review", two.message


APPLICATIONS = [
    "APPLICATION FOR PAYMENT   Application No.: 19   Period to: January 25, 2024\n"
    "Change Order 007 withheld by the Owner. Original Contract Sum $48,760,000.00",
    "APPLICATION FOR PAYMENT   Application No.: 20   Period to: February 25, 2024\n"
    "Change Order 007 and Change Order 009 withheld by the Owner. Original Contract Sum "
    "$48,760,000.00",
]


@pytest.mark.parametrize(("cited", "status"), [("WLD000002", "supported"), ("WLD000001", "")])
def test_a_number_after_its_label_is_a_fact(cited: str, status: str) -> None:
    found = _found(
        f"On Application No. 20 the Owner withheld Change Order 009 as well ({cited}).",
        [("applications.pdf", APPLICATIONS), ("letter.pdf", ["The Owner wrote again."])],
    )[cited]
    if status:
        assert found.status == status, found.message
    else:
        assert found.status == "unsupported" and "WLD000002" in found.message, found.message


INTERIM_REPORT = [
    "INTERIM SAFETY REPORT IR-2\nALT elevations were more frequent in velnoprant patients than "
    "in placebo patients; the p-value is given in the table that follows.\nPrepared by Meridex.",
    "INTERIM SAFETY REPORT IR-2 (continued)\nTable 4.  ALT > 3x ULN:  20/204 (9.8%)  vs  4/208 "
    "(1.9%);  p = 0.0011.\nPrepared by Meridex.",
]


def test_figures_that_stand_together_on_a_neighbour_and_not_on_the_cited_page_move_it() -> None:
    sentence = (
        "IR-2 showed ALT elevations in 20 of 204 velnoprant patients (9.8%) but only 4 of 208 "
        "placebo patients (1.9%), a p-value of 0.0011 ({})."
    )
    documents = [("ir-2.pdf", INTERIM_REPORT), ("minutes.pdf", ["The DMC met in May."])]
    wrong = _found(sentence.format("WLD000001"), documents)["WLD000001"]
    assert wrong.status == "unsupported" and "WLD000002" in wrong.message, wrong.message
    right = _found(sentence.format("WLD000002"), documents)["WLD000002"]
    assert right.status == "supported", right.message


def test_a_securitys_cusip_standing_as_a_cite_is_a_name_of_a_thing() -> None:
    found = _found(
        "Those sales were reported on Forms 4 (CUSIP 21987R107).", [("a.pdf", ["Form 4."])]
    )
    assert found["CUSIP 21987R107"].status == "unsupported"
    assert found["CUSIP 21987R107"].check == "not_a_record_cite"


def test_a_court_our_data_cannot_read_says_nothing_against_an_opinion_the_packet_holds() -> None:
    opinion = [
        "TALVANE v. ORR    301\nCite as 88 So. 3d 301 (Fla. 5th DCA 2019)\nA statement of "
        "present fact about known trial data is actionable."
    ]
    index = text_index(PREFIX, [("opinion-talvane.pdf", opinion)])
    found = [
        f
        for f in findings_by_claim(
            "A statement of present fact about known trial data is actionable. Talvane v. Orr, "
            "88 So. 3d 301, 301 (Fla. 5th DCA 2019). So is this. Ames v. Bly, 77 So. 3d 310 "
            "(Fla. 5th DCA 2019).",
            index,
            PREFIX,
        ).values()
        if f.claim.kind == "case_citation"
    ]
    held, absent = found
    assert held.status == "supported", held.message
    assert "Fla. 5th DCA" in held.message
    assert absent.status == "unsupported"  # not in the packet, whatever its court


MINUTES = [
    ("01-board-minutes.pdf", ["BOARD MINUTES\nThe Board adopted the plan.", "Adjourned."]),
    (
        "02-discussion-materials.pdf",
        ["DISCUSSION MATERIALS\nCover.", "DCF range $44.10 to $58.30 per share.", "Notes."],
    ),
]


@pytest.mark.parametrize(
    "key",
    [
        "Exhibits:\n- Ex. 3: discussion materials, Oct. 18, 2023 (WLD000003-WLD000005)\n\n",
        "Record exhibits are cited as follows: Ex. 1, Board Minutes; Ex. 3, Discussion "
        "Materials.\n\n",
    ],
)
def test_the_drafts_own_list_of_exhibits_says_what_ex_n_is(key: str) -> None:
    text = key + "The bank's DCF produced $44.10 to $58.30 per share. Ex. 3 at 2."
    found = _found(text, MINUTES)["Ex. 3 at 2"]
    assert found.status == "supported", found.message
    assert "list of exhibits" in found.message
    assert found.page is not None and found.page.bates == ("WLD000004",)
    # Without the list, Ex. 3 is read as the packet's third document, which it has not.
    bare = _found("The bank's DCF produced $44.10 to $58.30 per share. Ex. 3 at 2.", MINUTES)
    assert bare["Ex. 3 at 2"].status != "supported"
    # Page 0 of a listed exhibit is no page of it.
    zero = _found(key + "The bank's DCF produced its range. Ex. 3 at 0.", MINUTES)["Ex. 3 at 0"]
    assert zero.status == "unsupported" and "no page 0" in zero.message, zero.message


PROXY = [
    (
        "proxy-statement-excerpts.pdf",
        [f"PROXY STATEMENT\nText of page {n}.\n\n{n}" for n in (31, 32)],
    )
]


def test_a_document_is_cited_by_the_page_numbers_it_prints() -> None:
    found = _found("The proxy says so (Proxy at 32).", PROXY)["Proxy at 32"]
    assert found.status != "unsupported", found.message
    assert found.page is not None and found.page.page_number == 2
    missing = _found("The proxy says so (Proxy at 58).", PROXY)["Proxy at 58"]
    assert missing.status == "unsupported" and "no page 58" in missing.message


WESTLAW = [
    "Pelham Retirement System v. Dunmore, Not Reported in Atl. Rptr. (2023)\n2023 WL 6190457\n\n"
    "Court of Chancery of Delaware.\n*1 Plaintiff challenges a squeeze-out merger.\n*2 The "
    "committee could not explore alternatives.",
    "Pelham Retirement System v. Dunmore, Not Reported in Atl. Rptr. (2023)\n2023 WL 6190457\n\n"
    "*3 Back-channel communications between a controller and a committee member about price "
    "support an inference of unfair dealing.\n*4 Exculpation does not reach bad faith.",
]


@pytest.mark.parametrize(("pin", "status"), [("*3", "supported"), ("*1", "unsupported")])
def test_a_westlaw_opinion_is_paged_by_its_screen_pages(pin: str, status: str) -> None:
    text = (
        "Back-channel communications between a controller and a committee member about price "
        f"support an inference of unfair dealing. Pelham Ret. Sys. v. Dunmore, 2023 WL 6190457, "
        f"at {pin} (Del. Ch. Sept. 22, 2023)."
    )
    (found,) = _cases(text, [("opinion-pelham-westlaw.pdf", WESTLAW)])
    assert found.status == status, found.message
    assert "6190457-" not in found.message  # its pages are 1-4, not the document's number


PROJECTIONS = [
    "MANAGEMENT CASE SUMMARY\n\n($ in millions)            2026E      2027E      2028E\n"
    "Revenue                      487        812      1,142\n"
    "Unlevered free cash flow      48        221        412\n"
]


def test_a_table_that_states_its_unit_prints_amounts_in_it() -> None:
    found = _found(
        "The plan projected 2028 revenue of $1,142 million and free cash flow of $412 million "
        "(WLD000001).",
        [("projections.pdf", PROJECTIONS)],
    )
    assert found["$1,142 million"].status == "supported", found["$1,142 million"].message
    assert found["$412 million"].status == "supported"
    wrong = _found("Revenue was $1,412 million (WLD000001).", [("p.pdf", PROJECTIONS)])
    assert wrong["$1,412 million"].status != "supported"
    # Without the statement of its unit a row of figures is no amount.
    plain = [PROJECTIONS[0].replace("($ in millions)", "(units)")]
    assert (
        _found("Revenue was $1,142 million (WLD000001).", [("p.pdf", plain)])[
            "$1,142 million"
        ].status
        != "supported"
    )


WHITCOMB = [
    _deposition_page(
        38,
        {
            1: "Q. Mr. Whitcomb, you were the quality engineer at Dalcrest",
            2: "for the heater platform? A. Senior quality engineer. Yes.",
        },
    ),
    _deposition_page(
        40,
        {
            9: "A. It means we used up the Hengli cutoffs we had on",
            10: "hand before switching.",
            11: "Q. So heaters with the Hengli cutoff kept shipping",
            12: "after the ECO was approved?",
        },
    ),
]


def test_a_quotation_no_line_holds_leaves_the_lines_unjudged_by_the_words_around_it() -> None:
    found = _found(
        "Dalcrest's engineer conceded, \"We knew the Hengli cutoffs were welding and we kept "
        'shipping them anyway." (Whitcomb Dep. 40:9-14).',
        [("06-whitcomb-deposition.pdf", WHITCOMB), ("roster.pdf", ["Dalcrest engineer roster."])],
    )
    assert found["Whitcomb Dep. 40:9-14"].status == "needs_review"
    quote = next(f for f in found.values() if f.claim.kind == "quote")
    assert quote.status == "unsupported"


def test_a_line_of_prose_ending_on_a_page_reference_is_no_footer() -> None:
    report = [
        "TEST REPORT TR-2019-044\nSupplier B: 3 of 6 samples failed to open (contacts welded) "
        "before 10,000\ncycles. See Table 1 (page 2) and Table 2 (page 3).\n\n"
        "Test Report - Page 1 of 3"
    ]
    found = _found(
        'Three Hengli cutoffs "failed to open (contacts welded) before 10,000 cycles" (WLD000001).',
        [("test-report.pdf", report)],
    )
    quote = next(f for f in found.values() if f.claim.kind == "quote")
    assert quote.status == "supported", quote.message


def test_a_cite_in_a_string_vouches_for_its_own_parenthetical() -> None:
    found = _cases(
        '"A statement of present fact about known trial data is actionable." Talvane v. Orr, '
        "88 F.4th 301, 303 (2d Cir. 2023); see also id. at 304 (scienter may rest on sales "
        "made after learning of the results)."
    )
    assert [f.status for f in found] == ["supported", "supported"], [f.message for f in found]


@pytest.mark.parametrize(
    ("text", "token"),
    [
        ("Ferris attached the model. *See* Brightline_LRP_Revised_v4.xlsx. Next.", "Brightline"),
        ("The messages came from her phone. ELL-IPH-0007. The next day she wrote.", "ELL-IPH-0007"),
    ],
)
def test_a_signal_in_emphasis_and_a_token_standing_as_a_sentence_are_cite_positions(
    text: str, token: str
) -> None:
    found = _found(text, [("a.pdf", ["Ferris attached the model from her phone."])])
    flagged = [k for k, f in found.items() if f.claim.kind == "not_a_record_cite"]
    assert all(found[k].status == "unsupported" for k in flagged)
    assert len(flagged) == 1 and flagged[0].startswith(token), found
    # A word standing as a sentence ("Denied.") is none.
    assert not _found("The motion was heard. Denied. The next.", [("a.pdf", ["Heard."])])


COMMITTEE = [
    "SPECIAL COMMITTEE MINUTES - November 21, 2023\nThe Committee agreed in principle to "
    "proceed at $41.25 per share.",
    "SPECIAL COMMITTEE MINUTES - November 22, 2023\nThe Committee reviewed the draft proxy.",
]


def test_a_value_in_a_sentence_vouched_for_by_a_citation_sentence_must_be_on_its_page() -> None:
    found = _found(
        "On November 22, 2023, the Committee agreed in principle to proceed at $41.25. "
        "WLD000001. Then the proxy followed.",
        [("committee-minutes.pdf", COMMITTEE)],
    )
    assert found["November 22, 2023"].status == "contradicted", found["November 22, 2023"].message
    assert found["$41.25"].status == "supported"


def test_an_amount_with_three_decimals_before_its_scale_is_read() -> None:
    report = ["SALES REPORT\nNote 1. Ohio Valley includes Marston revenue ($1,184,000)."]
    found = _found("The move cost $1.148 million in revenue (WLD000001 n.1).", [("r.pdf", report)])
    assert found["$1.148 million"].status == "contradicted", found["$1.148 million"].message
    right = _found("The move cost $1.184 million in revenue (WLD000001).", [("r.pdf", report)])
    assert right["$1.184 million"].status == "supported"
