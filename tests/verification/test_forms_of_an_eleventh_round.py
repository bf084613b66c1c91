"""Forms that the twentieth session's cases showed (an eleventh round of cases written by hand:
a bid protest in the Court of Federal Claims, a will contest in a New York Surrogate's Court, a
music copyright case), each tested on text of our own from the rule it follows:

- an administrative record's tab pinned by its Bates number ("AR Tab 14 at 1210"): the tab's
  page stamped AR1210, not its page 1210 (a number no page of the tab carries stays an error);
- a part of a brief where a record cite belongs is the drafter's argument, not evidence: the
  draft's own heading or caption ("(Table 1)" under its "**Table 1. Final Ratings**"), a
  cross-reference to a division of a brief ("(Point I, supra)") and a division of a party's
  brief ("(Objectant's Mem. of Law, Point II)", "See Pl.'s Mot., Table 1.": a party's and a
  brief's abbreviations end no citation sentence); a table no heading of the draft names, a
  page of a party's brief, and a statute's section stay what they were;
- a short code that opens with digits and has letters between digits ("(CAGE 3RMV9)", a
  registrant's code) where a record cite belongs is no record cite;
- (a twelfth round: a Texas well-site injury, an Illinois retaliatory discharge, a FOIA case)
  a proceeding's case number by its year, type and serial ("(21 WC 014587 at 4)", no
  reporter's page: no reporter pads its pages), a work pinned by a row of its table
  ("(Timeline, row 9)") that no packet document is named, and a party's brief named with
  what it answers ("Pl.'s Resp. to Mot. for Summ. J., Part II.A") are no record cites; nor a
  list's item ("(Exhibit List, item F)"), nor a citation sentence that is one of the draft's
  own parts ("... withheld in full. Table 2." under its "**Table 2: Withheld records**");
- a Bates page given after a transcript's page and lines with a comma ("(Garza Dep. 38:3-9,
  PLTF 000230)") must print that transcript page, as one given before them in parentheses;
- a case's name checked against the opinion by its first word written out: the Bluebook's
  abbreviations ("U.S. Att'ys", "Dep't", "Exec.") are not printed so in a caption;
- (a thirteenth round: a § 2254 habeas case in W.D. Mich., an AAA employment arbitration, a
  CERCLA case) a filed record cited by its docket entry and the PageID its filing header
  prints ("ECF No. 9-4, PageID.271", "ECF No. 9-7, PageID.639-40", as the Sixth Circuit's
  district courts cite the record) is the page printing that PageID, in that entry; a PageID
  no page prints is out of the packet; a PageID alone stays a number printed on a page, no
  Bates number of this production; a petition's "Ground Two, supra" and a brief named by its
  place in the briefing ("Reply Br., Ground Two") are the drafter's own work; a party's
  exhibit label after the packet's order number in a file's name ("01-jx1-employment-
  agreement.pdf") labels the document, so "JX-1 at 2" is its page 2; a short code of letters
  and a number after a signal closing its sentence ("*See* MW-7.", a monitoring well's name)
  is no record cite (in a parenthetical, "the well (MW-7)", it names a thing); a transcript
  cited by its volume ("Trial Tr. vol. II, 145:1-3") is the file its volume names
  ("...-vol-2.pdf"), its page and lines checked; a court filing's header over a filed
  transcript ("... Filed 06/02/23 Page 146 of 172") gives the filing's page, not the
  transcript's (the number printed below it); (a fourteenth round: an FDCPA class action in
  N.D. Ga.) a docket entry pinned by the page its filing header counts ("Doc. 45-3 at 7", the
  Eleventh Circuit's form) is that page of that entry, also for the values of its sentence; an
  entry or a page no header prints is out of the packet;
- a clause of the declarant's own after a cite ("(EST-000104-105), which I marked as Exhibit 4
  at the examination") tells what the witness did with the document, not what its pages say;
- the New York Official Reports write a citation's court and year in brackets ("178 AD3d 1021,
  1023 [3d Dept 2019]"): the citation ends there, and does not reach for the next
  parenthetical's number as its year; words before a colon or a closed parenthetical ("Exhibit
  J: Matter of Verhoeven, ...") are no part of a case's name.
"""

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex
from tests.verification.packets import findings_by_claim, labelled_index, transcript_page

