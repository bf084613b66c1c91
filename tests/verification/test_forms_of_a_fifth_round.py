"""Forms that a fifth round of cases written by hand showed (eighteenth session, measured on
the code holding the fourth round's rules: a Texas royalty case, a federal sentencing
memorandum and an Ohio supply-contract case), each tested on packets of our own from the rule
it follows:

- a production whose prefix is a word's letters is cited by that word's abbreviation and the
  page's number ("App. 45" for "APP045", as Texas practice cites its summary-judgment
  appendix), never after another abbreviation ("Or. App. 512") or before a word ("App. 4th");
- a list of exhibits written title first ("the Llano run tickets (Ex. C); Mr. Renfro's
  email (Ex. E)") says what each exhibit is;
- an identifier in parentheses inside a sentence whose own citation sentence follows ("the 2H
  (API No. 42-329-44906). (App. 11-12.)") describes the thing, and is no cite;
- an Ohio opinion is found by the public-domain citation it prints as its own ("[Cite as
  ..., 2019-Ohio-2874.]"), its paragraphs numbered "{¶ 12}", and a short form pinned by
  paragraph ("Kerrigan at ¶ 19") is that case's;
- the statute a declaration's oath invokes ("I declare under penalty of perjury under 28
  U.S.C. § 1746") states no fact the packet must hold;
- the team's own draft cited as a pleading ("Prior Draft Decl. ¶ 12") is a reference to its
  work; the court's presentence report ("PSR ¶ 42"), like a pleading, is left for review
  where the packet holds none;
- (a sixth round, on the code of 34899b6: an AAA arbitration, a Pennsylvania device case, a
  Board inter partes review) a party's exhibit ("CX-12 at 4") is the document whose file
  name or page edge carries its label; an opinion is never the one its own text cites near a
  page's head ("... recognized in Hahn v. Richter, 543 Pa. 558, ..."); "By: /s/" opens a
  signature block; the system's earlier work cited with a pin in prose is its own work; the
  Board's exhibits are numbered in four digits and cited with a pin after a comma ("Ex.
  1001, 6:13-17" by column and line where the exhibit prints a patent's columns, "Ex. 1005,
  214" by the page it prints, "Ex. 1004, cover", "Ex. 2003, 4:5-8" by a transcript's page and
  lines); a bound rounds its figure down to one digit ("more than $80,000" is under $90,000);
- (a seventh round, on f99ef1c: a Louisiana contract case, a Massachusetts c. 93A case, an
  immigration case) a prefix stamped with its own stops and space ("R.A. 118"); a Louisiana
  citation is the opinion its parallel reporter names ("2018-1127 (La. App. 1 Cir. 5/31/19),
  278 So. 3d 611"); a number's label after "See" does not end the thing cited ("See Receipt
  No. ZLA2291784302."), and a thing's name may take three words ("DHS File A 214-567-903").
"""

from apps.verification.checks import Finding
from apps.verification.claims import extract_claims
from tests.verification.packets import findings_by_claim, text_index, transcript_page


def _found(text: str, prefix: str, documents: list[tuple[str, list[str]]]) -> dict[str, Finding]:
    return findings_by_claim(text, text_index(prefix, documents, first=7), prefix)


STATEMENTS = [
    "OWNER REVENUE STATEMENT  March 2023\nGas deductions: gathering $0.42/Mcf",
    "OWNER REVENUE STATEMENT  April 2023\nGas deductions: compression $0.55/Mcf",
]


def test_an_appendix_prefix_is_cited_by_its_word() -> None:
    found = _found(
        "Caprock deducted gathering at $0.42 per Mcf. (App. 7.) It deducted compression at "
        "$0.55. (App. 8.) Nothing else. (App. 53.)",
        "APP",
        [("03-owner-revenue-statements.pdf", STATEMENTS)],
    )
    assert found["App. 7"].status == "supported", found["App. 7"].message
    assert found["App. 8"].status == "supported", found["App. 8"].message
    assert found["App. 53"].status == "unsupported", found["App. 53"].message
    kinds = [
        (c.kind, c.text)
        for c in extract_claims(
            "Smith v. Jones, 301 Or. App. 512 (2019); Doe v. Roe, 40 Cal. App. 4th 12 (1995).",
            bates_prefixes=["APP"],
        )
    ]
    assert all(kind == "case_citation" for kind, _ in kinds), kinds


