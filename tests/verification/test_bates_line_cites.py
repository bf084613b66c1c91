"""Transcript lines cited by a page's Bates number (issue 28 requirement 7): "ACME000123:4-9"
names lines 4-9 of the transcript page stamped ACME000123, as "Voss Dep. 45:4-9" names lines
of page 45; the lines are checked like a deposition's, and where the Bates page is wrong the
page check's finding names the page and lines where the testimony is. The transcript is the
one of tests/verification/test_transcript_line_cites.py (pages 45-46 stamped VOS0000045-46),
printed to a PDF and read back."""

from apps.verification.checks import Finding, verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex, PageRecord
from tests.verification.test_transcript_line_cites import STAMPED

FORKLIFT = "The forklift rolled into the racking by itself"


def _finding(text: str, index: PacketIndex = STAMPED) -> Finding:
    claims = extract_claims(text, bates_prefixes=["VOS"])
    return next(f for f in verify_text(text, claims, index) if f.claim.kind == "record_cite")


def test_a_bates_page_and_lines_on_the_testimony_is_supported_by_its_lines() -> None:
    finding = _finding(f"{FORKLIFT} (VOS0000046:3-4).")

    assert (finding.status, finding.check) == ("supported", "record_cite_lines")
    assert "46:3-4" in finding.message


def test_a_bates_page_with_other_lines_names_the_lines_of_the_testimony() -> None:
    finding = _finding(f"{FORKLIFT} (VOS0000046:20).")

    assert (finding.status, finding.check) == ("unsupported", "record_cite_lines")
    assert "46:20" in finding.message and "46:3 does" in finding.message


def test_a_wrong_bates_page_names_the_page_and_lines_where_the_testimony_is() -> None:
    for cite in ("VOS0000045:3-6", "VOS0000045 at 45:3-6"):
        finding = _finding(f"{FORKLIFT} ({cite}).")

        assert finding.status == "unsupported" and finding.check == "record_cite_page"
        assert "VOS0000046 does" in finding.message
        assert "the testimony is at 46:" in finding.message, finding.message
        assert "of exhibit-12.pdf" in finding.message


def test_the_other_way_round_names_the_first_pages_lines() -> None:
    finding = _finding(
        "Only the night foreman Dmitri Alsop was at the loading dock (VOS0000046:2-4)."
    )

    assert finding.status == "unsupported"
    assert "the testimony is at 45:4-6" in finding.message


def test_a_quotation_on_another_bates_page_names_its_line() -> None:
    finding = _finding(
        'Voss testified that "the forklift rolled into the racking by itself." (VOS0000045:3-12).'
    )

    assert finding.status == "unsupported"
    assert "the quotation is at 46:3 of exhibit-12.pdf" in finding.message


def test_lines_of_a_page_without_numbered_lines_get_a_clear_finding() -> None:
    index = PacketIndex.build(
        [
            PageRecord(1, 1, "letter.pdf", 1, ("VOS0000001",),
                       "The forklift rolled into the racking by itself.", "text_layer", None,
                       "client"),
        ]
    )  # fmt: skip

    finding = _finding(f"{FORKLIFT} (VOS0000001:3-4).", index)

    assert finding.status == "needs_review"
    assert "has no numbered lines" in finding.message