WORKSHEET = [
    ("AR1209", "[AR Tab 14]\nTECHNICAL EVALUATION WORKSHEET - CASTELLAN\nFactor 1: Acceptable."),
    (
        "AR1210",
        "[AR Tab 14]\nStrength 2: the transition plan commits to capture 92 percent of the "
        "incumbent workforce within thirty days of award.",
    ),
    ("AR1211", "[AR Tab 14]\nWeaknesses: none. Staffing: 131.0 FTEs proposed."),
]
EMAILS = [
    ("AR1290", "[AR Tab 21]\nFrom: Whitfield\nPlease have the team take another look."),
]


def _ar(text: str) -> dict[str, object]:
    index = labelled_index(
        [("14-tet-worksheet-castellan.pdf", WORKSHEET), ("21-co-emails.pdf", EMAILS)]
    )
    return findings_by_claim(text, index, "AR")


def test_a_tab_pinned_by_its_bates_number_is_that_page_of_the_tab() -> None:
    findings = _ar(
        "The evaluators credited Castellan with a commitment to capture 92 percent of the "
        "incumbent workforce (AR Tab 14 at 1210). The worksheet lists 131.0 FTEs (AR Tab 14 at "
        "1290)."
    )

    held = findings["AR Tab 14 at 1210"]
    assert held.status == "supported", held.message
    assert held.page is not None and held.page.bates == ("AR1210",)
    assert "its page AR1210" in held.message
    # 1290 is a page of another tab: none of this one's.
    assert findings["AR Tab 14 at 1290"].status == "unsupported"


def _cites(text: str, prefix: str = "EST-") -> list[tuple[str, str]]:
    return [
        (c.kind, c.text)
        for c in extract_claims(text, bates_prefixes=[prefix])
        if c.kind in ("record_cite", "not_a_record_cite")
    ]


BRIEF = (
    "### POINT I\n\n"
    "**Table 1. Final Consensus Ratings**\n\n"
    "| Offeror | Factor 1 |\n|---|---|\n| Meridian | Good |\n\n"
    "The ratings under Factor 1 were identical (Table 1). She could not name her bank "
    "(Point I, supra). Her decline is set out at length (Objectant's Mem. of Law, Point II). "
    "The bank's figures are summarized (Table 4). The Government argues otherwise (Def.'s "
    "Mot. at 12). The statute governs (Section 1404). The will was signed (EST-000101). The "
    "decision never mentions the risk. See Pl.'s Mot., Table 1."
)


def test_a_part_of_a_brief_where_a_cite_belongs_is_the_drafters_own_work() -> None:
    cites = _cites(BRIEF)
    assert [text for kind, text in cites if kind == "not_a_record_cite"] == [
        "Table 1",
        "Point I, supra",
        "Objectant's Mem. of Law, Point II",
        "Pl.'s Mot., Table 1",
    ]
    assert ("record_cite", "EST-000101") in cites
    index = labelled_index([("will.pdf", [("EST-000101", "LAST WILL AND TESTAMENT signed")])])
    findings = findings_by_claim(BRIEF, index, "EST-")
    for own in (
        "Table 1",
        "Point I, supra",
        "Objectant's Mem. of Law, Point II",
        "Pl.'s Mot., Table 1",
    ):
        assert findings[own].status == "unsupported", findings[own].message
        assert "a part of a brief" in findings[own].message


