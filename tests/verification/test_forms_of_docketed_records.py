"""Forms that the twenty-second session's held-out round showed, each tested on text of our
own from the rule it follows:

- the Fifth Circuit's record on appeal is stamped with the appeal's docket number in its
  prefix ("ROA.24-20317.512", Fifth Circuit Rule 28.2.2) and a brief may cite it with the
  number left out ("ROA.512", "ROA.512-14"): both are that page, and the label is never read as
  a page-suffix label (page 512 of document 20317);
- an appendix numbered unpadded ("Da12", "B35", "JX 33 at B38") is read where a cite stands
  alone, never in prose ("Class A1 notes");
- New Jersey's transcripts are designated by number in the brief's list ("1T - Transcript of
  bench trial, March 5, 2024") and cited "1T45:19-21": the transcript whose file names "1T",
  else the one whose file names the day;
- a name the draft gives a full citation is its short form: tests/verification/
  test_defined_short_forms.py.
"""

import pytest

from apps.verification import services
from apps.verification.checks import verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import bates_key, split_label
from tests.verification.packets import labelled_index, transcript_page

PREFIX = "ROA.24-20317."
RECORD = [
    (
        "04-consulting-agreement.pdf",
        [
            (f"{PREFIX}511", "CONSULTING AGREEMENT\nThe consultant is paid a day rate of $1,450."),
            (f"{PREFIX}512", "The consultant follows the operator's drilling program."),
        ],
    ),
    (
        "06-hollings-deposition.pdf",
        [(f"{PREFIX}513", "Q. Did he ever refuse a well?\nA. Not that I recall.")],
    ),
]


def test_a_docketed_label_is_its_prefix_and_page_not_a_page_suffix() -> None:
    assert split_label("ROA.24-20317.512") == ("ROA.24-20317", "512", None)
    assert bates_key("ROA.24-20317.512") == bates_key("ROA 24-20317-512")
    # (a page-suffix label's prefix is letters)
    assert split_label("ABC000101.0002") == ("ABC", "000101", "0002")


@pytest.mark.slow
def test_the_record_is_cited_whole_or_with_its_docket_number_left_out() -> None:
    text = (
        "He was paid a day rate of $1,450. ROA.24-20317.511. He followed the operator's "
        "drilling program. ROA.512. He never refused a well. ROA.513. He was paid a day rate "
        "and followed the operator's program. ROA.511-12. He was paid a day rate. ROA.513. "
        "The agreement ran for two years. ROA.540."
    )
    claims = extract_claims(text, bates_prefixes=[PREFIX])
    cites = {c.text: c for c in claims if c.kind == "record_cite"}
    assert [ref.prefix for ref in cites["ROA.512"].bates] == [PREFIX]
    assert (cites["ROA.511-12"].bates[0].first, cites["ROA.511-12"].bates[0].last) == (511, 512)

    checked = verify_text(text, claims, labelled_index(RECORD))
    findings = {f.claim.text: f for f in checked}
    for right in ("ROA.24-20317.511", "ROA.512", "ROA.511-12"):
        assert findings[right].status == "supported", findings[right].message
    # the same page cited for a fact it carries, then for one it does not
    both = [f.status for f in checked if f.claim.text == "ROA.513"]
    assert both[0] == "supported" and both[1] != "supported"
    assert findings["ROA.540"].status == "unsupported"
    assert "ROA.24-20317.511-ROA.24-20317.513" in findings["ROA.540"].message


@pytest.mark.django_db
def test_the_prefixes_read_off_docketed_labels_keep_the_docket_number() -> None:
    pages = list(labelled_index(RECORD).pages)
    assert services.bates_prefixes(case_id=0, pages=pages) == [PREFIX]


# -- an appendix numbered unpadded ----------------------------------------------------------

APPENDIX = [
    (
        "02-home-improvement-contract.pdf",
        [
            ("Da12", "HOME IMPROVEMENT CONTRACT\nThe contract price is $84,500.00."),
            ("Da13", "Section 5. Every change order must be signed by both owners."),
        ],
    ),
    ("04-final-judgment.pdf", [("Da21", "FINAL JUDGMENT\nJudgment is entered for $260,371.50.")]),
]


def test_an_unpadded_appendix_page_is_read_where_a_cite_stands_alone() -> None:
    text = (
        "The contract price was $84,500.00. Da12. Every change order needed both owners' "
        "signatures (Da13), and judgment was entered for $260,371.50, Da21; see also Da12-13. "
        "The judgment was stayed. Da40. Class Da1 notes and vitamin B12 are no cites."
    )
    claims = extract_claims(text, bates_prefixes=["Da", "B"])
    cites = [c.text for c in claims if c.kind == "record_cite"]
    assert cites == ["Da12", "Da13", "Da21", "Da12-13", "Da40"]

    findings = {f.claim.text: f for f in verify_text(text, claims, labelled_index(APPENDIX))}
    for right in ("Da12", "Da13", "Da21", "Da12-13"):
        assert findings[right].status == "supported", findings[right].message
    assert findings["Da40"].status == "unsupported"


