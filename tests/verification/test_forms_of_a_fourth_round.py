"""Forms that a fourth round of cases written by hand showed (eighteenth session: a False
Claims Act qui tam, a § 1983 jail case and an Illinois premises case), each tested on packets
of our own from the rule it follows:

- "Id." after a citation whose explanatory parenthetical cites another source ("(citing
  Sandoval, ...)", "(quoting ...)") is the main authority, never the one the parenthetical
  cites (Bluebook 4.1);
- a brief's "Ex. 4" that the brief does not list is the exhibit 4 of the case's other drafts on
  the packet (the declaration filed with it: "Attached as Exhibit 4 is ..., produced at
  ..."), where they list it as one run of pages;
- a public-domain (vendor-neutral) citation is pinned by the opinion's numbered paragraphs
  ("2019 IL App (1st) 181734, ¶ 29", "Id. ¶¶ 8-9"), not its pages;
- a title written with abbreviations ("Hollis-Marr Rpt.") names the document whose name
  holds the words they abbreviate ("hollis-marr-expert-report.pdf");
- "Thornbury, supra, 214 Ill. 2d at 92" is one citation, bound by its volume and reporter;
  "See Part II.B, D, supra." is a cross-reference to the draft's own parts, no citation;
- a token of a thing's shape where an exhibit's Bates number belongs ("Ex. A,
  HM-GL-22-0418863", "Ex. D-1, CAM14_20220211.mp4") is no record cite; a recording's file
  name is a file name; a numbered thing keeps the words of its name ("Lakeview Mercy Acct.
  No. 4471902236");
- the team's own work cited with "at 4" ("the AI Case Summary v2 at 4") or with the kind of
  work after the mark ("our earlier draft disclosure, ¶ 3(b)") is a reference to its work;
- a deposition's file named "...-dep-excerpt.pdf" is the deposition "Pruszynski Dep." cites;
  a transcript page whose lines are mostly blank (their numbers alone) is still read as one, so
  a quotation across its line numbers matches.
"""

from apps.verification.checks import Companion, Finding, verify_text
from apps.verification.claims import extract_claims
from tests.verification.packets import findings_by_claim, text_index, transcript_page

PREFIX = "HCO"

PEMBERTON = [
    "PEMBERTON v. CALVERT BAY    641 F. Supp. 3d 512\nThe public disclosure bar asks whether "
    "the allegations were publicly disclosed.",
    "PEMBERTON v. CALVERT BAY    513\nThe relator must be an original source.",
    "PEMBERTON v. CALVERT BAY    514\nGeneralized reports of industry-wide billing problems do "
    "not publicly disclose allegations involving a particular defendant.",
]


def _found(text: str, documents: list[tuple[str, list[str]]]) -> dict[str, Finding]:
    return findings_by_claim(text, text_index(PREFIX, documents), PREFIX)


def test_an_id_after_a_citing_parenthetical_is_the_main_authority() -> None:
    text = (
        "Defendants bear the burden. Pemberton v. Calvert Bay, 641 F. Supp. 3d 512, 514 "
        "(D. Md. 2022) (citing Sandoval v. Piedmont Radiology, 871 F.3d 118, 124 (4th Cir. "
        "2017)). Generalized reports of industry-wide billing problems do not disclose "
        "allegations involving a particular defendant. Id."
    )
    found = _found(text, [("pemberton.pdf", PEMBERTON)])
    assert found["Id."].status == "supported", found["Id."].message
    # The authority the parenthetical cites is still checked as itself: not in the packet.
    (sandoval,) = [f for t, f in found.items() if t.startswith("Sandoval")]
    assert sandoval.status == "unsupported"
    # Without a parenthetical, an "Id." after a citation is that citation's.
    plain = _found(
        "The rule is settled. Sandoval v. Piedmont Radiology, 871 F.3d 118, 124 (4th Cir. "
        "2017). It applies here. Id.",
        [("pemberton.pdf", PEMBERTON)],
    )
    assert plain["Id."].status == "unsupported", plain["Id."].message


