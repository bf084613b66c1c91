"""Condensed transcripts (issue 28 requirement 7): a PDF page printing four transcript pages,
two by two ("min-U-script"), each under its own "Page 45" header with its lines numbered 1 to
25, is read as those four pages, so "Voss Dep. 46:3-4" names lines 3-4 of the mini-page headed
"Page 46" wherever it sits on the sheet. The sheets are real PDFs made with pymupdf, uploaded,
read, frozen and verified by the verification job, in the two orders a text layer gives a sheet:
mini-page after mini-page ("blocks"), or row by row across the sheet ("rows": line 1 of page 45,
line 1 of page 46, line 2 of page 45, ...)."""

import io
from dataclasses import replace

import pymupdf
import pytest

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import services as document_services
from apps.documents.models import Document
from apps.evidence.models import FrozenPage
from apps.verification import pages, services
from apps.verification.checks import Finding as Checked
from apps.verification.checks import verify_text
from apps.verification.claims import extract_claims
from apps.verification.index import PacketIndex
from apps.verification.models import Finding
from apps.verification.sheets import sheet_pages
from tests.drafting.makers import draft_of, packet_of

pytestmark = pytest.mark.django_db

# Transcript pages (number -> line -> text); each sheet prints four, two by two.
TESTIMONY: dict[int, dict[int, str]] = {
    45: {
        3: "Q. Where were you on the night of March 3?",
        4: "A. At the loading dock of the Harlan warehouse.",
        5: "Q. Who else was there?",
        6: "A. Only the night foreman, Dmitri Alsop.",
    },
    46: {
        2: "Q. Did you see the forklift move?",
        3: "A. Yes, the forklift rolled into the",
        4: "racking by itself. The parking brake was",
        5: "never set that night.",
    },
    47: {10: "A. The invoice from Tarrant Freight was", 11: "paid in cash on the twelfth of May."},
    48: {20: "A. I reported the spill to Coastline", 21: "Environmental the next morning."},
    50: {7: "A. The crane operator, Priya Venkataraman, signed the logbook."},
}
LAYOUTS = ["blocks", "rows"]
# Where each mini-page of a sheet is printed (its header's left and baseline, in points).
CORNERS = [(30, 40), (410, 40), (30, 320), (410, 320)]
LEADING = 10


def _mini(
    page: int, *, header: bool = True, numbered: bool = True, under: bool = False
) -> list[str]:
    """A mini-page's printed lines: its header, then lines 1-25 with their numbers (`under`:
    the header printed under the lines)."""
    lines = TESTIMONY.get(page, {})
    body = [
        f"{n} {lines.get(n, '')}".strip() if numbered else lines.get(n, "") for n in range(1, 26)
    ]
    head = f"Page {page}" if header else ""
    return [*body, head] if under else [head, *body]


def _sheets_pdf(sheets: list[list[list[str]]], layout: str) -> bytes:
    """A landscape PDF, one sheet a page, each sheet's four mini-pages two by two."""
    with pymupdf.open() as pdf:
        for minis in sheets:
            page = pdf.new_page(width=792, height=612)
            if layout == "blocks":
                for (x, y), mini in zip(CORNERS, minis, strict=True):
                    for k, line in enumerate(mini):
                        if line:
                            page.insert_text((x, y + LEADING * k), line, fontsize=7)
            else:  # a row of two mini-pages at a time, line by line across the sheet
                for row in (0, 2):
                    for k in range(26):
                        for at in (row, row + 1):
                            (x, y), line = CORNERS[at], minis[at][k]
                            if line:
                                page.insert_text((x, y + LEADING * k), line, fontsize=7)
            page.insert_text((700, 600), f"VOS{len(pdf):07d}", fontsize=7)
        return pdf.tobytes()