RUN_TICKETS = ["LLANO CRUDE MARKETING RUN TICKET 55102\nGross barrels 181.40"]
EMAIL = ["From: C. Renfro\nSubject: TX-0422 decimal\nThe 2H decimal is keyed off the wrong lease."]


def test_a_list_of_exhibits_written_title_first_says_what_each_is() -> None:
    documents = [
        ("01-oil-gas-lease.pdf", ["OIL AND GAS LEASE"]),
        ("02-renfro-email.pdf", EMAIL),
        ("03-llano-run-tickets.pdf", RUN_TICKETS),
    ]
    text = (
        "The Appendix holds the Llano run tickets (Ex. C); and Mr. Renfro's email (Ex. E). "
        "The 2H decimal is keyed off the wrong lease. (Ex. E.) The ticket shows 181.40 gross "
        "barrels. (Ex. C.)"
    )
    found = _found(text, "VFMT", documents)
    cites = [f for t, f in found.items() if t in ("Ex. E", "Ex. C")]
    assert cites and all(f.status == "supported" for f in cites), [f.message for f in cites]
    # A sentence's own "(Ex. 1)" after words naming a document is a cite of exhibit 1, not its
    # definition: here the packet's first document, the lease, which lacks the decimal.
    alone = _found(
        "The Renfro email says the decimal is keyed off the wrong lease (Ex. 1).", "VFMT", documents
    )
    assert alone["Ex. 1"].status == "unsupported", alone["Ex. 1"].message


def test_an_identifier_before_its_sentences_citation_sentence_describes_the_thing() -> None:
    kinds = [
        (c.kind, c.text)
        for c in extract_claims(
            "Caprock drilled the 2H (API No. 42-329-44906). (APP011.)", bates_prefixes=["APP"]
        )
    ]
    assert ("not_a_record_cite", "API No. 42-329-44906") not in kinds, kinds
    # Standing as the sentence's only source, it is used as a cite, and is none.
    alone = [c.kind for c in extract_claims("The decimal was wrong. (API No. 42-329-44906.)")]
    assert alone == ["not_a_record_cite"]


WENDT = [
    "               WENDT HYDRAULICS v. AUGLAIZE CASTINGS               611\n"
    "        Cite as 139 N.E.3d 611 (Ohio App. 3 Dist. 2019)\n\n"
    "WENDT HYDRAULICS, INC., Plaintiff-Appellant,\nv.\nAUGLAIZE CASTINGS CO.\n"
    "No. 1-18-52\nCourt of Appeals of Ohio\nThird District\nDecided July 15, 2019.\n\n"
    "[Cite as Wendt Hydraulics, Inc. v. Auglaize Castings Co., 2019-Ohio-2874.]\n\n"
    "{\u00b6 1} Wendt appeals the judgment for Auglaize.\n"
    "{\u00b6 2} A buyer that keeps the goods for months has accepted them.",
    "               WENDT HYDRAULICS v. AUGLAIZE CASTINGS               612\n\n"
    "{\u00b6 3} A rejection must be seasonable and must be noticed to the seller.\n"
    "{\u00b6 4} The judgment is affirmed.",
]


