"""Authorities beyond the reporter citation, on drafts and packets of our own: statutes as
claims (eyecite's and the forms it does not read) and checked against the frozen packet."""

from __future__ import annotations

import pytest

from apps.verification.authorities import NOT_IN_EVIDENCE
from apps.verification.checks import Finding, verify_text
from apps.verification.claims import Claim, StatuteCite, extract_claims
from apps.verification.claims.statutes import mention_pattern, titled_statutes
from apps.verification.index import PacketIndex, PageRecord

PREFIX = "QRV"

ORDER = """UNITED STATES DISTRICT COURT
Plaintiff brings a claim under 42 U.S.C. \u00a7\u00a7 1981 and 1983 and invokes
jurisdiction under 28 U.S.C. \u00a7 1331. The California claim rests on Cal. Civ. Code \u00a7 1542.
Order - Page 1 of 1"""
OCR_STATUTE = """TITLE 15 - COMMERCE AND TRADE
Section 78j of title 15, United States Code, makes it unlawful to use any manipulative
device in connection with the purchase or sale of any security. The terms of 15 U.S.C.
§ 16O2 apply."""
CLIENT = """From: Mara Quill
The shipment left the dock on 4 May 2024 and arrived at the warehouse damaged."""


def _packet() -> PacketIndex:
    texts = [(1, ORDER, "text_layer"), (2, OCR_STATUTE, "ocr"), (3, CLIENT, "text_layer")]
    return PacketIndex.build(
        [
            PageRecord(
                position=i + 1,
                document_id=doc,
                filename=f"doc-{doc}.pdf",
                page_number=1,
                bates=(f"{PREFIX}{2000000 + i:07d}",),
                text=text,
                source=source,
                ocr_confidence=91.0 if source == "ocr" else None,
                origin="public_record" if doc != 3 else "client",
            )
            for i, (doc, text, source) in enumerate(texts)
        ]
    )


def _statutes(text: str) -> list[Claim]:
    found = [c for c in extract_claims(text, bates_prefixes=(PREFIX,)) if c.kind == "statute"]
    for claim in found:
        assert text[claim.start : claim.end] == claim.text
    return found


def _findings(text: str) -> list[Finding]:
    claims = extract_claims(text, bates_prefixes=(PREFIX,))
    return [f for f in verify_text(text, claims, _packet()) if f.claim.kind == "statute"]


# --- extraction ------------------------------------------------------------------------------


def test_statutes_are_claims_with_offsets_title_code_and_section() -> None:
    text = "Relief lies under 42 U.S.C. \u00a7 1983. Cal. Civ. Code \u00a7 1542 bars the release."
    found = _statutes(text)
    assert [c.text for c in found] == ["42 U.S.C. \u00a7 1983", "Cal. Civ. Code \u00a7 1542"]
    assert found[0].statute == StatuteCite("U.S.C.", "42", "1983", None, None)
    assert found[1].statute == StatuteCite("Cal. Civ. Code", None, "1542", None, None)


def test_subsections_and_the_year_belong_to_the_cite_but_not_a_record_parenthetical() -> None:
    text = (
        "Diversity exists. 28 U.S.C.\u00a0\u00a7\u00a01332(a)(1) (2018). "
        "It was pleaded. 42 U.S.C. \u00a7 1983 (QRV2000001)."
    )
    found = _statutes(text)
    assert [c.text for c in found] == [
        "28 U.S.C.\u00a0\u00a7\u00a01332(a)(1) (2018)",
        "42 U.S.C. \u00a7 1983",
    ]
    assert found[0].statute is not None
    assert (found[0].statute.section, found[0].statute.pin) == ("1332", "(a)(1)")
    assert found[0].statute.year == 2018
    kinds = [c.kind for c in extract_claims(text, bates_prefixes=(PREFIX,))]
    assert "record_cite" in kinds


def test_a_statute_split_across_lines_is_one_claim() -> None:
    text = "The claim arises under 18 U.S.C.\n\u00a7 1030(g), as the order says."
    (claim,) = _statutes(text)
    assert claim.text == "18 U.S.C.\n\u00a7 1030(g)"
    assert claim.statute is not None and claim.statute.section == "1030"