def _read(case: Case, user: User, data: bytes, filename: str) -> Document:
    outcome = document_services.document_upload(
        case=case, uploaded_by=user, filename=filename, source=io.BytesIO(data), origin="client"
    )
    assert outcome.document is not None, outcome.error
    document_services.document_extract_text(document_id=outcome.document.pk)
    return Document.objects.get(pk=outcome.document.pk)


def _verified(
    case: Case, user: User, text: str, sheets: list[list[list[str]]], layout: str
) -> dict[str, Finding]:
    """The verification job's findings on `text` against a packet of the Voss transcript
    printed as `sheets`, by each claim's text."""
    document = _read(case, user, _sheets_pdf(sheets, layout), "voss-deposition.pdf")
    packet = packet_of(case=case, user=user, documents=[document])
    draft = draft_of(case=case, user=user, packet=packet, text=text)
    verification = services.verification_request(
        user=user, case_id=case.pk, draft_id=draft.pk, number=1
    )
    services.verification_run(verification_id=verification.pk)
    verification.refresh_from_db()
    assert verification.error == "", verification.error
    return {f.text: f for f in Finding.objects.filter(verification=verification)}


def _sheets(*pages: list[str]) -> list[list[list[str]]]:
    return [list(pages[k : k + 4]) for k in range(0, len(pages), 4)]


VOSS = _sheets(*(_mini(n) for n in range(45, 53)))


