"""Forms that the twenty-first session's held-out Ninth Circuit appeal showed (excerpts of record
cited "1-ER-9"), each tested on text of our own from the rule it follows:

- a published opinion's own pages are where its citation is looked for first: a filed order of
  the record that cites the opinion near its top (its filing header above, the case's name
  across the line before the citation) is no page of that opinion;
- a rule of procedure cited beside a record cite ("1-ER-7-8; see Fed. R. App. P. 4(a)(1)(A).")
  is a citation, no words the record cite vouches for;
- a citation sentence that is a number with its label ("Claim No. PAL-23-0118842."), a label of
  another production's prefix, a space and digits ("PALISADE 000234."), or a page of another
  volume of the excerpts ("3-ER-512.") is no record cite of this case; nor one of a number
  grouped by commas, with its page ("Appl. No. 15/873,204, Resp. at 9.", "Prov. Appl. No.
  62/447,915 at 6."), or of its kind in small letters ("Pelican file no. PCS-21-44817."; a
  sentence with a verb, "I reviewed Order No. R2-2019-0034.", is none);
- (the held-out Federal Circuit appeal, its joint appendix cited "Appx1021") a page given with
  a comma after a cite of a document's paragraphs or a patent's columns must hold them:
  "Okafor Decl. ¶ 10, Appx1021" is wrong where ¶ 10 is on Appx1020, and "'417 patent col. 7
  ll. 20-22, Appx1016" where column 7 is printed on Appx1015.
"""

from apps.verification.checks import Finding
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord
from tests.verification.packets import findings_by_claim


def _page(
    position: int, document: int, name: str, label: str, text: str, origin: str
) -> PageRecord:
    return PageRecord(position, document, name, 1, (label,), text, "text_layer", None, origin)


ORDER = (
    "Case 2:23-cv-01147-TLF    Document 58    Filed 03/11/24    Page 3 of 5\n\n"
    "Judge Harrow reached the same conclusion in Larchmont Bakeries, Inc. v.\n"
    "Ironclad Specialty Insurance Co., 684 F. Supp. 3d 1207 (W.D. Wash. 2023). Id. at 1209.\n"
    "The ice storm's interruption of power, an excluded peril, set the chain in motion. A "
    "motion under Fed. R. App. P. 4 and Fed. R. Civ. P. 56 was not filed."
)
NOTICE = (
    "Case 2:23-cv-01147-TLF    Document 61    Filed 04/05/24\n\n"
    "NOTICE OF APPEAL filed April 5, 2024 by Skagit Bend."
)
_HEAD = "LARCHMONT BAKERIES, INC. v. IRONCLAD SPECIALTY INS. CO."
_EVEN = "684 FEDERAL SUPPLEMENT, 3d SERIES"
OPINION = [
    f"{_HEAD}          1207\n     Cite as 684 F. Supp. 3d 1207 (W.D. Wash. 2023)\n\nThe "
    "bakery's generator ran out of fuel during an outage.",
    f"1208          {_EVEN}\n\nIronclad denied the claim under the utility exclusion.",
    f"{_HEAD}          1209\n     Cite as 684 F. Supp. 3d 1207 (W.D. Wash. 2023)\n\nA "
    "generator that runs out of fuel has not broken down.",
    f"1210          {_EVEN}\n\nHad the generator suffered a sudden physical breakdown, a "
    "different question would be presented.",
]


def _index() -> PacketIndex:
    pages = [
        _page(1, 1, "02-order-dkt-58.pdf", "1-ER-0003", ORDER, "court"),
        _page(2, 2, "04-notice-of-appeal.pdf", "1-ER-0007", NOTICE, "court"),
    ]
    pages += [
        _page(3 + k, 3, "14-opinion-larchmont.pdf", f"AUTH-{k + 6:04d}", text, "public_record")
        for k, text in enumerate(OPINION)
    ]
    return PacketIndex.build(pages)


def _findings(text: str) -> dict[str, Finding]:
    return findings_by_claim(text, _index(), "1-ER-")