KIOSK_LOG = [
    "KIOSK REQUEST LOG  page 1\n03/15/2023 08:12 my right wrist is broken. Triage: LPN.",
    "KIOSK REQUEST LOG  page 2\n03/22/2023 14:05 seen face to face by registered nurse.",
]
POLICY = ["POLICY 300 USE OF FORCE\nPain compliance on a handcuffed person is prohibited."]
DECLARATION = (
    "DECLARATION OF JUNE NAKAMURA\n\n"
    "4. Attached as **Exhibit 4** is a true and correct copy of the kiosk log, produced at "
    "HCO000001-HCO000002.\n\n"
    "5. Attached as **Exhibit 6** is a true and correct copy of Policy 300, produced at "
    "HCO000003.\n"
)
BRIEF = (
    "A registered nurse first saw him face to face on March 22, 2023. (Ex. 4 at 2.) "
    "Policy forbids pain compliance on a handcuffed person. (Ex. 6 at 1.)"
)


def _brief_findings(*companions: tuple[str, str]) -> dict[str, Finding]:
    # Documents in an order where "document 4 of the packet" is no exhibit 4.
    index = text_index(
        PREFIX,
        [
            ("kiosk-log.pdf", KIOSK_LOG),
            ("policy-300.pdf", POLICY),
            ("booking.pdf", ["BOOKING RECORD\nBooked 03/14/2023 22:06."]),
            ("photo.pdf", ["PHOTO LOG\nHolding cell H-4."]),
            ("claim.pdf", ["TORT CLAIM\nReceived 09/12/2023."]),
            ("video.pdf", ["VIDEO REVIEW LOG\n22:14:55 takedown."]),
        ],
    )
    claims = extract_claims(BRIEF, bates_prefixes=[PREFIX])
    given = [
        Companion(name, text, lambda text=text: extract_claims(text, bates_prefixes=[PREFIX]))
        for name, text in companions
    ]
    return {f.claim.text: f for f in verify_text(BRIEF, claims, index, companions=given)}


def test_a_brief_cites_the_exhibits_its_companion_declaration_lists() -> None:
    found = _brief_findings(("Nakamura declaration", DECLARATION))
    for cite in ("Ex. 4 at 2", "Ex. 6 at 1"):
        assert found[cite].status == "supported", found[cite].message
        assert "Nakamura declaration" in found[cite].message
    # Alone, the brief's exhibits are read as the packet's documents in order (and fail).
    alone = _brief_findings()
    assert alone["Ex. 4 at 2"].status == "unsupported", alone["Ex. 4 at 2"].message
    # Two companions listing exhibit 4 as different pages: neither list is taken.
    other = DECLARATION.replace("HCO000001-HCO000002", "HCO000005")
    torn = _brief_findings(("Nakamura declaration", DECLARATION), ("Voss declaration", other))
    assert "declaration" not in torn["Ex. 4 at 2"].message
    assert torn["Ex. 6 at 1"].status == "supported", torn["Ex. 6 at 1"].message


def _ruvalcaba(paragraphs: dict[int, str]) -> list[str]:
    """An opinion cited by its public-domain citation, its paragraphs two to a page."""
    numbers = sorted(paragraphs)
    pages = []
    for k in range(0, len(numbers), 2):
        body = "\n".join(f"   \u00b6 {n} {paragraphs[n]}" for n in numbers[k : k + 2])
        pages.append(
            "Ruvalcaba v. Midtown Grocers, 2019 IL App (1st) 181734   139 N.E.3d "
            f"{512 + k // 2}\n{body}"
        )
    return pages


RUVALCABA = _ruvalcaba(
    {
        1: "Plaintiff slipped on a grape in the produce aisle.",
        2: "The circuit court granted summary judgment.",
        3: "We review de novo an order granting summary judgment.",
        4: "A gap in inspection is not, by itself, evidence of how long a substance was present.",
        5: "An employee in the immediate vicinity of a hazard may be charged with notice.",
        6: "We affirm.",
    }
)