def test_words_after_a_cite_in_the_declarants_own_voice_are_not_the_cited_pages() -> None:
    notes = [
        ("EST-000104", "INTAKE NOTES - L. Castagna\nClient: Edith Akerley. Assets: house."),
        ("EST-000105", "CONTINUATION NOTES\nClient returned with D. Pelletreau."),
    ]
    transcript = [
        (
            "EST-000112",
            "SCPA 1404 EXAMINATION\nObjectants marked the attorney's notes as Exhibit 4 at the "
            "examination.",
        )
    ]
    index = labelled_index([("02-intake.pdf", notes), ("04-1404.pdf", transcript)])
    text = (
        "Annexed as Exhibit C are the intake and continuation notes of Lionel F. Castagna "
        "(EST-000104-105), which I marked as Objectant's Exhibit 4 at the SCPA 1404 "
        "examination. The notes list the house (EST-000104), which the will gives away."
    )

    findings = findings_by_claim(text, index, "EST-")

    assert findings["EST-000104-105"].status == "supported", findings["EST-000104-105"].message


def _cases(text: str) -> list[str]:
    return [
        c.text for c in extract_claims(text, bates_prefixes=["OBJ "]) if c.kind == "case_citation"
    ]


def test_new_yorks_bracketed_court_and_year_end_the_citation() -> None:
    assert _cases(
        "An inference arises (Verhoeven, 204 AD3d at 1188; see also Matter of Castellane, 178 "
        'AD3d 1021, 1023 [3d Dept 2019]). A caregiver "who controls the access" (Verhoeven, 204 '
        "AD3d at 1191)."
    ) == [
        "Verhoeven, 204 AD3d at 1188",
        "Matter of Castellane, 178 AD3d 1021, 1023 [3d Dept 2019]",
        "Verhoeven, 204 AD3d at 1191",
    ]


def test_words_before_a_colon_or_a_closed_parenthetical_are_no_part_of_a_cases_name() -> None:
    claims = [
        c
        for c in extract_claims(
            "They are annexed as Exhibit J: Matter of Verhoeven, 204 AD3d 1187 [2d Dept 2022] "
            "(OBJ 00452-00454) and Matter of Trowbridge, 219 AD3d 842 [3d Dept 2023] (OBJ "
            "00455-00461). See Feeney v. Ostrowski Lumber, Inc. (In re Larchmont Cabinet Co.), "
            "648 B.R. 407, 409 (Bankr. D. Del. 2023).",
            bates_prefixes=["OBJ "],
        )
        if c.kind == "case_citation"
    ]

    assert [c.text.split(",")[0] for c in claims] == [
        "Matter of Verhoeven",
        "Matter of Trowbridge",
        "See Feeney v. Ostrowski Lumber",
    ]
    names = [c.citation.name for c in claims if c.citation is not None]
    assert not any(name and ("Exhibit" in name or "OBJ" in name) for name in names), names


def test_a_short_code_with_letters_between_its_digits_is_no_record_cite() -> None:
    text = (
        "The ratings are set out in the Army's worksheets (CAGE 3RMV9). The court agreed (3d "
        "Cir. 2019). The award followed (AR 1224)."
    )
    cites = [
        (c.kind, c.text)
        for c in extract_claims(text, bates_prefixes=["AR"])
        if c.kind in ("record_cite", "not_a_record_cite")
    ]
    assert cites == [("not_a_record_cite", "CAGE 3RMV9"), ("record_cite", "AR 1224")]


def test_a_case_number_a_tables_row_and_a_response_brief_are_no_record_cites() -> None:
    text = (
        "The claim remains pending (21 WC 014587). The arbitrator rejected it (21 WC 014587 at "
        "4). None was coded as excused (Timeline, row 9). The findings agree (Pl.'s Resp. to "
        "Mot. for Summ. J., Part II.A). It is settled (Pelican Wharf, 68 Cal.App.5th at 415.) "
        "The letter says so (PL-0004)."
    )
    claims = extract_claims(text, bates_prefixes=["PL-"])

    assert [(c.kind, c.text) for c in claims if c.kind != "date"] == [
        ("not_a_record_cite", "21 WC 014587"),
        ("not_a_record_cite", "21 WC 014587 at 4"),
        ("not_a_record_cite", "Timeline, row 9"),
        ("not_a_record_cite", "Pl.'s Resp. to Mot. for Summ. J., Part II.A"),
        ("case_citation", "Pelican Wharf, 68 Cal.App.5th at 415"),
        ("record_cite", "PL-0004"),
    ]