def test_an_ohio_opinion_is_found_by_its_own_citation_line_and_pinned_by_paragraph() -> None:
    text = (
        "A rejection must be seasonable and noticed to the seller. Wendt Hydraulics, Inc. v. "
        "Auglaize Castings Co., 2019-Ohio-2874, \u00b6 3. A buyer that keeps the goods for "
        "months has accepted them. Wendt Hydraulics at \u00b6 2. The buyer kept them for "
        "months and so accepted them. Wendt Hydraulics at \u00b6 4."
    )
    found = _found(text, "HV", [("13-wendt-hydraulics.pdf", WENDT)])
    full = next(f for t, f in found.items() if t.startswith("Wendt Hydraulics, Inc."))
    assert full.status == "supported", full.message
    assert found["Wendt Hydraulics at \u00b6 2"].status == "supported"
    wrong = found["Wendt Hydraulics at \u00b6 4"]
    assert wrong.status == "unsupported" and "\u00b6 2" in wrong.message, wrong.message


def test_the_statute_a_declarations_oath_invokes_is_no_claim() -> None:
    for oath in (
        "I declare under penalty of perjury under 28 U.S.C. § 1746 that the foregoing is true.",
        "I, Kendrick L. Savoie, declare as follows under 28 U.S.C. § 1746:",
    ):
        assert [c.kind for c in extract_claims(oath)] == [], oath
    for law in (
        "Congress declared it in 42 U.S.C. § 1983.",
        "The statute declares the policy. 42 U.S.C. § 1983.",
    ):
        assert [c.kind for c in extract_claims(law)] == ["statute"], law


def test_own_drafts_cited_as_pleadings_are_own_work_and_a_psr_is_for_review() -> None:
    kinds = [
        (c.kind, c.text) for c in extract_claims("As the Prior Draft Decl. ¶ 12 says, it was late.")
    ]
    assert kinds == [("not_a_record_cite", "Prior Draft Decl. ¶ 12")]
    reply = [(c.kind, c.text) for c in extract_claims("As I said (Draft Reply Decl. ¶ 14), so.")]
    assert reply == [("not_a_record_cite", "Draft Reply Decl. ¶ 14")]
    # A pleading cite after a document called a draft is a cite of the pleading.
    cite = [
        (c.kind, c.text) for c in extract_claims("He signed the draft lease (Smith Decl. ¶ 4).")
    ]
    assert cite == [("record_cite", "Smith Decl. ¶ 4")]
    found = _found(
        "His criminal history category is I. (PSR ¶ 58.)", "DRW", [("letters.pdf", ["LETTER"])]
    )
    assert found["PSR ¶ 58"].status == "needs_review", found["PSR ¶ 58"].message


# -- a sixth round (an AAA arbitration, a Pennsylvania device case), on the code of 34899b6 --

STATUS_REPORTS = [
    "WEEKLY STATUS REPORT No. 31\nOverall status: AMBER\n\nExhibit CX-12 - Page 1 of 2",
    "WEEKLY STATUS REPORT No. 32\nOverall status: RED, UAT halted\n\nExhibit CX-12 - Page 2 of 2",
]


def test_a_partys_exhibit_label_names_the_document_that_carries_it() -> None:
    documents = [
        ("cx04-statement-of-work.pdf", ["STATEMENT OF WORK\nGo-live: June 1, 2023"]),
        ("status-reports.pdf", STATUS_REPORTS),
    ]
    found = _found(
        "By Report No. 32 the project was RED and UAT had halted. (CX-12 at 2.) Go-live was "
        "set for June 1, 2023. (CX-4 at 1.) The project was RED. (CX-12 at 1.)",
        "GHD",
        documents,
    )
    assert found["CX-12 at 2"].status == "supported", found["CX-12 at 2"].message
    assert "CX12" in found["CX-12 at 2"].message
    assert found["CX-4 at 1"].status == "supported", found["CX-4 at 1"].message
    assert found["CX-12 at 1"].status == "unsupported", found["CX-12 at 1"].message


DELUCA = [
    "DELUCA v. BRENNAN                287 A.3d 514\nA manufacturer is liable for a defect.",
    "DELUCA v. BRENNAN                515\nThe bar on strict liability for\n"
    "prescription products recognized in Hahn v. Richter, 543 Pa. 558, 673 A.2d 888 (1996),\n"
    "rests on the learned intermediary.",
]