def test_a_public_domain_citation_is_pinned_by_its_paragraphs() -> None:
    text = (
        "A gap in inspection is not, by itself, evidence of how long a substance was present. "
        "Ruvalcaba v. Midtown Grocers, LLC, 2019 IL App (1st) 181734, \u00b6 4. An employee "
        "near a hazard may be charged with notice. Id. \u00b6 5. The court reviewed the "
        "order de novo. Id. \u00b6 6. It affirmed. Id. \u00b6 9."
    )
    found = _found(text, [("ruvalcaba.pdf", RUVALCABA)])
    full = next(f for t, f in found.items() if t.startswith("Ruvalcaba"))
    assert full.status == "supported", full.message
    assert "\u00b6 4" in full.message
    assert found["Id. \u00b6 5"].status == "supported", found["Id. \u00b6 5"].message
    wrong = found["Id. \u00b6 6"]
    assert wrong.status == "unsupported" and "\u00b6 3" in wrong.message, wrong.message
    missing = found["Id. \u00b6 9"]
    assert missing.status == "unsupported" and "1-6" in missing.message, missing.message
    # A quotation pinned to another paragraph names the one that holds it.
    quoted = _found(
        'The court held that a gap is "not, by itself, evidence of how long a substance was '
        'present." Ruvalcaba v. Midtown Grocers, LLC, 2019 IL App (1st) 181734, \u00b6 5.',
        [("ruvalcaba.pdf", RUVALCABA)],
    )
    pin = next(f for t, f in quoted.items() if t.startswith("Ruvalcaba"))
    assert pin.status == "unsupported" and "\u00b6 4" in pin.message, pin.message


def test_a_copy_that_numbers_no_paragraphs_leaves_a_paragraph_pin_to_a_person() -> None:
    unnumbered = [page.replace("\u00b6 ", "") for page in RUVALCABA]
    found = _found(
        "A gap is no evidence of duration. Ruvalcaba v. Midtown Grocers, LLC, 2019 IL App "
        "(1st) 181734, \u00b6 4.",
        [("ruvalcaba.pdf", unnumbered)],
    )
    pin = next(f for t, f in found.items() if t.startswith("Ruvalcaba"))
    assert pin.status == "needs_review", pin.message


def test_a_title_written_with_abbreviations_names_its_document() -> None:
    documents = [
        ("07-north-shore-ortho-bill.pdf", ["ITEMIZED STATEMENT\nTotal charges $2,451.00"]),
        ("09-hollis-marr-expert-report.pdf", ["EXPERT REPORT", "The wet DCOF measured 0.19."]),
    ]
    found = _found("The wet DCOF measured 0.19. (Hollis-Marr Rpt. at 2.)", documents)
    finding = found["Hollis-Marr Rpt. at 2"]
    assert finding.status == "supported", finding.message
    assert "09-hollis-marr-expert-report.pdf" in finding.message
    # An exhibit named by that title in the draft is that document.
    cited = _found(
        "The wet DCOF measured 0.19. (Ex. G, Hollis-Marr Rpt. at 2.) It was slippery. (Ex. G.)",
        documents,
    )
    assert "Exhibit G is HCO000002-HCO000003" in cited["Ex. G"].message, cited["Ex. G"].message
    # An abbreviation holds its word's letters in order, from its first.
    wrong = _found("The DCOF was 0.19. (Hollis-Marr Stmt. at 2.)", documents)
    assert wrong["Hollis-Marr Stmt. at 2"].status != "supported"


THORNBURY = [
    "THORNBURY v. KESSLER FOOD STORES    214 Ill. 2d 87\nThe owner is not an insurer.",
    "THORNBURY v. KESSLER FOOD STORES    88\nNotice may be constructive.",
    "THORNBURY v. KESSLER FOOD STORES    89\nA gap standing alone does not prove how long a "
    "substance was present.",
]


def test_a_supra_with_a_volume_and_reporter_is_one_citation() -> None:
    text = (
        "Under Thornbury v. Kessler Food Stores, Inc., 214 Ill. 2d 87, 88 (2005), notice may "
        "be constructive. A gap standing alone does not prove how long a substance was "
        "present. Thornbury, supra, 214 Ill. 2d at 89."
    )
    claims = [c for c in extract_claims(text) if c.kind == "case_citation"]
    assert [c.text for c in claims][-1] == "Thornbury, supra, 214 Ill. 2d at 89"
    found = _found(text, [("thornbury.pdf", THORNBURY)])
    finding = found["Thornbury, supra, 214 Ill. 2d at 89"]
    assert finding.status == "supported", finding.message


