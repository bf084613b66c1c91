"""Forms that the twenty-first session's reading of two held-out cases showed (a Trademark Trial
and Appeal Board opposition, a Pennsylvania appeal), each tested on text of our own from the
rule it follows:

- a citation whose volume is a year ("2022 USPQ2d 1187", the Board's series since 2021, as a
  database's "2023 WL 6190457") names a document, not its first page: "at *3" pins the page
  its text marks "*3", and a pin past its last marker is outside it;
- the Board's record is cited by docket entry and the entry's page that TTABVUE prints on each
  page ("14 TTABVUE 6"); a page or an entry no page prints is out of the packet;
- a filed page given beside another cite of the same source names the same page: "Varga Decl.
  ¶ 20, 15 TTABVUE 6" is wrong where the declaration's ¶ 20 is on its page 5, and "14 TTABVUE
  12 (APP-0435)" is wrong where the Bates page is not that filed page; an "Id. ¶ 13" after
  such a pair is the declaration's;
- a document's first page introduces the pages straight after it (a notice of reliance, a
  cover, a slip sheet): a cite of those pages is no wrong cite of their description;
- what stands where a record cite belongs with a number grouped by commas ("(Serial No.
  97/654,321)") or a web address ("(www.example.net/shop)") is no record cite of this case;
  a number in parentheses straight after a name ("Hadley (U.S. Patent No. 9,871,204)") says
  what the name is, and the USPTO's "/Name/" signature opens a signature block;
- a transcript's own words (those on half its pages or more: its parties', its subject's)
  decide nothing for the cited lines: lines holding only those, beside a stretch holding a
  third of the sentence, are the wrong lines;
- a stop inside emphasis ends a sentence ("**5. The marks are similar.** Applicant chose ..."
  is two sentences), and a possessive's "s" is no abbreviation ("Emberly's." ends one).
"""

from apps.verification.checks import Finding
from apps.verification.claims.sentences import sentences
from tests.verification.packets import findings_by_claim, labelled_index, transcript_page

_HEAD = "Halcyon Brands, Inc. v. Tafoya Goods Co.          2022 USPQ2d 1187"
OPINION = [
    (
        "AUTH0001",
        f"{_HEAD}          *1\n\nHalcyon Brands, Inc.\nv.\nTafoya Goods Co.\n\nOpinion by "
        "Ambrose, Administrative Trademark Judge:\nApplicant seeks registration of HALCYA for "
        "caps and sweatshirts.",
    ),
    (
        "AUTH0002",
        f"{_HEAD}          *2\n\nFame for likelihood of confusion purposes arises as long as a "
        "significant portion of the relevant consuming public recognizes the mark.",
    ),
    (
        "AUTH0003",
        f"{_HEAD}          *3\n\nThird-party registrations are not evidence that the marks "
        "shown in them are in use or that consumers are familiar with them.",
    ),
]


def _board(text: str) -> dict[str, Finding]:
    return findings_by_claim(text, labelled_index([("11-opinion-halcyon.pdf", OPINION)]), "AUTH")


def test_a_year_series_citation_is_pinned_by_the_stars_its_text_marks() -> None:
    findings = _board(
        "Third-party registrations do not show that the marks are in use or that consumers "
        "are familiar with them. Halcyon Brands, Inc. v. Tafoya Goods Co., 2022 USPQ2d 1187, "
        'at *3 (TTAB 2022). Fame arises where "a significant portion of the relevant consuming '
        'public recognizes the mark." Halcyon, 2022 USPQ2d 1187, at *3. The Board decided the '
        "case on its merits. Halcyon, 2022 USPQ2d 1187, at *9."
    )
    right = findings[
        "Halcyon Brands, Inc. v. Tafoya Goods Co., 2022 USPQ2d 1187, at *3 (TTAB 2022)"
    ]
    assert right.status == "supported", right.message
    moved = findings["Halcyon, 2022 USPQ2d 1187, at *3"]
    assert moved.status == "unsupported" and "at 2, not at the pin cite" in moved.message
    past = findings["Halcyon, 2022 USPQ2d 1187, at *9"]
    assert past.status == "unsupported" and "outside the opinion's pages 1-3" in past.message


def _filed(label: str, entry: int, page: int, body: str) -> tuple[str, str]:
    return label, f"Opposition No. 91287654   {entry} TTABVUE {page}\n\n{body}"