def test_an_opinion_is_not_the_one_its_text_cites_near_a_pages_head() -> None:
    found = _found(
        "A manufacturer is liable for a defect. DeLuca v. Brennan, 287 A.3d 514, 514 (Pa. "
        "Super. 2022).\n\nThe learned intermediary bars it. Hahn v. Richter, 543 Pa. 558 "
        "(1996).",
        "VANCE",
        [("deluca.pdf", DELUCA)],
    )
    hahn = found["Hahn v. Richter, 543 Pa. 558 (1996)"]
    assert hahn.status == "unsupported" and "not in the evidence" in hahn.message, hahn.message
    deluca = next(f for t, f in found.items() if t.startswith("DeLuca"))
    assert deluca.status == "supported", deluca.message


def test_a_signature_block_opened_by_by_holds_no_cite() -> None:
    text = (
        "Respectfully request that the motion be denied.\n\n"
        "By: /s/ Peter J. Szabo\nPeter J. Szabo, Esquire (Attorney I.D. No. 84417)\n"
    )
    assert [c.kind for c in extract_claims(text)] == []


def test_the_systems_earlier_work_cited_with_a_pin_in_prose_is_own_work() -> None:
    cited = [
        (c.kind, c.text)
        for c in extract_claims(
            "As the system's prior memo summarizing the complaint file, at 3, shows, it failed."
        )
    ]
    assert cited == [
        ("not_a_record_cite", "the system's prior memo summarizing the complaint file, at 3")
    ]
    # Without a pin the mention is read by the cite after it; "the alarm system's report" is
    # a document of the case.
    assert extract_claims("As the system's prior memo explains, it failed.") == []
    assert extract_claims("The alarm system's report, at 3, showed a breach.") == []


def _patent_page(columns: tuple[int, int], left: str, right: str) -> str:
    gap = " " * 20
    return f"{columns[0]}{gap}US 10,884,216 B2{gap}{columns[1]}\n{left}\n{right}"


PATENT = [
    "UNITED STATES PATENT\nPatent No.: US 10,884,216 B2\nTitle: Gain control for flow measurement",
    _patent_page((1, 2), "The field is flow measurement.", "Gain is set from the amplitude."),
    _patent_page((3, 4), "The sensor reads the pipe wall.", "The gain is set before the burst."),
]
ARTICLE = [
    "Journal of Process Flow Instrumentation 29 (2016) 212-214\nFeed-forward gain scheduling.",
    "C.N. Okafor et al. / J. Process Flow Instrum. 29 (2016) 212-214          213\n"
    "The schedule is computed from process temperature.",
    "214          C.N. Okafor et al. / J. Process Flow Instrum. 29 (2016) 212-214\n"
    "Convergence fell from 41 cycles to 6.",
]


def test_board_exhibits_are_cited_by_number_column_line_and_printed_page() -> None:
    documents = [("EX1001-US10884216.pdf", PATENT), ("EX1005-okafor-2016.pdf", ARTICLE)]
    found = _found(
        "Its sensor reads the pipe wall. Ex. 1001, 3:5-9. The gain is set before the burst. "
        "Id. at 4:1-3. The patent is for flow measurement. Ex. 1001, cover. The schedule is "
        "computed from process temperature. Ex. 1005, 213. Convergence fell from 41 cycles "
        "to 6. Ex. 1005, 212. The gain is set from the amplitude. Ex. 1001, 4:2-6.",
        "EX",
        documents,
    )
    for cite in ("Ex. 1001, 3:5-9", "Id. at 4:1-3", "Ex. 1001, cover", "Ex. 1005, 213"):
        assert found[cite].status == "supported", (cite, found[cite].message)
    # Page 212 of the article is its first page, which lacks the figure (it is on 214); the
    # gain from the amplitude is column 2, not 4.
    assert found["Ex. 1005, 212"].status == "unsupported", found["Ex. 1005, 212"].message
    assert found["Ex. 1001, 4:2-6"].status == "unsupported", found["Ex. 1001, 4:2-6"].message


