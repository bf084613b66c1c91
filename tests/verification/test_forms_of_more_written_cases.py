"""More forms that drafts and productions take (issues 20 and 28), each from the rule it
follows, on packets of our own (the seventeenth session's cases written by hand, an ERISA
record, a bankruptcy preference action, a cargo claim and a patent case, showed them):

- a word and its forms are one term: a name and its possessive ("Keystone's", "KEYSTONE"), a
  plural and its singular ("invoices", "invoice"), a verb's forms ("rated", "rate");
- a Bates prefix of letters written as an abbreviation ("A.R. 215" for "AR 000215");
- an opinion the draft cites as authority states the law in a brief's words, never the case's
  facts: it does not lead against a cite of the record;
- the declarant's own act of reading ("I have reviewed") is how the writer came to the facts,
  no fact a page must carry;
- an adversary proceeding's caption before the bankruptcy case's name is part of the citation;
- an "Id." after a thing used as a cite is the authority cited before the thing;
- the stop of a number's label ("Policy No. GLT-0047719.") ends no sentence;
- a work marked as the team's own draft ("Draft v3", "the prior draft of this brief") cited with
  a pin in running prose is a reference to the system's own work;
- a margin counting lines by fives (a patent's columns, pleading paper) is no part of a
  quotation;
- a patent's number is no statute; a patent is cited by column and line ("'482 patent at
  5:19-22"), its columns read from the numbers printed above them;
- a court filing's "PageID #: 1173" and a "Vch# 01477" are numbers of things;
- a cite right after a defined term's parenthetical names that document, not the rest of the
  sentence; a table row's description before its cite, and a signature block, are no cite
  positions;
- a document's name is read with its letters and digits apart ("2022 10-K" is
  "form-10k-fy2022.pdf");
- (from two cases of a second round, a Clean Water Act suit and a suppression motion) a bar
  number after a name on its own line is no cite; a citation's year is read only from a
  parenthetical that ends in one, not from "(quoting Corvane, 12 F.4th at 1189)"; a
  transcript page's number alone above its lines is its number though a line could be
  numbered so ("24"); a time with its seconds ("14:54:48") is a fact a page must print;
- (from a third round, measured before these two) a round amount given as a bound or an
  approximation ("more than three million dollars") holds by the amounts it admits; a
  number's label in the plural ("Registration Nos.") is no fact; a name the draft defines
  ('Interim Report No. 2 ("IR-2")') names the document its definition names (found on the
  hand-written securities case, whose "IR-2 at 1" had been no cite at all).
"""

import pytest

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.normalise import stem, token_list
from tests.verification.packets import findings_by_claim, text_index

PREFIX = "WLD"


def _found(
    text: str, documents: list[tuple[str, list[str]]], prefix: str = PREFIX
) -> dict[str, Finding]:
    return findings_by_claim(text, text_index(prefix, documents), prefix)


def _kinds(text: str, prefix: str = PREFIX) -> list[tuple[str, str]]:
    return [(c.kind, c.text) for c in extract_claims(text, bates_prefixes=[prefix])]


@pytest.mark.parametrize(
    "forms",
    [
        ("Keystone's", "KEYSTONE", "keystones"),
        ("invoice", "invoices", "invoiced"),
        ("rate", "rates", "rated", "rating"),
        ("party", "parties"),
        ("day", "days"),
        ("breach", "breaches", "breached"),
        ("class", "classes"),
        ("status", "statuses"),
        ("employee", "employees"),
        ("proceed", "proceeds", "proceeded", "proceeding"),
    ],
)
def test_a_word_and_its_forms_are_one_term(forms: tuple[str, ...]) -> None:
    stems = {stem(token_list(form)[0]) for form in forms}
    assert len(stems) == 1, stems


def test_words_that_only_end_in_s_keep_it() -> None:
    assert stem("status") == "status" and stem("basis") == "basis" and stem("class") == "class"


def test_a_prefix_of_letters_is_read_when_written_as_an_abbreviation() -> None:
    index_pages = [("01-plan.pdf", ["Keystone may determine eligibility in its discretion."])]
    found = findings_by_claim(
        "It delegates discretion to Keystone (A.R. 215). It pays from its assets (A.R. 264).",
        text_index("AR ", index_pages, first=215),
        "AR ",
    )
    assert found["A.R. 215"].status == "supported", found["A.R. 215"].message
    assert found["A.R. 264"].status == "unsupported"
    assert found["A.R. 264"].check == "bates_in_packet", found["A.R. 264"].message
    assert _kinds("See A. R. 216-18 and AR217.", "AR ") == [
        ("record_cite", "A. R. 216-18"),
        ("record_cite", "AR217"),
    ]