RELIANCE = [
    _filed(
        "OPP000105",
        14,
        1,
        "OPPOSER'S FIRST NOTICE OF RELIANCE\nOpposer relies on its pleaded registrations, "
        "showing their current status and title, and on Applicant's interrogatory answers.",
    ),
    _filed("OPP000106", 14, 2, "Reg. No. 4,218,907  EMBERLY  Class 25: jackets; parkas; hats."),
    _filed("OPP000107", 14, 3, "Reg. No. 5,107,362  EMBERLY and design  Class 25: shirts."),
    _filed(
        "OPP000108",
        14,
        4,
        "INTERROGATORY NO. 11: awareness of Opposer.\nRESPONSE: Applicant's managing member was "
        "generally aware of the EMBERLY brand of jackets before adopting EMBERLEE.",
    ),
]
DECLARATION = [
    _filed(
        "OPP000113",
        15,
        1,
        "TESTIMONY DECLARATION OF ILONA VARGA\n\n     1.  I am Vice President of Brand at "
        "Emberly.\n\n     2.  Emberly operated 38 EMBERLY retail stores in fourteen states.",
    ),
    _filed(
        "OPP000114",
        15,
        2,
        "     3.  On November 8, 2022 a customer in Fort Collins emailed about an EMBERLEE "
        "beanie.\n\n     4.  In March 2023 a customer tried to return an EMBERLEE hooded "
        "sweatshirt at the Boulder store.",
    ),
    _filed(
        "OPP000115",
        15,
        3,
        "     5.  Emberly has sent more than 40 cease-and-desist letters since 2016.\n\n"
        "     6.  I know of no third party using an EMBER mark for outerwear.",
    ),
]


def _record(text: str) -> dict[str, Finding]:
    index = labelled_index(
        [("02-opposer-registrations.pdf", RELIANCE), ("04-varga-declaration.pdf", DECLARATION)]
    )
    return findings_by_claim(text, index, "OPP")


def test_the_boards_record_is_cited_by_entry_and_the_page_ttabvue_prints() -> None:
    findings = _record(
        "Applicant's managing member knew of the EMBERLY brand of jackets before adopting "
        "EMBERLEE. 14 TTABVUE 4. Emberly has sent more than 40 cease-and-desist letters. 14 "
        "TTABVUE 2. Its survey was sound. 14 TTABVUE 9. Its dealers agree. 31 TTABVUE 3."
    )
    assert findings["14 TTABVUE 4"].status == "supported", findings["14 TTABVUE 4"].message
    wrong = findings["14 TTABVUE 2"]
    assert wrong.status == "unsupported" and wrong.page is not None
    assert wrong.page.bates == ("OPP000115",), wrong.message
    for past in ("14 TTABVUE 9", "31 TTABVUE 3"):
        assert findings[past].status == "unsupported", findings[past].message
        assert findings[past].check == "bates_in_packet"


def test_a_filed_page_beside_a_paragraph_cite_must_hold_that_paragraph() -> None:
    findings = _record(
        "A customer tried to return an EMBERLEE hooded sweatshirt at the Boulder store. Varga "
        "Decl. ¶ 4, 15 TTABVUE 3. Emberly operated 38 stores. Varga Decl. ¶ 2, 15 TTABVUE 1. "
        "It had stores in fourteen states. Id. ¶ 2."
    )
    wrong = findings["15 TTABVUE 3"]
    assert wrong.status == "unsupported", wrong.message
    assert "Varga Decl. ¶ 4 is on OPP000114" in wrong.message
    assert findings["15 TTABVUE 1"].status == "supported", findings["15 TTABVUE 1"].message
    # Id. after the pair is the declaration (its paragraph), not an authority never cited.
    same = findings["Id. ¶ 2"]
    assert same.status == "supported" and same.check == "record_cite_paragraph", same.message


def test_a_bates_page_beside_a_filed_page_must_be_that_page() -> None:
    findings = _record(
        "Applicant's managing member knew of the EMBERLY brand of jackets before adopting "
        "EMBERLEE. 14 TTABVUE 4 (OPP000106). He knew of the EMBERLY brand. 14 TTABVUE 4 "
        "(OPP000108)."
    )
    wrong = findings["OPP000106"]
    assert wrong.status == "unsupported", wrong.message
    assert "is not 14 TTABVUE 4, which is OPP000108" in wrong.message
    assert findings["OPP000108"].status == "supported", findings["OPP000108"].message


