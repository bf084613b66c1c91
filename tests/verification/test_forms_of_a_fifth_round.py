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
  where the packet holds none.
"""

from apps.verification.checks import Finding
from apps.verification.claims import extract_claims
from tests.verification.packets import findings_by_claim, text_index


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
    assert [c.kind for c in extract_claims("Congress declared it in 42 U.S.C. § 1983.")] == [
        "statute"
    ]


def test_own_drafts_cited_as_pleadings_are_own_work_and_a_psr_is_for_review() -> None:
    kinds = [
        (c.kind, c.text) for c in extract_claims("As the Prior Draft Decl. ¶ 12 says, it was late.")
    ]
    assert kinds == [("not_a_record_cite", "Prior Draft Decl. ¶ 12")]
    found = _found(
        "His criminal history category is I. (PSR ¶ 58.)", "DRW", [("letters.pdf", ["LETTER"])]
    )
    assert found["PSR ¶ 58"].status == "needs_review", found["PSR ¶ 58"].message