REGISTER = [
    "AP PAYMENT REGISTER - VENDOR 20417\nInvoice   Invoice date   Paid      Days\n"
    "TH-1181   11/02/2021     12/20/21  48\nTH-1190   11/09/2021     12/28/21  49",
    "AP PAYMENT REGISTER - VENDOR 20417\nInvoice   Invoice date   Paid      Days\n"
    "TH-2201   02/01/2022     04/22/22  80\nTH-2214   02/08/2022     04/29/22  80",
]
LARCHMONT = [
    "LARCHMONT v. MOSS    648 B.R. 407\nPayments in the preference period that fell outside the "
    "historical range of payment timing are not ordinary.",
    "LARCHMONT v. MOSS    408\nThe creditor bears the burden on the defence.",
]


def test_an_opinion_the_draft_cites_never_leads_against_a_record_cite() -> None:
    sentence = (
        "Every invoice paid in the preference period fell outside the historical range "
        "(WLD000002). Larchmont v. Moss, 648 B.R. 407 (Bankr. D. Del. 2023)."
    )
    found = _found(sentence, [("register.pdf", REGISTER), ("larchmont.pdf", LARCHMONT)])
    assert "WLD000003" not in found["WLD000002"].message, found["WLD000002"].message
    assert found["WLD000002"].status != "unsupported", found["WLD000002"].message
    # A record page that states it does lead (the lead is the record's own).
    summary = (
        "summary.pdf",
        ["Every preference period payment fell outside the historical range."],
    )
    moved = _found(sentence, [("register.pdf", REGISTER), summary, ("larchmont.pdf", LARCHMONT)])
    assert moved["WLD000002"].status == "unsupported", moved["WLD000002"].message
    assert "WLD000003" in moved["WLD000002"].message


SCHEDULE = [
    "NEW VALUE SCHEDULE\nShipment  Ship date   Invoice      Amount\n1  05/02/22  TH-2301  "
    "48,200.00\n2  05/09/22  TH-2316  51,775.00",
]
AGREEMENT = ["The Buyer reviewed the terms. Schedule A lists the goods shipped."]


def test_the_declarants_own_act_of_reading_is_no_fact_a_page_must_carry() -> None:
    found = _found(
        "I have reviewed each of the shipments it lists (WLD000001).",
        [("schedule.pdf", SCHEDULE), ("agreement.pdf", AGREEMENT)],
    )
    assert found["WLD000001"].status == "supported", found["WLD000001"].message
    # A third person's reading is a fact of the record.
    theirs = _found(
        "The Buyer reviewed each of the shipments it lists (WLD000001).",
        [("schedule.pdf", SCHEDULE), ("agreement.pdf", AGREEMENT)],
    )
    assert theirs["WLD000001"].status == "unsupported", theirs["WLD000001"].message


def test_an_adversary_proceedings_caption_is_part_of_the_citation() -> None:
    text = (
        "Courts here apply it. Feeney v. Ostrowski Lumber, Inc. (In re Larchmont Cabinet Co.), "
        "648 B.R. 407, 408 (Bankr. D. Del. 2023)."
    )
    (claim,) = [c for c in extract_claims(text) if c.kind == "case_citation"]
    assert claim.text.startswith("Feeney v. Ostrowski Lumber, Inc. (In re Larchmont")
    # A case cited in parentheses keeps its own start.
    (alone,) = list(extract_claims("It applies (In re Acme Co., 5 B.R. 7 (1990))."))
    assert "In re Acme Co., 5 B.R. 7" in alone.text


def test_an_id_after_a_thing_used_as_a_cite_is_the_case_cited_before_it() -> None:
    found = _found(
        "The creditor bears the burden on the defence. Larchmont v. Moss, 648 B.R. 407, 408 "
        "(Bankr. D. Del. 2023). He dismissed the drugs (MCR-22-077140 at 3). The creditor "
        "bears the burden on the defence. Id. at 408.",
        [("larchmont.pdf", LARCHMONT)],
    )
    assert found["Id. at 408"].status == "supported", found["Id. at 408"].message
    assert found["MCR-22-077140 at 3"].status == "unsupported"


def test_the_stop_of_a_numbers_label_ends_no_sentence() -> None:
    assert _kinds("The plan is insured under Group Policy No. GLT-0047719. It pays.") == []
    assert _kinds("The plan is insured. GLT-0047719.") == [("not_a_record_cite", "GLT-0047719")]