def test_the_forms_eyecite_does_not_read_are_claims_too() -> None:
    text = (
        "See 42 USC 1985(3); section 1331 of title 28 of the United States Code; and "
        "title 15, United States Code, section 78j."
    )
    found = _statutes(text)
    assert [c.text for c in found] == [
        "42 USC 1985(3)",
        "section 1331 of title 28 of the United States Code",
        "title 15, United States Code, section 78j",
    ]
    assert [(c.statute.title, c.statute.section) for c in found if c.statute] == [
        ("42", "1985"),
        ("28", "1331"),
        ("15", "78j"),
    ]


def test_an_id_after_a_statute_is_that_statute_or_another_section_of_it() -> None:
    text = "Fees follow 42 U.S.C. \u00a7 1983 claims. Id. \u00a7 1988 says so."
    first, second = _statutes(text)
    assert first.statute == StatuteCite("U.S.C.", "42", "1983", None, None)
    assert second.text == "Id. \u00a7 1988"
    assert second.statute == StatuteCite("U.S.C.", "42", "1988", None, None, short=True)


def test_an_id_after_a_record_cite_is_never_bound_to_the_statute_before_it() -> None:
    text = "Relief lies under 42 U.S.C. \u00a7 1983. The letter says so (QRV2000002). Id."
    claims = extract_claims(text, bates_prefixes=(PREFIX,))
    ids = [c for c in claims if c.text.startswith("Id")]
    # The record cite's, again (tests/verification/test_record_id_cites.py).
    assert len(ids) == 1 and ids[0].kind == "record_cite" and ids[0].statute is None
    assert [ref.labels() for ref in ids[0].bates] == [["QRV2000002"]]


def test_section_numbers_of_an_agreement_are_not_statutes() -> None:
    text = "Under Section 4.2 of the Agreement and 12 months of notice, the lease ended."
    assert _statutes(text) == []


# --- the grammar -----------------------------------------------------------------------------


def test_one_statute_in_every_written_form_and_never_a_longer_section() -> None:
    pattern = mention_pattern(StatuteCite("U.S.C.", "42", "1983", None, None))
    same = [
        "42 U.S.C. \u00a7 1983",
        "42 USC 1983",
        "42 U. S. C. \u00a71983",
        "42 U.S.C.A. \u00a7 1983(a)",
        "42 U.S. Code \u00a7 1983",
        "42 U.S.C. \u00a7\u00a7 1981, 1983 and 1985",
        "section 1983 of title 42, United States Code",
        "Title 42, United States Code, Section 1983",
        "42\nU.S.C.\n\u00a7 1983",
    ]
    other = [
        "42 U.S.C. \u00a7 1983.5",
        "42 U.S.C. \u00a7 19830",
        "142 U.S.C. \u00a7 1983",
        "41 U.S.C. \u00a7 1983",
        "42 C.F.R. \u00a7 1983",
        "section 1983 of title 42",
    ]
    assert [bool(pattern.search(t)) for t in same] == [True] * len(same)
    assert [bool(pattern.search(t)) for t in other] == [False] * len(other)


def test_titled_forms_find_regulations_too() -> None:
    ((_, _, cite),) = list(titled_statutes("Rule 10b-5 is 17 CFR 240.10b-5."))
    assert (cite.code, cite.title, cite.section) == ("C.F.R.", "17", "240.10b-5")


# --- the check -------------------------------------------------------------------------------


def test_a_statute_the_packet_names_is_supported_on_that_page() -> None:
    text = "Plaintiff sues under 42 USC 1983. Jurisdiction: section 1331 of title 28, U.S.C."
    findings = _findings(text)
    assert [f.status for f in findings] == ["supported", "supported"]
    assert findings[0].page is not None and findings[0].page.bates == ("QRV2000000",)
    assert findings[0].match is not None
    start, end = findings[0].match
    assert "1983" in ORDER[start:end]
    assert findings[1].check == "statute_in_packet"


def test_a_state_code_section_is_matched_by_code_and_section() -> None:
    ok, wrong = _findings(
        "Cal. Civ. Code \u00a7 1542 applies; Cal. Civ. Code \u00a7 1543 does not."
    )
    assert ok.status == "supported"
    assert wrong.status == "unsupported" and NOT_IN_EVIDENCE in wrong.message


