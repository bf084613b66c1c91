"""The verifier on the set written by hand (tests/verification/handwritten/: seventy-four cases
in styles the generator does not write, see its README), in the `--fast` evaluation: precision
and the false-flag rate within the targets, and every error kind but seven caught in full; wrong
pages, things used as record cites, references to the system's own work, pages out of range,
altered amounts and altered quotations, the weakest, at least 0.79, 0.87, 0.85, 0.98, 0.99 and
0.99, and wrong pins 0.94 (what is missed and flagged wrongly is on the status page)."""

from pathlib import Path

import pytest

from bench import verifier_eval
from bench.eval_cases import ERROR_KINDS
from lexweb_dev import evaluation
from tests.verification.handwritten import make_sources

HANDWRITTEN = Path(__file__).resolve().parent / "handwritten"


@pytest.mark.slow
def test_the_set_holds_every_error_kind_and_its_sources_are_its_pages(tmp_path: Path) -> None:
    cases = evaluation.load_set(HANDWRITTEN)
    assert len(cases) == 74
    labels = evaluation.all_labels(cases)
    assert {label.error for label in labels if not label.supported} == set(ERROR_KINDS)
    make_sources.write_to(HANDWRITTEN, tmp_path)
    for case in cases:
        for document in case.documents:
            committed = HANDWRITTEN / case.name / "sources" / document
            written = tmp_path / case.name / "sources" / document
            assert written.read_bytes() == committed.read_bytes(), document


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> evaluation.Score:
    out = tmp_path_factory.mktemp("handwritten") / "findings.jsonl"
    return verifier_eval.run_fast(HANDWRITTEN, out)["result"]


@pytest.mark.slow
def test_precision_and_the_false_flag_rate_hold(result: evaluation.Score) -> None:
    assert result["targets"]["precision"], result["wrong_flags"]
    assert result["targets"]["false_flag_rate"], result["wrong_flags"]