def test_a_list_item_and_the_drafts_own_part_as_a_citation_sentence_are_no_record_cites() -> None:
    text = (
        "**Table 2: Withheld records**\n\n| Doc | Date |\n|---|---|\n| 38 | 08/29/2023 |\n\n"
        "He had done it before (Exhibit List, item F). Every record was withheld in full. "
        "Table 2. The chart shows it. Table 3. The letter says so. DOJ-000101."
    )
    claims = extract_claims(text, bates_prefixes=["DOJ-"])

    assert [(c.kind, c.text) for c in claims if c.kind.endswith("record_cite")] == [
        ("not_a_record_cite", "Exhibit List, item F"),
        ("not_a_record_cite", "Table 2"),
        ("record_cite", "DOJ-000101"),
    ]


def test_a_bates_page_after_a_transcripts_lines_must_print_that_page() -> None:
    lines = {3: "Q. Who wanted it done?", 4: "A. He said the company man wanted it done by noon."}
    index = labelled_index(
        [
            (
                "garza-dep.pdf",
                [
                    ("PLTF 000230", transcript_page("GARZA", 37, {1: "Q. The bypass?"})),
                    ("PLTF 000231", transcript_page("GARZA", 38, lines)),
                ],
            )
        ]
    )
    text = (
        "Pruitt said the company man wanted it done by noon (Garza Dep. 38:3-4, PLTF 000230). "
        "He said so again (Garza Dep. 38:3-4, PLTF 000231)."
    )
    found = [f for f in _findings(text, index, "PLTF ") if f.claim.kind == "record_cite"]
    stamped = {(f.claim.text, f.claim.start): f for f in found if f.claim.text.startswith("PLTF")}

    first, second = sorted(stamped.items(), key=lambda item: item[0][1])
    assert first[1].status == "unsupported", first[1].message
    assert "38 is on PLTF 000231" in first[1].message
    assert second[1].status == "supported", second[1].message


def _findings(text: str, index: PacketIndex, prefix: str) -> list[Finding]:
    return verify_text(text, extract_claims(text, bates_prefixes=[prefix]), index)


def test_a_cases_name_is_checked_by_its_first_word_written_out() -> None:
    opinion = [
        (
            "REQ 0010",
            "301   714 FEDERAL SUPPLEMENT, 3d SERIES\nMaria SANDOVAL-REYES, Plaintiff,\nv.\n"
            "EXECUTIVE OFFICE FOR UNITED STATES ATTORNEYS, Defendant.\nFOIA cases are resolved "
            "on summary judgment.",
        ),
        ("REQ 0011", "302   714 FEDERAL SUPPLEMENT, 3d SERIES\nThe agency bears the burden."),
    ]
    index = labelled_index([("sandoval-reyes.pdf", opinion)])
    text = (
        "The agency bears the burden. Sandoval-Reyes v. Exec. Off. for U.S. Att'ys, 714 F. "
        "Supp. 3d 301, 302 (D.D.C. 2024)."
    )
    findings = [f for f in _findings(text, index, "REQ ") if f.claim.kind == "case_citation"]
    assert findings and all(f.check != "case_name" for f in findings), [
        (f.claim.text, f.message) for f in findings
    ]


def _filed_page(entry: str, page_id: int, body: str) -> str:
    header = f"Case 1:23-cv-00417  ECF No. {entry}, PageID.{page_id}  Filed 06/02/23  Page 3 of 40"
    return f"{header}\n\n{body}"


