"""Page and line cites of transcripts (issue 28 requirement 7), from the rule that a transcript
page carries numbered lines 1-25 and a cite "P:L-L" (or "P:L-P:L") names those lines of that
page. The transcripts are printed to real PDFs with pymupdf and read back by their text layer."""

import pymupdf
import pytest

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord


def _numbered(page: int, lines: dict[int, str]) -> str:
    body = "\n".join(f"{n} {lines.get(n, '')}".rstrip() for n in range(1, 26))
    return f"Page {page}\n{body}"


VOSS = [
    _numbered(
        45,
        {
            3: "Q. Where were you on the night of March 3?",
            4: "A. At the loading dock of the Harlan warehouse.",
            5: "Q. Who else was there?",
            6: "A. Only the night foreman, Dmitri Alsop.",
            12: "A. I left at about eleven.",
        },
    ),
    _numbered(
        46,
        {
            2: "Q. Did you see the forklift move?",
            3: "A. Yes, the forklift rolled into the racking by itself.",
            4: "The parking brake was never set that night.",
            20: "Q. Anything else?",
        },
    ),
]
# A transcript whose pages carry no line numbers.
KELL = ["Page 10\nQ. Did you sign the invoice?\nA. I signed it in April.\nQ. And then?"]


def _pdf_pages(texts: list[str]) -> list[str]:
    with pymupdf.open() as pdf:
        for text in texts:
            page = pdf.new_page(width=612, height=792)
            page.insert_text((72, 60), text, fontsize=9)
        data = pdf.tobytes()
    with pymupdf.open(stream=data, filetype="pdf") as pdf:
        return [page.get_text() for page in pdf]


def _index() -> PacketIndex:
    records: list[PageRecord] = []
    for document_id, (name, texts) in enumerate(
        [("voss-deposition.pdf", VOSS), ("kell-deposition.pdf", KELL)], 1
    ):
        for page, text in enumerate(_pdf_pages(texts), 1):
            records.append(
                PageRecord(
                    len(records) + 1,
                    document_id,
                    name,
                    page,
                    (),
                    text,
                    "text_layer",
                    None,
                    "client",
                )
            )
    return PacketIndex.build(records)


INDEX = _index()


def _cite(text: str) -> Finding:
    claims = extract_claims(text, bates_prefixes=["VOS"])
    return next(f for f in verify_text(text, claims, INDEX) if f.claim.kind == "record_cite")


@pytest.mark.parametrize(
    "cite",
    ["Voss Dep. 46:3-4", "(Voss Dep. 46:2-4)", "Voss Dep. at 46:3-4", "Voss Dep. 45:25-46:4"],
)
def test_testimony_on_the_cited_lines_is_supported(cite: str) -> None:
    finding = _cite(
        f"The forklift rolled into the racking with its parking brake never set. {cite}."
    )

    assert finding.status == "supported", finding.message
    assert finding.check == "record_cite_lines"


def test_a_quotation_on_other_lines_names_where_it_is() -> None:
    finding = _cite(
        'Voss testified that "the forklift rolled into the racking by itself." Voss Dep. 45:3-12.'
    )

    assert finding.status == "unsupported"
    assert "46:3" in finding.message and "not at 45:3-12" in finding.message


def test_testimony_on_other_lines_names_the_page_and_lines() -> None:
    finding = _cite(
        "Only the night foreman Dmitri Alsop was at the loading dock. Voss Dep. 46:2-4."
    )

    assert finding.status == "unsupported"
    assert "45:" in finding.message and "does not carry" in finding.message


@pytest.mark.parametrize(
    ("cite", "words"),
    [
        ("Voss Dep. 45:1-99999", "ends at line 25"),
        ("Voss Dep. 99:1-3", "has no page 99"),
        ("Voss Dep. 45:0", "is not on it"),
    ],
)
def test_lines_or_pages_the_transcript_lacks_are_unsupported(cite: str, words: str) -> None:
    finding = _cite(f"The forklift rolled into the racking. {cite}.")

    assert finding.status == "unsupported" and words in finding.message


def test_a_transcript_without_line_numbers_gets_a_clear_finding() -> None:
    finding = _cite("Kell signed the invoice in April. Kell Dep. 10:2-3.")

    assert finding.status == "needs_review"
    assert "has no numbered lines" in finding.message


def _stamped_index() -> PacketIndex:
    """The Voss transcript produced as an exhibit: each page stamped, the file not titled."""
    return PacketIndex.build(
        [
            PageRecord(k + 1, 1, "exhibit-12.pdf", k + 1, (f"VOS{45 + k:07d}",), text, "text_layer",
                       None, "client")
            for k, text in enumerate(_pdf_pages(VOSS))
        ]
    )  # fmt: skip


STAMPED = _stamped_index()


def _stamped(text: str) -> Finding:
    claims = extract_claims(text, bates_prefixes=["VOS"])
    return next(f for f in verify_text(text, claims, STAMPED) if f.claim.kind == "record_cite")


def test_a_bates_cite_with_page_and_lines_is_checked_by_its_lines() -> None:
    sentence = "The forklift rolled into the racking by itself"
    right = _stamped(f"{sentence} (VOS0000046 at 46:3-4).")
    wrong = _stamped(f"{sentence} (VOS0000046 at 46:20).")
    past = _stamped(f"{sentence} (VOS0000046 at 46:1-99999).")

    assert (right.status, right.check) == ("supported", "record_cite_lines")
    assert wrong.status == "unsupported" and "46:3" in wrong.message
    assert past.status == "unsupported" and "ends at line 25" in past.message


def test_a_bates_cite_to_the_wrong_page_stays_the_page_checks_finding() -> None:
    finding = _stamped("The forklift rolled into the racking by itself (VOS0000045 at 45:3-6).")

    assert finding.status == "unsupported" and finding.check != "record_cite_lines"