def test_a_cite_of_the_pages_a_cover_introduces_is_not_a_cite_of_the_cover() -> None:
    # The notice's cover says what the registrations after it are ("pleaded registrations,
    # status and title"); the brief cites the registrations themselves.
    findings = _record(
        "Opposer made its pleaded registrations of record, with their status and title. 14 "
        "TTABVUE 2-3. Opposer relies on its pleaded registrations, showing their current "
        "status and title. 14 TTABVUE 4."
    )
    assert findings["14 TTABVUE 2-3"].status == "supported", findings["14 TTABVUE 2-3"].message
    # One page after the cover, not the run it introduces, is still judged against it.
    assert findings["14 TTABVUE 4"].status != "supported", findings["14 TTABVUE 4"].message


def test_numbers_grouped_by_commas_and_web_addresses_are_no_record_cites() -> None:
    text = (
        "The identification is unrestricted (Serial No. 97/654,321). Its Class 35 registration "
        "covers retail services (Reg. No. 5,432,198). The boutique sells hats "
        "(www.handmadehaul.com/shop/EmberKnitCo). The examiner cited Hadley (U.S. Patent No. "
        "9,871,204), reasoning that it taught the tether.\n\nRespectfully submitted,\n\n"
        "/Priya Raman-Holt/\nPriya Raman-Holt (Reg. No. 71,246)\nHARLOW PIERCE LLP\n"
    )
    findings = _record(text)
    flagged = {t for t, f in findings.items() if f.check == "not_a_record_cite"}
    assert flagged == {
        "Serial No. 97/654,321",
        "Reg. No. 5,432,198",
        "www.handmadehaul.com/shop/EmberKnitCo",
    }
    assert all(findings[t].status == "unsupported" for t in flagged)


DEPOSITION = [
    (
        "OPP000125",
        transcript_page(
            "LINDQVIST",
            17,
            {
                4: "Q.   Before you chose EMBERLEE, had you heard of EMBERLY?",
                6: "A.   Sure. Everybody in Boulder has seen their jackets.",
                16: "Q.   Did you conduct a trademark search before adopting it?",
                17: "A.   I Googled it. I did not hire a lawyer.",
                18: "Q.   Did the Google search turn up EMBERLY?",
                19: "A.   It did. Their website is the first thing that comes up.",
            },
        ),
    ),
    (
        "OPP000126",
        transcript_page(
            "LINDQVIST",
            18,
            {
                2: "Q.   Where do you sell EMBERLEE products?",
                3: "A.   Our website, an Amazon storefront, and festivals.",
                14: "Q.   Has a customer asked whether EMBERLEE is connected with EMBERLY?",
                16: "A.   Once or twice somebody said, like the jacket company.",
                20: "Q.   Do you plan to sell EMBERLEE jackets?",
                21: "A.   A softshell jacket is in development for the fall.",
            },
        ),
    ),
    (
        "OPP000127",
        transcript_page(
            "LINDQVIST",
            42,
            {
                3: "A.   That is Applicant's hang tag for the EMBERLEE beanies.",
                9: "A.   A little flame, for a campfire.",
            },
        ),
    ),
]


def test_lines_holding_only_the_transcripts_own_names_are_the_wrong_lines() -> None:
    index = labelled_index([("06-lindqvist-deposition.pdf", DEPOSITION)])
    findings = findings_by_claim(
        "Applicant chose EMBERLEE after a search that returned Emberly's website. Lindqvist "
        "Dep. 18:16-24. A softshell jacket is in development. Lindqvist Dep. 18:20-21.",
        index,
        "OPP",
    )
    wrong = findings["Lindqvist Dep. 18:16-24"]
    assert wrong.status == "unsupported", wrong.message
    assert "does not carry the sentence's words; 17:" in wrong.message
    assert findings["Lindqvist Dep. 18:20-21"].status == "supported"


def test_a_stop_inside_emphasis_and_after_a_possessive_ends_a_sentence() -> None:
    text = (
        "**5. Applicant adopted its mark with knowledge of Emberly's.** Applicant chose "
        "EMBERLEE after a search. It knew Emberly's. The U.S. Army paid."
    )
    assert [text[a:b] for a, b in sentences(text)] == [
        "**5. Applicant adopted its mark with knowledge of Emberly's.**",
        "Applicant chose EMBERLEE after a search.",
        "It knew Emberly's.",
        "The U.S. Army paid.",
    ]