def _deposition_page(number: int, lines: dict[int, str]) -> str:
    return transcript_page("SATO DEPOSITION", number, lines, blank="Q.   And then?")


def test_a_deposition_exhibit_is_cited_by_its_pages_and_lines() -> None:
    deposition = [
        _deposition_page(4, {5: "A.   I never measured the wall lead."}),
        _deposition_page(5, {9: "A.   I did no testing at start-up."}),
    ]
    found = _found(
        "Sato never measured the wall lead. Ex. 2003, 4:5. He did no testing at start-up. "
        "Ex. 2003, 4:9. He said so again. Id. at 47:3-15.",
        "EX",
        [("EX2003-sato-deposition.pdf", deposition)],
    )
    assert found["Ex. 2003, 4:5"].status == "supported", found["Ex. 2003, 4:5"].message
    wrong = found["Ex. 2003, 4:9"]
    assert wrong.status == "unsupported" and "5:9" in wrong.message, wrong.message
    assert found["Id. at 47:3-15"].status == "unsupported", found["Id. at 47:3-15"].message


def test_a_bound_rounds_its_figure_down_to_one_digit() -> None:
    documents = [("invoices.pdf", ["EXPERT INVOICES\nTotal billed: $120,000.00"])]
    paid = _found("Petitioner paid its expert more than $80,000.", "EX", documents)
    assert paid["$80,000"].status == "unsupported", paid["$80,000"].message
    more = _found("Petitioner paid its expert more than $100,000.", "EX", documents)
    assert more["$100,000"].status == "supported", more["$100,000"].message


# -- a seventh round (a Louisiana contract case, a Massachusetts c. 93A case), on f99ef1c --


def test_a_prefix_stamped_with_its_stops_and_space_is_read_as_written() -> None:
    kinds = [
        (c.kind, c.text, [(b.prefix, b.first, b.last) for b in c.bates])
        for c in extract_claims(
            "He admitted it (R.A. 118). The contract says so (R.A. 102-103).",
            bates_prefixes=["R.A. ", "HAL"],
        )
    ]
    assert kinds == [
        ("record_cite", "R.A. 118", [("R.A. ", 118, 118)]),
        ("record_cite", "R.A. 102-103", [("R.A. ", 102, 103)]),
    ]


GULF_COAST = [
    "GULF COAST MECH. v. MAGNOLIA CONSTR.          278 So. 3d 611\n"
    "GULF COAST MECHANICAL CONTRACTORS, L.L.C. v. MAGNOLIA CONSTRUCTION CO.\n"
    "A written change order requirement may be waived by conduct.",
    "GULF COAST MECH. v. MAGNOLIA CONSTR.          612\nThe owner paid for the extra work.",
]


def test_a_louisiana_citation_is_the_opinion_its_parallel_reporter_names() -> None:
    found = _found(
        "The requirement may be waived. Gulf Coast Mech. Contractors, L.L.C. v. Magnolia "
        "Constr. Co., 2018-1127 (La. App. 1 Cir. 5/31/19), 278 So. 3d 611, 611.",
        "APPX",
        [("gulf-coast.pdf", GULF_COAST)],
    )
    assert all(f.status == "supported" for f in found.values()), [
        (t, f.message) for t, f in found.items()
    ]


def test_a_numbers_label_after_see_does_not_end_the_thing_cited() -> None:
    # (an immigration case: "See Receipt No. ZLA2291784302.", "See DHS File A 214-567-903.")
    kinds = [
        (c.kind, c.text)
        for c in extract_claims(
            "The Border Patrol recorded it. See I-213, Event No. RGV2208000891. Her identity "
            "is undisputed. See DHS File A 214-567-903. She filed on time. See Receipt No. "
            "ZLA2291784302.",
            bates_prefixes=["RSB"],
        )
    ]
    assert kinds == [
        ("not_a_record_cite", "RGV2208000891"),
        ("not_a_record_cite", "DHS File A 214-567-903"),
        ("not_a_record_cite", "ZLA2291784302"),
    ]