@pytest.mark.parametrize(
    ("text", "sections"),
    [
        ("Relief lies under 42 U.S.C. \u00a7\u00a7 1983 and 1988.", ["1983", "1988"]),
        ("See 42 USC \u00a7\u00a7 1981, 1983, and 1985(3).", ["1981", "1983", "1985"]),
        ("Cal. Civ. Code \u00a7\u00a7 1572 and 1573 define fraud.", ["1572", "1573"]),
        ("See 15 U.S.C. \u00a7\u00a7 78j(b) & 78t(a).", ["78j", "78t"]),
    ],
)
def test_every_section_of_a_double_section_list_is_a_claim(text: str, sections: list[str]) -> None:
    # Bluebook rule 3.3(b): "\u00a7\u00a7" marks several sections of one code, each cited.
    found = _statutes(text)

    assert [c.statute.section for c in found if c.statute] == sections
    codes = {(c.statute.code, c.statute.title) for c in found if c.statute}
    assert len(codes) == 1


def test_one_section_marked_once_takes_no_number_after_it() -> None:
    found = _statutes("Under 42 U.S.C. \u00a7 1983 and 20 other claims, the fee was paid.")

    assert [c.statute.section for c in found if c.statute] == ["1983"]


def test_each_listed_section_is_checked_against_the_packet() -> None:
    # The order names 42 U.S.C. \u00a7\u00a7 1981 and 1983, not \u00a7 1985.
    first, second, third = _findings("See 42 U.S.C. \u00a7\u00a7 1981, 1983 and 1985.")

    assert (first.status, second.status) == ("supported", "supported"), second.message
    assert third.status == "unsupported"
    assert third.message == f"42 U.S.C. \u00a7 1985: {NOT_IN_EVIDENCE}"


def test_a_statute_not_in_the_packet_is_not_in_the_evidence() -> None:
    (finding,) = _findings("The notice violated 15 U.S.C. \u00a7 1692g(a).")
    assert finding.status == "unsupported"
    assert finding.check == "statute_in_packet"
    assert finding.message == f"15 U.S.C. \u00a7 1692g(a): {NOT_IN_EVIDENCE}"


def test_another_title_with_the_same_section_is_not_the_statute() -> None:
    (finding,) = _findings("Jurisdiction lies under 29 U.S.C. \u00a7 1331.")
    assert finding.status == "unsupported"


def test_an_ocr_page_carries_the_statute_with_a_look_alike_digit_in_its_section() -> None:
    words, digits = _findings(
        "The scheme violated 15 U.S.C. \u00a7 78j(b) and 15 U.S.C. \u00a7 1602."
    )
    assert words.status == "supported"
    assert words.page is not None and words.page.source == "ocr"
    assert "subsection (b) is not compared" in words.message
    assert digits.status == "supported"
    assert digits.page is not None and digits.page.source == "ocr"


def test_a_statute_id_with_another_section_is_checked_as_that_section() -> None:
    findings = _findings("Plaintiff sues under 42 U.S.C. \u00a7 1981. Id. \u00a7 1986.")
    assert [f.status for f in findings] == ["supported", "unsupported"]


# --- courts ----------------------------------------------------------------------------------

OPINION = (
    "Orrin Mills, Inc. v. Falk, 77 N.W.2d 310 (Minn. 2019)\n310\nORRIN MILLS, INC. v. FALK\n"
    "A landlord who accepts rent after a breach waives the right to terminate for that breach."
)


def _case_findings(text: str) -> list[Finding]:
    pages = [
        PageRecord(
            position=1,
            document_id=9,
            filename="opinion.pdf",
            page_number=1,
            bates=("QRV3000000",),
            text=OPINION,
            source="text_layer",
            ocr_confidence=None,
            origin="public_record",
        )
    ]
    claims = extract_claims(text, bates_prefixes=(PREFIX,))
    findings = verify_text(text, claims, PacketIndex.build(pages))
    return [f for f in findings if f.claim.kind == "case_citation"]