def _cite(findings: dict[str, Finding], cite: str) -> Finding:
    return next(f for text, f in findings.items() if cite in text)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_text_layer_of_a_sheet_is_read_as_its_four_transcript_pages(
    lawyer: User, case: Case, layout: str
) -> None:
    document = _read(case, lawyer, _sheets_pdf(VOSS, layout), "voss-deposition.pdf")
    packet = packet_of(case=case, user=lawyer, documents=[document])
    first, second = FrozenPage.objects.filter(packet=packet).order_by("position")

    minis = sheet_pages(first.text)

    assert minis is not None and [m.number for m in minis] == [45, 46, 47, 48]
    assert [m.number for m in sheet_pages(second.text) or []] == [49, 50, 51, 52]
    by_number = {m.number: m for m in minis}
    line = by_number[47].lines[10]
    assert line.number == 11 and first.text[line.span[0] : line.span[1]] == TESTIMONY[47][11]
    assert all([ln.number for ln in m.lines] == list(range(1, 26)) for m in minis)
    if layout == "rows":  # the text layer interleaves the mini-pages side by side
        assert first.text.index("2 Q. Did you see") < first.text.index("3 Q. Where were you")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_cites_to_the_right_lines_of_any_mini_page_are_supported(
    lawyer: User, case: Case, layout: str
) -> None:
    text = (
        "Voss was at the loading dock with the night foreman Dmitri Alsop. Voss Dep. 45:4-6. "
        "The forklift rolled into the racking with its parking brake never set. "
        "Voss Dep. 46:3-5. "
        "Tarrant Freight's invoice was paid in cash on the twelfth of May. Voss Dep. 47:10-11. "
        "Voss reported the spill to Coastline Environmental the next morning. "
        "Voss Dep. 48:20-21. "
        "The crane operator Priya Venkataraman signed the logbook. Voss Dep. 50:7."
    )

    findings = _verified(case, lawyer, text, VOSS, layout)

    for cite, page in [("45:4-6", 1), ("46:3-5", 1), ("47:10-11", 1), ("48:20-21", 1), ("50:7", 2)]:
        finding = _cite(findings, cite)
        assert finding.status == Finding.Status.SUPPORTED, (cite, finding.message)
        assert finding.check_name == "record_cite_lines", (cite, finding.check_name)
        assert finding.page is not None and finding.page.page_number == page


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_quotation_across_line_numbers_matches_on_its_mini_page(
    lawyer: User, case: Case, layout: str
) -> None:
    text = (
        'Voss said "the forklift rolled into the racking by itself." Voss Dep. 46:3-4. '
        'He added that the invoice "was paid in cash on the twelfth of May." '
        "Voss Dep. 47:10-11."
    )

    findings = _verified(case, lawyer, text, VOSS, layout)

    for cite in ("46:3-4", "47:10-11"):
        finding = _cite(findings, cite)
        assert finding.status == Finding.Status.SUPPORTED, (cite, finding.message)
        assert "carries the quotation" in finding.message
    quotes = [f for f in findings.values() if f.kind == Finding.Kind.QUOTE]
    assert quotes and all(f.status == Finding.Status.SUPPORTED for f in quotes), [
        (f.text, f.message) for f in quotes
    ]
    # The quotation's words are boxed on the sheet's top-right mini-page (page 46).
    forklift = next(f for f in quotes if "forklift" in f.text)
    assert forklift.boxes and any(410 <= box[0] < 792 and box[1] < 320 for box in forklift.boxes)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_wrong_lines_or_pages_name_where_the_testimony_is(
    lawyer: User, case: Case, layout: str
) -> None:
    text = (
        'Voss said "the forklift rolled into the racking by itself." Voss Dep. 45:3-4. '
        "Only the night foreman Dmitri Alsop was at the loading dock. Voss Dep. 48:3-6. "
        "Tarrant Freight's invoice was paid in cash on the twelfth of May. Voss Dep. 47:20-21. "
        "The crane operator Priya Venkataraman signed the logbook. Voss Dep. 60:7."
    )

    findings = _verified(case, lawyer, text, VOSS, layout)

    quoted = _cite(findings, "45:3-4")
    assert quoted.status == Finding.Status.UNSUPPORTED
    assert "the quotation is at 46:3-4" in quoted.message and "not at 45:3-4" in quoted.message
    moved = _cite(findings, "48:3-6")
    assert moved.status == Finding.Status.UNSUPPORTED
    assert "45:3-6 does" in moved.message, moved.message
    lines = _cite(findings, "47:20-21")
    assert lines.status == Finding.Status.UNSUPPORTED
    assert "47:10-11 does" in lines.message, lines.message
    missing = _cite(findings, "60:7")
    assert missing.status == Finding.Status.UNSUPPORTED
    assert "has no page 60" in missing.message and "45-52" in missing.message


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_sheet_missing_a_mini_pages_header_gets_a_clear_finding(
    lawyer: User, case: Case, layout: str
) -> None:
    sheets = _sheets(_mini(45), _mini(46), _mini(47, header=False), _mini(48))
    text = (
        "Tarrant Freight's invoice was paid in cash on the twelfth of May. Voss Dep. 47:10-11. "
        "Voss was at the loading dock with the night foreman Dmitri Alsop. Voss Dep. 45:4-6."
    )

    findings = _verified(case, lawyer, text, sheets, layout)

    finding = _cite(findings, "47:10-11")
    assert finding.status == Finding.Status.NEEDS_REVIEW, finding.message
    assert "under no page number" in finding.message and "cannot be located" in finding.message
    if layout == "blocks":  # the other mini-pages are still read by line
        assert _cite(findings, "45:4-6").status == Finding.Status.SUPPORTED


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_mini_page_without_line_numbers_gets_a_clear_finding(
    lawyer: User, case: Case, layout: str
) -> None:
    sheets = _sheets(_mini(45), _mini(46), _mini(47, numbered=False), _mini(48))
    text = (
        "Tarrant Freight's invoice was paid in cash on the twelfth of May. Voss Dep. 47:10-11. "
        "Voss was at the loading dock with the night foreman Dmitri Alsop. Voss Dep. 45:4-6."
    )

    findings = _verified(case, lawyer, text, sheets, layout)

    finding = _cite(findings, "47:10-11")
    assert finding.status == Finding.Status.NEEDS_REVIEW, finding.message
    assert "page 47 of voss-deposition.pdf (on its page 1) has no numbered lines" in (
        finding.message
    )
    assert _cite(findings, "45:4-6").status == Finding.Status.SUPPORTED