FILED = [
    (
        "police-report.pdf",
        [
            ("SCR-001001", _filed_page("9-2", 151, "INCIDENT REPORT\nA robbery was reported.")),
            (
                "SCR-001002",
                _filed_page("9-2", 152, "The suspect said he was with Keisha the whole night."),
            ),
        ],
    ),
    (
        "trial-vol-1.pdf",
        [
            (
                "SCR-001003",
                _filed_page("9-4", 271, "Detective Oduya repeated the alibi to the jury."),
            )
        ],
    ),
]


def test_a_filed_records_page_is_cited_by_its_entry_and_pageid() -> None:
    index = labelled_index(FILED)
    text = (
        "The suspect said he was with Keisha the whole night (ECF No. 9-2, PageID.152). The "
        "detective repeated the alibi to the jury (ECF No. 9-4, PageID.271). The report was "
        "filed (ECF No. 9-7, PageID.712). The alibi was in the report (ECF No. 9-4, "
        "PageID.152). The whole report (ECF No. 9-2, PageID.151-52). The stamp (PageID.152). "
        "Everything (ECF No. 9-2, PageID.1-999999)."
    )
    findings = findings_by_claim(text, index, "SCR-")

    assert findings["ECF No. 9-2, PageID.152"].status == "supported"
    assert findings["ECF No. 9-2, PageID.152"].page.bates == ("SCR-001002",)
    assert findings["ECF No. 9-4, PageID.271"].status == "supported"
    assert findings["ECF No. 9-2, PageID.151-52"].status == "supported"
    missing = findings["ECF No. 9-7, PageID.712"]
    assert missing.status == "unsupported" and "PageID.712" in missing.message
    other = findings["ECF No. 9-4, PageID.152"]
    assert other.status == "unsupported" and "ECF No. 9-2, not of ECF No. 9-4" in other.message
    # A range past the budget of pages one cite may name is left for a person, not expanded.
    assert findings["ECF No. 9-2, PageID.1-999999"].status == "needs_review"
    # A PageID alone is a number printed on a page: no Bates number of this production.
    assert findings["PageID.152"].status == "unsupported"
    assert findings["PageID.152"].check == "not_a_record_cite"


def test_a_petitions_ground_and_a_reply_brief_are_the_drafters_own_work() -> None:
    claims = extract_claims(
        "It fails for the same reason (Ground Two, supra). The record shows otherwise (Reply "
        "Br., Ground Two). The statute applies (Section 2254). The report says so (SCR-001002).",
        bates_prefixes=["SCR-"],
    )
    assert [(c.kind, c.text) for c in claims if c.kind.endswith("record_cite")] == [
        ("not_a_record_cite", "Ground Two, supra"),
        ("not_a_record_cite", "Reply Br., Ground Two"),
        ("record_cite", "SCR-001002"),
    ]


def test_a_party_exhibit_label_after_the_order_number_of_a_file_labels_it() -> None:
    index = labelled_index(
        [
            (
                "01-jx1-employment-agreement.pdf",
                [
                    ("VNT-004501", "AGREEMENT"),
                    ("VNT-004502", "Section 5.2 commissions are earned on booking."),
                ],
            ),
            ("02-cx2-demand-letter.pdf", [("CLM000101", "DEMAND LETTER of counsel")]),
        ]
    )
    text = "Commissions are earned on booking (JX-1 at 2). Counsel wrote a demand (CX-2 at 1)."
    findings = findings_by_claim(text, index, "VNT-")

    assert findings["JX-1 at 2"].status == "supported", findings["JX-1 at 2"].message
    assert findings["JX-1 at 2"].page.bates == ("VNT-004502",)
    assert findings["CX-2 at 1"].status == "supported", findings["CX-2 at 1"].message


def test_a_short_code_after_a_signal_is_no_record_cite_but_a_parenthetical_name_is_none() -> None:
    claims = extract_claims(
        "Concentrations have not declined. *See* MW-7. The well (MW-7) is down-gradient. The "
        "report says so. *See* PSR-0001245.",
        bates_prefixes=["PSR-"],
    )
    assert [(c.kind, c.text) for c in claims if c.kind.endswith("record_cite")] == [
        ("not_a_record_cite", "MW-7"),
        ("record_cite", "PSR-0001245"),
    ]