# -- New Jersey's transcripts, by designation -----------------------------------------------

DESIGNATIONS = (
    "TRANSCRIPT DESIGNATIONS\n\n"
    "1T - Transcript of bench trial (Volume 1), dated March 5, 2024\n\n"
    "2T - Transcript of bench trial, March 6, 2024\n\n"
)


def _transcript_day(filename: str, label: str, page: int, lines: dict[int, str]) -> tuple:
    head = "Osterhout v. Bellwether - Bench Trial"
    return (filename, [(label, transcript_page(head, page, lines))])


def test_a_designated_transcript_is_the_file_naming_it_or_else_its_day() -> None:
    index = labelled_index(
        [
            _transcript_day(
                "11-trial-transcript-1T.pdf",
                "Pa30",
                45,
                {19: "A. The crew never installed the ice and water shield.", 20: "Q. Never?"},
            ),
            _transcript_day(
                "12-trial-transcript-2024-03-06.pdf",
                "Pa31",
                112,
                {21: "A. He told us the crew would walk off the job."},
            ),
        ]
    )
    text = (
        f"{DESIGNATIONS}The crew never installed the ice and water shield. 1T45:19-20. He told "
        "them the crew would walk off the job (2T112:21). The crew walked off the job. 1T45:19."
    )
    claims = extract_claims(text, bates_prefixes=["Pa"])
    checked = verify_text(text, claims, index)
    findings = [(f.claim.text, f.status) for f in checked if f.claim.kind == "record_cite"]

    assert findings[:2] == [("1T45:19-20", "supported"), ("2T112:21", "supported")]
    assert findings[2][1] != "supported"  # line 19 says nothing of walking off
    first, _, last = (f for f in checked if f.claim.kind == "record_cite")
    assert "11-trial-transcript-1T.pdf" in first.message and "45:19" in last.message
    assert "refers to the record cite before it" not in first.message


# -- a cite in an opinion's text running onto the next line ---------------------------------


def test_an_opinion_citing_another_on_two_lines_is_not_that_opinion() -> None:
    """The trial court's opinion cites "Delacroix v. Summit Ridge\\nContracting, Inc., 472 N.J.
    Super. 140, 142" near the top of a page: the line with the volume names no "v.", yet it is
    a cite in the text, not the page's running head; Delacroix's pages are its own five."""
    trial = [
        "479 N.J. Super. 391\nOSTERHOUT v. BELLWETHER\n\nII.\n\nTo prevail under the CFA, a "
        "plaintiff must prove a loss. Delacroix v. Summit Ridge\nContracting, Inc., 472 N.J. "
        "Super. 140, 142 (App. Div. 2022).\nThe rest of the page.",
        "479 N.J. Super. 392\nOSTERHOUT v. BELLWETHER\n\nIII.\n\nThe judgment follows.",
    ]
    delacroix = [
        f"472 N.J. Super. {140 + k}\nDELACROIX v. SUMMIT RIDGE CONTRACTING, INC.\n\n{words}"
        for k, words in enumerate(
            [
                "Argued January 19, 2022.",
                "Plaintiff contracted for a kitchen renovation.",
                "A loss must be ascertainable.",
                "The cabinetry was received.",
                "Trebling of an ascertainable loss is not discretionary.",
            ]
        )
    ]
    index = labelled_index(
        [
            ("06-trial-opinion.pdf", [(f"Da{26 + k}", page) for k, page in enumerate(trial)]),
            ("07-delacroix.pdf", [(f"Da{29 + k}", page) for k, page in enumerate(delacroix)]),
        ]
    )
    text = (
        "Trebling of an ascertainable loss is not discretionary. Delacroix v. Summit Ridge "
        "Contracting, Inc., 472 N.J. Super. 140, 144 (App. Div. 2022)."
    )
    claims = extract_claims(text, bates_prefixes=["Da"])
    (finding,) = [f for f in verify_text(text, claims, index) if f.claim.kind == "case_citation"]
    assert finding.status == "supported", finding.message
    assert finding.page is not None and finding.page.filename == "07-delacroix.pdf"


# -- a word and a code as a citation sentence -------------------------------------------------


def test_a_word_and_a_code_alone_as_a_citation_sentence_is_no_record_cite() -> None:
    """ "Batch PR-2023-0018." after a sentence stands where its cite belongs and names a
    payroll batch; the whole code is the finding's text, never its look-alike first part
    ("PR-2023"). The law's units and the record's own labels alone are no such thing."""
    text = (
        "The payroll system confirms that no hours were recorded. Batch PR-2023-0018. The "
        "balance was paid (Acct. No. CL-1207-0044), and he agreed. The plan was confirmed "
        "under Chapter 11. Section 1031. The notice went out. Exhibit 12. Table 2."
    )
    claims = extract_claims(text, bates_prefixes=[PREFIX])
    flagged = [c.text for c in claims if c.kind == "not_a_record_cite"]
    assert flagged == ["PR-2023-0018", "CL-1207-0044"]