@pytest.mark.parametrize(
    ("text", "reference"),
    [
        ("It is laid out in the Statement of Facts, Draft v3, ¶ 14.", "Draft v3, ¶ 14"),
        (
            "The computation is in the lexweb damages worksheet v2, tab 2.",
            "lexweb damages worksheet v2, tab 2",
        ),
        ("It is summarized in Delacroix Decl. draft v1, ¶ 18.", "Delacroix Decl. draft v1, ¶ 18"),
        (
            "These are questions of fact, as explained in the prior draft of this brief, § II.B.",
            "prior draft of this brief, § II.B",
        ),
        ("Section 4.2 of the Draft Purchase Agreement, § 4.2, governs.", None),
        ("The unit runs firmware v2.1, p. 4 of the manual says so.", None),
        ("The earlier version was rejected in 2021.", None),
    ],
)
def test_the_teams_own_draft_cited_with_a_pin_in_prose_is_a_reference_to_its_work(
    text: str, reference: str | None
) -> None:
    expected = [("not_a_record_cite", reference)] if reference else []
    assert _kinds(text) == expected


def _patent_page(first: int, lines: list[str]) -> str:
    """A printed page of a patent's text: its column's number above it and a margin counting
    its lines by fives."""
    body = [f"{n:>4}  {line}" if n % 5 == 0 else f"      {line}" for n, line in enumerate(lines, 1)]
    return f"{' ' * 50}U.S. Patent No. 11,206,482 B2\n\n{' ' * 40}{first}\n" + "\n".join(body)


def _column(words: str, count: int = 20) -> list[str]:
    return [f"{words} line {n} of the column." for n in range(1, count + 1)]


PATENT = [
    "UNITED STATES PATENT\nPatent No.: US 11,206,482 B2\nVASCULAR CLOSURE DEVICE\nAbstract: "
    "a tethered anchor.",
    _patent_page(1, _column("Background of closure devices and manual compression")),
    _patent_page(
        2,
        [
            *_column("Summary", 18),
            "A separate locking element is a component, distinct from the tether and the",
            "sealing plug, that is deployed by the operator to fix the plug.",
        ],
    ),
    _patent_page(3, ["The friction region is overmolded onto the tether.", *_column("Claims")]),
]


def test_a_margin_counting_lines_by_fives_is_no_part_of_a_quotation() -> None:
    found = _found(
        'A locking element is "a component, distinct from the tether and the sealing plug, '
        'that is deployed by the operator" (WLD000003).',
        [("01-us-patent-11206482.pdf", PATENT)],
    )
    quote = next(f for f in found.values() if f.claim.kind == "quote")
    assert quote.status == "supported", quote.message


def test_a_patent_is_cited_by_column_and_line() -> None:
    documents = [("01-us-patent-11206482.pdf", PATENT), ("02-spec.pdf", ["ArcSeal spec."])]
    found = _found(
        "The friction region is overmolded onto the tether ('482 patent at 3:1-2). The "
        "friction region is overmolded onto the tether ('482 patent, col. 1, ll. 3-4). It "
        "fixes the plug ('482 patent at 9:1-4). Operators deploy the locking element ('482 "
        "patent at 2:19-3:1).",
        documents,
    )
    right = found["'482 patent at 3:1-2"]
    assert right.status == "supported", right.message
    assert right.page is not None and right.page.bates == ("WLD000004",)
    wrong = found["'482 patent, col. 1, ll. 3-4"]
    assert wrong.status == "unsupported" and "WLD000004" in wrong.message, wrong.message
    missing = found["'482 patent at 9:1-4"]
    assert missing.status == "unsupported" and "no column 9" in missing.message, missing.message
    assert found["'482 patent at 2:19-3:1"].status == "supported"


def test_a_patents_number_is_no_statute_and_numbers_of_things_are_not_cites() -> None:
    assert _kinds("Quillon asserts U.S. Patent No. 11,206,482 against it (35 U.S.C. § 271).") == [
        ("statute", "35 U.S.C. § 271")
    ]
    assert _kinds("I found a mean of 2.9%. (PageID #: 1173.)") == [
        ("not_a_record_cite", "PageID #: 1173")
    ]
    assert _kinds("The voucher stamp confirms it (Vch# 01477).") == [
        ("not_a_record_cite", "Vch# 01477")
    ]


def test_a_cite_after_a_defined_terms_parenthetical_names_that_document() -> None:
    found = _found(
        'Quillon asserts U.S. Patent No. 11,206,482 (the "\'482 patent") (WLD000001-4) against '
        "the ArcSeal system made and sold by Defendant Brightwater.",
        [
            ("01-us-patent-11206482.pdf", PATENT),
            ("02-complaint.pdf", ["Defendant Brightwater makes and sells the ArcSeal system."]),
        ],
    )
    assert found["WLD000001-4"].status == "supported", found["WLD000001-4"].message