def _volume_page(filed: int, page: int, lines: dict[int, str]) -> str:
    header = (
        f"Case 1:23-cv-00417  ECF No. 9-5, PageID.{400 + filed}  Filed 06/02/23  "
        f"Page {filed} of 172"
    )
    body = "\n".join(f"{n:3d}   {lines.get(n, '')}" for n in range(1, 26))
    return f"{header}\n\n{page:>60}\n\n{body}"


def test_a_transcript_cited_by_volume_is_that_volumes_file_and_its_own_page_numbers() -> None:
    index = labelled_index(
        [
            (
                "03-trial-transcript-vol-1.pdf",
                [("SCR-001010", _volume_page(61, 145, {1: "Q. Did the detective see him?"}))],
            ),
            (
                "04-trial-transcript-vol-2.pdf",
                [
                    (
                        "SCR-001015",
                        _volume_page(145, 144, {3: "Q. Any witnesses for the defense?"}),
                    ),
                    (
                        "SCR-001016",
                        _volume_page(146, 145, {1: "MR. FINNERTY: I never spoke with anyone."}),
                    ),
                ],
            ),
        ]
    )
    text = (
        'Counsel said "I never spoke with anyone." (Trial Tr. vol. II, 145:1.) He said it again: '
        '"I never spoke with anyone." (Trial Tr. vol. II, 144:3.) The court asked more. (Trial '
        "Tr. vol. II, 244:15-17.)"
    )
    findings = findings_by_claim(text, index, "SCR-")

    right = findings["Trial Tr. vol. II, 145:1"]
    assert right.status == "supported", right.message
    assert right.page is not None and right.page.bates == ("SCR-001016",)
    assert findings["Trial Tr. vol. II, 144:3"].status == "unsupported"
    past = findings["Trial Tr. vol. II, 244:15-17"]
    assert past.status == "unsupported" and "no page 244" in past.message


def _entry_page(entry: str, page: int, of: int, body: str) -> str:
    return (
        f"Case 1:23-cv-02817-ELR   Document {entry}   Filed 09/12/23   Page {page} of {of}\n{body}"
    )


def test_a_docket_entry_is_cited_by_the_page_its_filing_header_counts() -> None:
    index = labelled_index(
        [
            (
                "call-log.pdf",
                [
                    ("MCS-000426", _entry_page("45-5", 1, 2, "CALL LOG 04/28/2023 no answer")),
                    (
                        "MCS-000427",
                        _entry_page("45-5", 2, 2, "05/02/2023 prerecorded message played"),
                    ),
                ],
            ),
            (
                "vendor-contract.pdf",
                [
                    (
                        "MCS-000431",
                        _entry_page("52-1", 1, 1, "Real-Time Suppression: $1,250.00 per month"),
                    )
                ],
            ),
        ]
    )
    text = (
        "That evening its dialer played the prerecorded message again (Doc. 45-5 at 2). The "
        "option was priced at $1,250.00 per month (Doc. 52-1 at 1). The log goes on (Doc. 45-5 "
        "at 3). Another filing says so (Doc. 61 at 2)."
    )
    findings = findings_by_claim(text, index, "MCS-")

    assert findings["Doc. 45-5 at 2"].status == "supported", findings["Doc. 45-5 at 2"].message
    assert findings["Doc. 45-5 at 2"].page.bates == ("MCS-000427",)
    assert findings["$1,250.00"].status == "supported", findings["$1,250.00"].message
    assert findings["Doc. 45-5 at 3"].status == "unsupported"
    assert "no page 3 of docket entry 45-5" in findings["Doc. 45-5 at 3"].message
    assert findings["Doc. 61 at 2"].status == "unsupported"