def _stamped(frozen: list[FrozenPage]) -> PacketIndex:
    """The frozen sheets as produced: each sheet stamped VOS0000001 on."""
    return PacketIndex.build(
        [replace(pages.page_record(page), bates=(f"VOS{page.position:07d}",)) for page in frozen]
    )


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_bates_cite_of_the_sheet_with_page_and_lines_is_checked_on_that_mini_page(
    lawyer: User, case: Case, layout: str
) -> None:
    document = _read(case, lawyer, _sheets_pdf(VOSS, layout), "exhibit-12.pdf")
    packet = packet_of(case=case, user=lawyer, documents=[document])
    index = _stamped(list(FrozenPage.objects.filter(packet=packet).order_by("position")))

    def check(text: str) -> Checked:
        claims = extract_claims(text, bates_prefixes=["VOS"])
        return next(f for f in verify_text(text, claims, index) if f.claim.kind == "record_cite")

    sentence = "The crane operator Priya Venkataraman signed the logbook"
    right = check(f"{sentence} (VOS0000002 at 50:7).")
    wrong_lines = check(f"{sentence} (VOS0000002 at 50:20-21).")
    wrong_sheet = check(f"{sentence} (VOS0000001 at 46:7).")

    assert (right.status, right.check) == ("supported", "record_cite_lines"), right.message
    assert wrong_lines.status == "unsupported" and "50:6-7 does" in wrong_lines.message
    assert wrong_sheet.status == "unsupported" and "VOS0000002" in wrong_sheet.message
    assert "the testimony is at 50:7" in wrong_sheet.message, wrong_sheet.message


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_bates_page_and_lines_of_a_sheet_are_read_on_the_mini_page_they_fit(
    lawyer: User, case: Case, layout: str
) -> None:
    """ "VOS0000002:7" names line 7 of one of the four transcript pages the sheet stamped
    VOS0000002 prints: the one whose line 7 carries the sentence."""
    document = _read(case, lawyer, _sheets_pdf(VOSS, layout), "exhibit-12.pdf")
    packet = packet_of(case=case, user=lawyer, documents=[document])
    index = _stamped(list(FrozenPage.objects.filter(packet=packet).order_by("position")))

    def check(text: str) -> Checked:
        claims = extract_claims(text, bates_prefixes=["VOS"])
        return next(f for f in verify_text(text, claims, index) if f.claim.kind == "record_cite")

    crane = check("The crane operator Priya Venkataraman signed the logbook (VOS0000002:7).")
    invoice = check(
        "The Tarrant Freight invoice was paid in cash on the twelfth of May (VOS0000001:10-11)."
    )
    elsewhere = check(
        "The Tarrant Freight invoice was paid in cash on the twelfth of May (VOS0000001:20-21)."
    )

    assert (crane.status, crane.check) == ("supported", "record_cite_lines"), crane.message
    assert "50:7 of exhibit-12.pdf" in crane.message
    assert invoice.status == "supported" and "47:10-11" in invoice.message, invoice.message
    assert elsewhere.status == "unsupported" and "47:" in elsewhere.message, elsewhere.message


@pytest.mark.parametrize("layout", LAYOUTS)
def test_headers_printed_under_their_mini_pages_are_read_too(
    lawyer: User, case: Case, layout: str
) -> None:
    sheets = _sheets(*(_mini(n, under=True) for n in range(45, 53)))
    text = (
        "Tarrant Freight's invoice was paid in cash on the twelfth of May. Voss Dep. 47:10-11. "
        "The crane operator Priya Venkataraman signed the logbook. Voss Dep. 49:7."
    )

    findings = _verified(case, lawyer, text, sheets, layout)

    assert _cite(findings, "47:10-11").status == Finding.Status.SUPPORTED
    wrong = _cite(findings, "49:7")
    assert wrong.status == Finding.Status.UNSUPPORTED and "50:" in wrong.message, wrong.message