# The twenty-third session's second round (an appeal to the Merit Systems Protection Board on
# "IAF, Tab 9, Subtab 4e at 2" and "HT 112", an Arizona appeal on "IR 31 at 2", "RT 3/5/24 at
# 43" and "(App. 2020)", a Georgia appeal on "R-45", "T-123" and parallels in parentheses),
# measured on ab3adea before any rule was made on it (0.741 / 0.977 / 0.8%, 0.875 / 0.716 /
# 15.8%, 0.964 / 0.950 / 2.7%), then read rule by rule
# (test_forms_of_agency_files_and_state_records.py: 0.914 / 0.981 / 0.8%, 0.946 / 0.964 / 0%,
# 0.964 / 0.983 / 0.9%). What they still miss: a timekeeping system's name "VATAS", a Georgia
# Code section "OCGA § 51-3-1" and an escrow number used as cites, transcript pages cited for
# lines a neighbouring page holds ("HT at 46"), a wrong paragraph pin of a Board decision
# ("Halvorsen, 122 M.S.P.R. 317, ¶ 11"). Over the seventy-four cases: wrong pages 406 of 494,
# things 326 of 373, own work 240 of 276, out of range 348 of 352, pins 280 of 296.
# The twenty-third session's round (an EEOC position statement citing its exhibit binder by
# tab, "Tab 7 at 3", "(See Tab 12.)"; a Minnesota appeal on "A. 45", "T. 123", "T. II 5" and
# "2T. 5"; a New York Commercial Division motion on "NYSCEF Doc. No. 45, at 3"), measured on
# 77cb617 before any rule was made on it (0.962 / 0.671 / 21.9%, 0.818 / 0.882 / 3.4%, 0.898 /
# 0.855 / 7.6%), then read rule by rule (test_forms_of_binders_and_filings.py: 0.981 / 1.000 /
# 0%, 0.945 / 0.963 / 0%, 0.949 / 0.982 / 0.8%). What they still miss: things in parentheses
# after a name, read as what the name is ("the dock time clock ... (ShiftLedger)", "Unit B
# (Index No. 652918/2021)"), a policy form's number "(CPI-VAC 04 19)", a statute's subdivision
# "Subd. 2a at 3", a recorder's "Doc. No. 342961", and the caption's appeal number "A24-0917"
# is read as a range of the appendix "A". Over the seventy-one cases: wrong pages 390 of 475,
# things 315 of 358, own work 229 of 265, out of range 329 of 332, pins 269 of 283.
# The nineteenth round (a Washington appeal on clerk's papers "CP 38-39" and reports of
# proceedings "1 RP 42", "RP (Mar. 5, 2024) at 43"; an Illinois appeal on "C 212", "R 14-15",
# "SUP C 4", "E 5"; a Colorado appeal on "CF, p. 213" and "TR 3/5/24, p. 43:16-17"), measured
# on 496e423 before any rule was made on it (0.887 / 0.980 / 0%, 0.982 / 0.982 / 0.9%, 0.811 /
# 0.719 / 16.7%: test_forms_of_dated_records.py), then read rule by rule (0.943 / 0.981 / 0%,
# unchanged, 0.906 / 0.981 / 0.9%). What they still miss: pins of a paragraph or a parallel
# reporter's page that exists but carries another proposition ("Pinecrest, ¶ 9", "Id. at ¶ 23",
# "Pinecrest, 495 P.3d at 614"), a plat's "Lot 23, Block 2, Aspen Hollow Ridge Filing No. 3",
# another case's number "King County No. 22-2-09161-4 SEA", the team's "Fee Segregation
# Research Memo (Kwan) at 3", "Counterstatement outline at 2", "Case Chronology (A&M
# internal), entry 37". Over the sixty-eight cases: wrong pages 368 of 453, things 307 of 344,
# own work 220 of 256, out of range 309 of 312, pins 258 of 271.
# The eighteenth round (a Fifth Circuit appeal on its record on appeal "ROA.24-20317.512" and
# "ROA.512", a New Jersey appeal on unpadded appendices "Da12", "Pa21-22" and designated
# transcripts "1T45:19-21", a Second Circuit appeal on "JA-314" and "SPA-5"), each measured
# before any rule was made on it (0.914 / 0.570 / 31.4%, 0.774 / 0.621 / 19.7%, 0.964 / 0.982 /
# 0.9%: test_forms_of_docketed_records.py), then read rule by rule; the Delaware appeal's
# unpadded "B35" and "A31" and its opinion below's "Op. at *2" are read now. What the three
# still miss: things alone as citation sentences or in parentheses ("Batch PR-2023-0018.",
# "(Inv. 3318)", "(Block 87.02, Lot 19)", "API No. 42-389-40117" after a record cite, "(Halloran
# Dep., Job No. 23-118406)"), the team's own work named with a row, an entry or a tab ("Appeal
# Chronology tab, row 31", "Record Digest (team working file), entry 14", 'Damages Model v2,
# tab "OT calc"', "internal record-cite chart, row 41"), "Farraday trial notes, Day 2, at 4",
# the drafter's own brief "(Pb9)". Over the sixty-five cases: wrong pages 353 of 438, things
# 290 of 326, own work 211 of 244, out of range 294 of 297, pins 249 of 258.
# The seventeenth round (an NLRB unfair labor practice case, a Florida appeal, a Delaware
# Supreme Court appeal), measured on 1136efc; the first two read rule by rule, the Delaware
# appeal (recall 0.764, precision 0.913, false flags 1.9%) given one rule at the session's end
# (party labels ending a file's name, "JX 52." alone: 0.800 / 0.917 / 1.9%). It still misses
# its appendices' one-letter prefixes "B31" (two digits: no 3-digit label is read), "JX 40 at
# A111" and "B34 (Tr. 132:1-4)" on the wrong page, "A31" where the page is in the other
# appendix, the opinion below's "Op. at *2" pins, the team's "Appellant's Chronology (work
# product) at 5" and "Answering Br. draft 1 at 14", "C.A. No. 2022-0917-JRH, at 14" and "Cap.
# Acct. 7720-03". Over the sixty-two cases: wrong pages 334 of 419, things 280 of 311, own work
# 204 of 231, out of range 277 of 282, pins 232 of 243.
# The sixteenth round (a Massachusetts appeal on a record appendix "R.A. II:34" and "Tr.
# II:112", a California appeal on "1 CT 45" and "2 RT 10:23-24", a Texas appeal on "CR 407" and
# "4 RR 106:21-107:12"), measured on be37bab before any rule was made on it, then read rule by
# rule. What it still misses: a registry's "(Book 61233, Page 118)", "(Suite 410)", a volume
# of the appendix that does not exist "R.A. III:14" (its page exists in volume I), a trial
# court's cause number with a page "(Tr. Ct. No. 2019-48213, at 108.)", the team's own "record
# index, row 44". Over the fifty-nine cases: wrong pages 324 of 401, things 271 of 298, own
# work 197 of 220, out of range 265 of 267, pins 223 of 229.
# The fifteenth round (a Ninth Circuit appeal on excerpts of record "1-ER-9", a Federal Circuit
# appeal on a joint appendix "Appx1021", an E.D. La. insurance case on "R. Doc. 38-4 at 3"),
# measured before any rule was made on it and then read rule by rule, as the fourteenth's TTAB
# and Pennsylvania cases were. What the fifty-six cases still miss: a wrong page whose fact is
# the other page's in other words or numbers ("seven weeks after the proof of loss arrived";
# "twelve seconds later" against an event log's times), the drafter's "Table of Third-Party
# Uses" and "Appendix A, DuPont Factor Chart" in prose, "(Class 25)" mid-sentence. Over the
# fifty-six cases: wrong pages 307 of 384, things 260 of 284, own work 189 of 211, out of
# range 253 of 254, pins 211 of 217.
# The fourteenth round (an FDCPA class action in N.D. Ga., a TTAB opposition, a Pennsylvania
# appeal), added as measured on the session's last code with no rule made on the last two: the
# Board's docket cites "14 TTABVUE 6" are not read (wrong pages and an entry not in the record
# missed) and its "2022 USPQ2d 1187, at *3" star pins are read as reporter pages (flagged
# outside the opinion: most of the set's false flags), a registration's and an application's
# numbers, a URL, the drafter's "Opp. Br. at 12", "Table of Third-Party Uses", "Statement of
# Questions Involved", "Appellant's Br. at 9" are not flagged; the reproduced record's "R.R.
# 258a" is read as a Bates number. Over the fifty-three cases: wrong pages 279 of 364, things
# 238 of 268, own work 171 of 199, out of range 236 of 239.
# The thirteenth round (a § 2254 habeas case, an AAA arbitration, a CERCLA case) adds: wrong
# pages between a transcript's neighbouring pages and look-alike call logs and tables; a
# schedule the plan does not have "(JX-2, Schedule B)" (out of range); the drafter's own "(See
# Claim I.)", "Reply Br. at 6", "Post-Hr'g Br. at 14", "Mem. at 6", "Table A", "Cost Table 3"
# and "Figure 2" that no heading of the draft names. Over the fifty cases: wrong pages 263 of
# 338, things 230 of 250, own work 168 of 185, out of range 223 of 224.
# The twelfth round (a Texas well-site injury, an Illinois retaliatory discharge, a FOIA case)
# adds: wrong pages on monthly attendance reports and job safety forms alike, a declaration's
# neighbouring page; a FOIA exemption "Exemption 7(C)." and a statute the packet names "5
# U.S.C. § 552(b)(5)." as citation sentences, a Vaughn index's "Doc. No. 47" (read as a docket
# entry), a handbook's "(Policy 4.3)", a text's time "(Pruitt Text 10:41 AM)", an "Appendix
# A." no heading of the draft names; a two-word quotation altered ("medically required" for
# "medically necessary") is left for review. Over the forty-seven cases: wrong pages 252 of
# 320, things 215 of 235, own work 163 of 171, pins 176 of 182, altered quotations 245 of 246.
# The eleventh round (a bid protest, a will contest, a music copyright case) adds what it
# still misses: wrong pages on look-alike nursing notes and letters (5 of 8 and 1 of 7 missed),
# a FAR section where a record cite belongs "(FAR 15.305(a))", a recording's timecode "(at
# 1:42.)", and the brief's own "(Protest Ground 2)" and "(Schedule A)" that no heading of the
# draft names. Over the forty-four cases: wrong pages 237 of 301, things 204 of 218, own work
# 153 of 158, pins 164 of 170.
# Wrong pages: 224 of 282 over the forty-one cases (the first four alone: 26 of 30); the cited
# page and the right one share the sentence's facts save one said in other words ("told her the
# decision had nothing to do with her performance" against "not a reflection of your
# individual performance"), or a count ("38 of the 112 anchors") on a neighbour. A reference
# to a companion declaration being drafted ("Kanwar Decl. ¶ 41") names a declaration the packet
# holds, without numbered paragraphs: left for review; a worksheet named in prose with a tab
# in quotation marks ('Amount Due Worksheet v3, tab "Per Diem"'): two of 146. Things used as
# cites: 191 of 203 (a repair order "RO 00102", "EnCase 8", a project number that names a
# packet document's title "FRG-24-0817 at 2", "CMP-21-04417 at 4", a police file
# "PNC-VO-1187-2022 at 2" in prose, a tax map's "Block 412, Lot 17.02", a form's "Line 8b",
# forms cited alone "(Form 8283.)" and "(Form 870.)" though the packet holds a Form 8283, a
# statute "I.R.C. § 6695A at 2", a data series' code of letters alone "CCR-MWL-LW", a rule's
# section "(FINRA Rule 2111.05(c))"). Altered amounts: 190 of 191 (a tax table's negative
# figure in parentheses without a currency sign, "(20,354)", is read as no amount in a draft).
WEAKEST = {
    "bates_wrong_page": 0.79,
    "bates_not_a_bates_number": 0.87,
    "self_generated_reference": 0.85,
    "bates_out_of_range": 0.98,
    "amount_altered": 0.99,
    "quote_altered": 0.99,
}
# A wrong pin whose proposition shares all but one word with the pin's page ("see also id. at
# 507 (rejecting Rule 10b5-1 defense at the pleading stage)", the defense rejected on 512),
# and pins whose page paraphrases the proposition as its right page does: five of the 157.
PIN_FLOOR = 0.94


@pytest.mark.slow
def test_every_error_kind_is_caught_but_the_weakest_at_their_floor(
    result: evaluation.Score,
) -> None:
    by_error = result["recall_by_error"]
    for error, counted in by_error.items():
        if error in WEAKEST:
            floor = WEAKEST[error]
            assert counted["caught"] / counted["total"] >= floor, result["missed"]
        elif error == "citation_pin_cite_wrong":
            assert counted["caught"] / counted["total"] >= PIN_FLOOR, result["missed"]
        else:
            assert counted["caught"] == counted["total"], (error, result["missed"])