def test_a_table_rows_description_and_a_signature_block_are_no_cite_positions() -> None:
    text = (
        "Exhibits.\n\n| No. | Document | Bates |\n|---|---|---|\n"
        "| 6 | Proof of Claim (Claim No. 1473), with Attachment A | WLD000001-02 |\n\n"
        "He paid it (Acct. No. 2297-5352).\n\nRespectfully submitted,\n\n/s/ Miriam T. Aldous\n"
        "Miriam T. Aldous (BBO No. 671204)\nALDOUS LLP\n"
    )
    assert _kinds(text) == [
        ("record_cite", "WLD000001-02"),
        ("not_a_record_cite", "Acct. No. 2297-5352"),
    ]


def test_a_documents_name_is_read_with_its_letters_and_digits_apart() -> None:
    documents = [
        ("01-form-10k-fy2022.pdf", ["ANNUAL REPORT", "Our business depends on velnoprant."]),
        ("02-form-10q-q1-2023.pdf", ["QUARTERLY REPORT", "Enrollment paused."]),
    ]
    found = _found(
        "The filing said its business depends on velnoprant (2022 10-K at 2).", documents
    )
    finding = found["2022 10-K at 2"]
    assert finding.status == "supported", finding.message
    assert "01-form-10k-fy2022.pdf" in finding.message


def test_a_bar_number_after_a_name_on_its_own_line_is_no_cite() -> None:
    text = (
        "MARCHETTI & OYELARAN LLP\nLucia Marchetti (SBN 281946)\n1999 Harrison Street\n\n"
        "Harlan paid the penalty (Acct. No. 2297-5352).\n"
    )
    assert _kinds(text) == [("not_a_record_cite", "Acct. No. 2297-5352")]


def test_a_year_is_read_only_from_a_parenthetical_that_ends_in_one() -> None:
    text = (
        "Ohlone Creek v. Treadwell, 2022 WL 3914466, at *2 (N.D. Cal. Aug. 30, 2022). A DMR "
        "is proof. Ohlone Creek, 2022 WL 3914466, at *3 (quoting Corvane, 12 F.4th at 1189)."
    )
    years = [c.citation.year for c in extract_claims(text) if c.citation is not None]
    assert years[:2] == [2022, None], years


def _hearing_page(number: int, lines: dict[int, str]) -> str:
    body = "\n".join(f"{n:>2}   {lines.get(n, 'Q.  And then?')}" for n in range(1, 26))
    return f"{' ' * 90}{number}\n\n{body}\n        Official Court Reporter"


def test_a_transcript_page_numbered_as_a_line_could_be_is_read_by_its_number() -> None:
    hearing = [
        _hearing_page(1, {3: "SUPPRESSION HEARING"}),
        _hearing_page(24, {11: "Q.  You did not turn to page 3?", 12: "A.  I don't recall, no."}),
        _hearing_page(25, {20: "Q.  The returns came back clean?", 21: "A.  They did."}),
    ]
    found = _found(
        "He did not recall turning to page 3 (Hr'g Tr. 24:11-12). The returns came back "
        "clean (Hr'g Tr. 25:20-21).",
        [("hearing-transcript.pdf", hearing)],
    )
    assert found["Hr'g Tr. 24:11-12"].status == "supported", found["Hr'g Tr. 24:11-12"].message
    assert found["Hr'g Tr. 25:20-21"].status == "supported", found["Hr'g Tr. 25:20-21"].message


CAD = [
    "CAD EVENT CHRONOLOGY\n14:31:52  TRAFFIC STOP\n14:41:03  NCIC RETURN  NO WANTS",
    "CAD EVENT CHRONOLOGY\n14:50:37  K9 ON SCENE\n14:54:48  K9 ALERT",
]


@pytest.mark.parametrize(
    ("cited", "status"), [("WLD000002", "supported"), ("WLD000001", "unsupported")]
)
def test_a_time_with_its_seconds_is_a_fact_the_cited_page_must_print(
    cited: str, status: str
) -> None:
    found = _found(f"The dog alerted at 14:54:48 ({cited}).", [("cad.pdf", CAD)])
    assert found[cited].status == status, found[cited].message


COTTERELL = [
    "COTTERELL MUT. INS. CO. v. BANFIELD HAULING    315 Ga. 207\n892 S.E.2d 644\nThe measure "
    "of damages for injury to personal property is the difference in value.",
    "COTTERELL    208\nThe reasonable cost of repair is competent evidence of that difference.",
    "COTTERELL    209\nPayment of the repair charges is some evidence they were reasonable.",
]


