"""Forms that the twenty-first session's last held-out round showed (an NLRB unfair labor
practice case, a Florida appeal), each tested on text of our own from the rule it follows:

- a party's series of exhibits named before "Exh." ("GC Exh. 7", "R Exh. 1 at 2", "Jt. Exh. 1
  ¶ 8") is that series' exhibit, labelled so by the file's name ("05-gc-exh-7-...pdf") or the
  first page's sticker ("GC EXHIBIT 7"); a number the labelled series lacks ("GC Exh. 11") is
  not in the packet;
- a production of one letter, the record "R" or the transcript "T", is cited "R. 22", "(T.
  9:6-10)";
- a case's name does not reach back over a sentence's end and the word opening the next ("...
  at Heron Bay. Under Castellanos v. Windward Isles ...");
- an opinion's notes numbered in parentheses after a rule ("(1) Because we reverse ...",
  called "prescribed.(1)") are read; a numbered line high on a page with no rule ("358 So. 3d
  1042") is no note.
"""

from apps.verification.checks import Finding
from apps.verification.claims import extract_claims
from tests.verification.packets import findings_by_claim, labelled_index

EXHIBITS = [
    (
        "05-gc-exh-7-termination-letter.pdf",
        [("NLRB-00011", "Dear Mr. Osei: your employment ends today for attendance.")],
    ),
    (
        "08-r-exh-1-written-warning.pdf",
        [("NLRB-00014", "WRITTEN WARNING: three late arrivals in March.")],
    ),
    (
        "10-joint-stipulation.pdf",
        [("NLRB-00016", "JT EXHIBIT 1\n\n8. The union filed its petition on May 2, 2023.")],
    ),
]


def _nlrb(text: str) -> dict[str, Finding]:
    return findings_by_claim(text, labelled_index(EXHIBITS), "NLRB-")


def test_a_partys_series_of_exhibits() -> None:
    findings = _nlrb(
        "The company ended his employment for attendance (GC Exh. 7). He had three late "
        "arrivals in March (R Exh. 1). The union filed its petition on May 2, 2023 (Jt. Exh. 1 "
        "¶ 8). He was also warned in April (GC Exh. 11)."
    )
    for cite, page in (("GC Exh. 7", "NLRB-00011"), ("R Exh. 1", "NLRB-00014")):
        found = findings[cite]
        assert found.status == "supported" and found.page is not None, (cite, found.message)
        assert found.page.bates == (page,)
    assert findings["Jt. Exh. 1 ¶ 8"].status == "supported", findings["Jt. Exh. 1 ¶ 8"].message
    missing = findings["GC Exh. 11"]
    assert missing.status == "unsupported" and "GCX11" in missing.message, missing.message


RECORD = [
    ("R0020", "FINAL JUDGMENT OF FORECLOSURE\nThe Court finds for the Association.\nPage 20 of 24")
]
TRIAL = [("T0009", "Page 9\n" + "\n".join(f"{n:2d}  " for n in range(1, 26)))]


def test_a_one_letter_record_and_transcript() -> None:
    text = "The court entered a final judgment of foreclosure (R. 20). See also (T. 9:6-10)."
    claims = extract_claims(text, bates_prefixes=["R", "T"])
    cites = {c.text: c.bates for c in claims if c.kind == "record_cite"}
    assert set(cites) == {"R. 20", "T. 9:6-10"}
    assert cites["R. 20"][0].prefix == "R" and cites["R. 20"][0].first == 20
    index = labelled_index([("09-final-judgment.pdf", RECORD), ("trial.pdf", TRIAL)])
    found = findings_by_claim(text, index, "R")
    assert found["R. 20"].status == "supported", found["R. 20"].message


def test_a_case_name_stops_at_a_sentence_end() -> None:
    text = (
        "The notice went only to the unit at Heron Bay. Under Castellanos v. Windward Isles "
        "Condominium Ass'n, 358 So. 3d 1042, 1044 (Fla. 4th DCA 2023), that fails."
    )
    (cite,) = [c for c in extract_claims(text) if c.kind == "case_citation"]
    assert cite.text.startswith("Castellanos v. Windward")
    assert cite.citation is not None and cite.citation.name is not None
    assert cite.citation.name.startswith("Castellanos v.")


_HEAD = "Castellanos v. Windward Isles Condo. Ass'n, 358 So. 3d 1042 (Fla. 4th DCA 2023)"
OPINION = [
    (
        "AUTH0001",
        f"{_HEAD}   1042\n\n358 So. 3d 1042\n\nYolanda CASTELLANOS, Appellant,\nv.\nWINDWARD "
        "ISLES CONDOMINIUM ASSOCIATION, INC., Appellee.\n\n" + "The owner moved away. " * 30,
    ),
    (
        "AUTH0002",
        f"{_HEAD}   1043\n\nOur holding requires only that the association follow the procedure "
        "the Legislature prescribed.(1)\n\nReversed.\n\n_______________\n(1) Because we reverse "
        "on this ground, we do not reach the late charges.",
    ),
]


def test_notes_in_parentheses_are_read_and_a_high_number_is_no_note() -> None:
    index = labelled_index([("12-castellanos.pdf", OPINION)])
    findings = findings_by_claim(
        "The court did not reach the late charges. Castellanos v. Windward Isles Condo. Ass'n, "
        "358 So. 3d 1042, 1043 n.1 (Fla. 4th DCA 2023). It reversed. Id. at 1043 n.2.",
        index,
        "AUTH",
    )
    note = next(f for t, f in findings.items() if t.endswith("1043 n.1 (Fla. 4th DCA 2023)"))
    assert note.status == "supported", note.message
    missing = findings["Id. at 1043 n.2"]
    assert missing.status == "unsupported" and "(its footnotes: 1)" in missing.message


APPENDIX = [
    (
        "03-capital-call-notice-jx14.pdf",
        [("A107", "CAPITAL CALL NOTICE\nContributions are due in ten business days.")],
    ),
    ("10-members-meeting-minutes-jx19.pdf", [("B31", "MINUTES\nThe members met on March 3.")]),
]


def test_a_partys_label_ending_a_files_name_and_alone_as_a_citation_sentence() -> None:
    # (the Delaware Supreme Court's appendices: "03-capital-call-notice-jx14.pdf" is JX 14; a
    # label of the series no document carries, as a citation sentence of its own, is none)
    findings = findings_by_claim(
        "The notice gave ten business days. JX 14 at A107. His rebuttal report says so. JX 52.",
        labelled_index(APPENDIX),
        "A",
    )
    assert findings["A107"].status == "supported", findings["A107"].message
    missing = findings["JX 52"]
    assert missing.status == "unsupported" and "JX14" in missing.message, missing.message