def test_the_parenthetical_court_is_kept_without_its_date() -> None:
    text = (
        "See Doe v. Roe, 123 F. Supp. 3d 45, 47 (S.D.N.Y. Mar. 3, 2020); Poe v. Moe, 9 F.4th 1 "
        "(9th\u00a0Cir.\n2021); Kay v. Lee, 301 Or. App. 512 (2019)."
    )
    claims = [c for c in extract_claims(text) if c.kind == "case_citation"]
    assert [c.citation.court_text for c in claims if c.citation] == ["S.D.N.Y.", "9th Cir.", None]


def test_an_opinion_in_the_packet_with_its_own_court_passes_the_court_check() -> None:
    (finding,) = _case_findings(
        "Rent waives it. Orrin Mills, Inc. v. Falk, 77 N.W.2d 310 (Minn. 2019)."
    )
    assert finding.status == "supported"


def test_a_regional_reporter_with_a_court_of_another_state_is_named() -> None:
    (finding,) = _case_findings(
        "Rent waives it. Orrin Mills, Inc. v. Falk, 77 N.W.2d 310 (Cal. 2019)."
    )
    assert finding.status == "unsupported"
    assert finding.check == "case_reporter_court"
    assert "N.W.2d reports the courts of" in finding.message
    assert "Minnesota" in finding.message and "a court of California" in finding.message


def test_a_federal_reporter_with_a_state_court_and_the_reverse() -> None:
    federal, state = _case_findings(
        "It held so. Ames v. Bly, 77 F.3d 310 (Cal. 2019). It did. Cole v. Dunn, 25 Cal. 4th 100 "
        "(9th Cir. 2001)."
    )
    assert (federal.status, federal.check) == ("unsupported", "case_reporter_court")
    assert (
        federal.message
        == "F.3d reports federal courts; California Supreme Court is not one; "
        + (f"the opinion is also {NOT_IN_EVIDENCE}")
    )
    assert (state.status, state.check) == ("unsupported", "case_reporter_court")
    assert "Cal. 4th reports state courts (California)" in state.message


def test_a_court_that_does_not_exist_or_did_not_sit_that_year() -> None:
    none, early = _case_findings(
        "It held so. Ames v. Bly, 77 F.3d 310 (14th Cir. 2019). It did. Cole v. Dunn, 20 F. 100 "
        "(9th Cir. 1885)."
    )
    assert (none.status, none.check) == ("unsupported", "case_court")
    assert "'14th Cir.' is not a court that courts-db knows" in none.message
    assert (early.status, early.check) == ("unsupported", "case_court_year")
    assert "did not sit in 1885" in early.message


def test_courts_written_as_lawyers_write_them_are_real_courts() -> None:
    text = (
        "One. Ames v. Bly, 77 P.3d 310 (Colo. App. 2019). Two. Cole v. Dunn, 600 B.R. 1 "
        "(B.A.P. 9th Cir. 2019). Three. Eve v. Fay, 9 F. Supp. 3d 2 (D.N.J. 2019). Four. Gil v. "
        "Hale, 33 N.Y.3d 1 (N.Y. 2019). Five. Ives v. Jay, 8 F.3d 1 (2nd Cir. 1999)."
    )
    findings = _case_findings(text)
    assert len(findings) == 5
    assert {f.check for f in findings} == {"case_in_packet"}
    assert all(NOT_IN_EVIDENCE in f.message for f in findings)


def test_the_court_check_leaves_a_finding_unsupported_for_another_reason() -> None:
    (finding,) = _case_findings("It held so. Ames v. Bly, 77 F. 310 (Cal. 1950).")
    assert (finding.status, finding.check) == ("unsupported", "case_reporter_year")


def test_a_failing_courts_db_leaves_the_finding_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    import courts_db

    def explode(*args: object, **kwargs: object) -> list[str]:
        raise RuntimeError("courts-db broke")

    monkeypatch.setattr(courts_db, "find_court", explode)
    (finding,) = _case_findings(
        "It held so. Ames v. Bly, 77 F.3d 310 (Ninth Circuit Court Xq 2019)."
    )
    assert (finding.status, finding.check) == ("unsupported", "case_in_packet")
    assert finding.message.endswith(NOT_IN_EVIDENCE)


def test_lowercase_prose_is_never_read_as_a_code() -> None:
    assert _statutes("We paid 5 pa code 123 fees and sent 2 me code r 4 times.") == []