def test_a_parallel_citation_names_the_opinion_its_first_reporter_names() -> None:
    found = _cases_found(
        "The cost of repair is competent evidence of that difference. Cotterell Mut. Ins. Co. "
        "v. Banfield Hauling, 315 Ga. 207, 208, 892 S.E.2d 644, 645 (2023). Payment of the "
        "repair charges is some evidence they were reasonable. Cotterell, 315 Ga. at 209, 892 "
        "S.E.2d at 646. Payment is some evidence the charges were reasonable. Id. at 209. The "
        "rule is settled. O.C.G.A. § 9-11-56(c); Whitlock v. Oconee, 362 Ga. App. 418, 880 "
        "S.E.2d 512 (2022)."
    )
    statuses = [(f.claim.citation.pin if f.claim.citation else None, f.status) for f in found]
    assert statuses[:6] == [
        ("208", "supported"),  # 315 Ga. 207, 208
        ("645", "needs_review"),  # its parallel: the copy is paged as Ga.
        ("209", "supported"),  # 315 Ga. at 209
        ("646", "needs_review"),
        ("209", "supported"),  # Id.: the case's, in its first reporter
        (None, "unsupported"),  # Whitlock: not in the packet
    ], [f.message for f in found]
    assert len(found) == 7  # "§ 9-11-56" is a section's number, not a date


def _cases_found(text: str) -> list[Finding]:
    index = text_index(PREFIX, [("cotterell.pdf", COTTERELL)])
    claims = extract_claims(text, bates_prefixes=[PREFIX])
    found = verify_text(text, claims, index)
    return [f for f in found if f.claim.kind in ("case_citation", "date")]


NOTE = ["PROMISSORY NOTE\nPrincipal: $3,250,000.00\nInterest: 6.25% per annum."]


@pytest.mark.parametrize(
    ("sentence", "status"),
    [
        ("Borrower borrowed more than three million dollars.", "supported"),
        ("Borrower borrowed approximately $3 million.", "supported"),
        ("Borrower borrowed more than five million dollars.", "unsupported"),
        ("Borrower borrowed nearly $3 million.", "unsupported"),
        ("Borrower borrowed $3 million.", "unsupported"),
        ("Borrower borrowed more than $3 million (WLD000001).", "supported"),
        # A precise figure is the record's own, approximation or not.
        ("Borrower borrowed nearly $3.3 million.", "unsupported"),
        ("Borrower borrowed more than $3,200,000.", "unsupported"),
    ],
)
def test_an_amount_given_as_a_bound_or_an_approximation_holds_by_the_amounts_it_admits(
    sentence: str, status: str
) -> None:
    found = _found(sentence, [("note.pdf", NOTE)])
    (amount,) = [f for f in found.values() if f.claim.kind == "amount"]
    assert amount.status == status, amount.message


CERTIFICATES = [
    "UNITED STATES PATENT AND TRADEMARK OFFICE\nReg. No. 5,412,877\nSIERRA MADRONA COMPANY",
    "UNITED STATES PATENT AND TRADEMARK OFFICE\nReg. No. 6,208,341\nSIERRA MADRONA COMPANY",
]
REPORT = ["MATERIALS CONSIDERED\nU.S. Registration Nos. 5,412,877 and 6,208,341; photographs."]


def test_a_numbers_label_in_the_plural_is_no_fact() -> None:
    found = _found(
        "I also considered U.S. Registration Nos. 5,412,877 and 6,208,341 (WLD000001-02).",
        [("registrations.pdf", CERTIFICATES), ("report.pdf", REPORT)],
    )
    assert found["WLD000001-02"].status == "supported", found["WLD000001-02"].message


REPORTS = [
    ("12-meridex-interim-report-2.pdf", ["INTERIM REPORT 2\nUnblinded, arm-level safety data."]),
    ("13-meridex-interim-report-3.pdf", ["INTERIM REPORT 3\nBlinded, pooled safety data."]),
]


@pytest.mark.parametrize(("page", "status"), [("1", "supported"), ("4", "unsupported")])
def test_a_name_the_draft_defines_names_the_document_its_definition_names(
    page: str, status: str
) -> None:
    cite = f"IR-2 at {page}"
    found = _found(
        f'Meridex delivered Interim Report No. 2 ("IR-2") to Corvid. It presented unblinded, '
        f"arm-level safety data ({cite}).",
        REPORTS,
    )
    assert found[cite].status == status, found[cite].message
    assert "12-meridex-interim-report-2.pdf" in found[cite].message