def test_an_opinion_is_its_own_pages_not_an_order_citing_it_at_its_top() -> None:
    findings = _findings(
        "A breakdown would present a different question. Larchmont Bakeries, Inc. v. Ironclad "
        "Specialty Ins. Co., 684 F. Supp. 3d 1207, 1210 (W.D. Wash. 2023)."
    )
    (cite,) = [f for f in findings.values() if f.claim.kind == "case_citation"]
    assert cite.status == "supported", cite.message
    assert cite.page is not None and cite.page.bates == ("AUTH-0009",)


def test_a_rule_cited_beside_a_record_cite_is_no_word_of_the_sentence() -> None:
    findings = _findings(
        "Skagit Bend filed its notice of appeal on April 5, 2024. 1-ER-7; see Fed. R. App. P. "
        "4(a)(1)(A)."
    )
    assert findings["1-ER-7"].status == "supported", findings["1-ER-7"].message


def test_numbers_labels_and_other_volumes_standing_as_citation_sentences() -> None:
    text = (
        "Palisade recorded that an accident was likely. Claim No. PAL-23-0118842. Counsel "
        "drove the denial. PALISADE 000234. The photographs were not considered. 3-ER-512. "
        "The appeal was timely. 1-ER-7. The court said so. Id. at 4."
    )
    claims = extract_claims(text, bates_prefixes=["1-ER-"])
    assert [(c.kind, c.text) for c in claims if "record_cite" in c.kind] == [
        ("not_a_record_cite", "Claim No. PAL-23-0118842"),
        ("not_a_record_cite", "PALISADE 000234"),
        ("not_a_record_cite", "3-ER-512"),
        ("record_cite", "1-ER-7"),
    ]


def test_numbered_things_grouped_by_commas_and_paged_as_citation_sentences() -> None:
    text = (
        "Meridane distinguished Holloway. Appl. No. 15/873,204, Resp. at 9. The provisional "
        "says so. Prov. Appl. No. 62/447,915 at 6. No ALE claim was sent. Pelican file no. "
        "PCS-21-44817. I reviewed Order No. R2-2019-0034."
    )
    claims = extract_claims(text, bates_prefixes=["Appx"])
    flagged = [c.text for c in claims if c.kind == "not_a_record_cite"]
    assert flagged == [
        "Appl. No. 15/873,204",
        "Prov. Appl. No. 62/447,915 at 6",
        "Pelican file no. PCS-21-44817",
    ]


DECLARATION = [
    (
        "Appx1020",
        "DECLARATION OF DR. OKAFOR\n\n9. I have designed infusion pumps for twenty years.\n\n"
        "10. In this art a sensor is downstream by reference to the direction of flow.",
    ),
    ("Appx1021", "11. The term requires no separation from the pump by any structure."),
]
PATENT = [
    (
        "Appx1014",
        "US 10,662,417 B2\n"
        + "".join(
            f"\n                {n}\n    The pump of the disclosure, part {n}.\n"
            for n in range(1, 7)
        ),
    ),
    (
        "Appx1015",
        "US 10,662,417 B2\n\n                7\n    What is claimed is:\n"
        "    4. The pump of claim 1, wherein the interval is at least three consecutive delivery "
        "strokes.\n\n"
        "                8\n    9. A method of detecting an occlusion.",
    ),
    (
        "Appx1016",
        "AMENDMENT AND RESPONSE\nApplicant amended claim 4 to require three consecutive "
        "delivery strokes.",
    ),
]


def test_a_page_beside_a_paragraph_or_a_column_cite_must_hold_it() -> None:
    from tests.verification.packets import labelled_index

    index = labelled_index(
        [
            ("06-okafor-declaration.pdf", DECLARATION),
            ("04-us-patent-10662417.pdf", PATENT[:2]),
            ("05-prosecution-history.pdf", PATENT[2:]),
        ]
    )
    findings = findings_by_claim(
        "A sensor is downstream by the direction of flow. Okafor Decl. ¶ 10, Appx1021. Claim 4 "
        "requires three consecutive delivery strokes. '417 patent col. 7 ll. 1-4, Appx1016.",
        index,
        "Appx",
    )
    paragraph = findings["Appx1021"]
    assert paragraph.status == "unsupported", paragraph.message
    assert "Okafor Decl. ¶ 10 is on Appx1020" in paragraph.message
    column = findings["Appx1016"]
    assert column.status == "unsupported", column.message
    assert "column 7 is on Appx1015" in column.message