def test_a_cross_reference_to_the_drafts_own_parts_is_no_citation() -> None:
    for text in (
        "It broke. See Part II.B, D, supra.",
        "See Section III, supra.",
        "See note 4, supra.",
    ):
        assert [c for c in extract_claims(text) if c.kind == "case_citation"] == [], text
    kept = extract_claims("Smith v. Jones, 5 F.3d 1 (1990). It holds. Smith, supra, at 3.")
    assert [c.text for c in kept if c.kind == "case_citation"][-1] == "Smith, supra, at 3"


def _not_cites(text: str) -> list[str]:
    return [
        c.text
        for c in extract_claims(text, bates_prefixes=[PREFIX])
        if c.kind == "not_a_record_cite"
    ]


def test_a_things_token_where_an_exhibits_page_belongs_is_no_record_cite() -> None:
    assert _not_cites("The carrier was told. (Ex. A, HM-GL-22-0418863.)") == ["HM-GL-22-0418863"]
    assert _not_cites("The file shows it. (Ex. D-1, CAM14_20220211_1440-1540.mp4.)") == [
        "CAM14_20220211_1440-1540.mp4"
    ]
    # A Bates number or a pin after the label is the exhibit's page, no thing.
    assert _not_cites("The log shows it. (Ex. D, HCO000010.)") == []
    assert _not_cites("The log shows it. (Ex. D, at 2.)") == []


def test_a_recording_is_a_file_and_a_numbered_thing_keeps_its_names_words() -> None:
    assert _not_cites("The video shows it. (intake_cam_03.mov)") == ["intake_cam_03.mov"]
    assert _not_cites("She was splinted. (Lakeview Mercy Acct. No. 4471902236.)") == [
        "Lakeview Mercy Acct. No. 4471902236"
    ]


def test_the_teams_own_work_cited_at_a_page_or_by_its_kind_is_a_reference_to_it() -> None:
    found = _found(
        "The basis is summarized in the AI Case Summary v2 at 4. The opinion is framed as in "
        "our earlier draft disclosure, \u00b6 3(b).",
        [("report.pdf", ["EXPERT REPORT"])],
    )
    own = [f for f in found.values() if f.claim.kind == "not_a_record_cite"]
    assert sorted(f.claim.text for f in own) == [
        "AI Case Summary v2 at 4",
        "earlier draft disclosure, \u00b6 3(b)",
    ]
    assert all(f.check == "system_generated_reference" for f in own), [f.message for f in own]
    # A version with a measure after it is no pin.
    assert _not_cites("The firmware v2 ran at 4 GHz.") == []


def _dep_page(number: int, lines: dict[int, str]) -> str:
    return transcript_page("GERALD PRUSZYNSKI - 06/15/2023", number, lines)


def test_a_deposition_file_named_dep_is_the_deposition_its_witness_names() -> None:
    excerpt = [
        _dep_page(22, {4: "A.   Since March of 2019."}),
        _dep_page(
            38,
            {5: "A.   Everybody is. If you see a", 6: "spill you stand guard and you call it in."},
        ),
    ]
    documents = [("10-pruszynski-discovery-dep-excerpt.pdf", excerpt)]
    text = (
        'Cashiers are trained: "If you see a spill you stand guard and you call it in." '
        "(Pruszynski Dep. 38:5-6.) He has managed the store since March of 2019. "
        "(Pruszynski Dep. 37:4.)"
    )
    found = _found(text, documents)
    assert found["Pruszynski Dep. 38:5-6"].status == "supported", found[
        "Pruszynski Dep. 38:5-6"
    ].message
    wrong = found["Pruszynski Dep. 37:4"]
    assert wrong.status == "unsupported", wrong.message
    assert "dep-excerpt" in wrong.message
    # Lines found that carry too little of the sentence are for a person to read: the finding
    # says so and points at them (not "names no Bates page").
    unsure = _found("He was calm. (Pruszynski Dep. 22:4.)", documents)["Pruszynski Dep. 22:4"]
    assert unsure.status == "needs_review", unsure.message
    assert "read the lines" in unsure.message and unsure.page is not None
