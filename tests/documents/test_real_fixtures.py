"""Requirement 8: real court documents from ../shared/fixtures/real go through the API and a real
worker; page counts, text sources and text are checked against PyMuPDF's own reading, and
scanned versions of real documents come back readable from Tesseract."""

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.conf import settings as django_settings
from django.test import Client

from apps.cases.models import Case
from apps.documents import storage
from apps.documents.models import Document, Page
from tests.documents.files import REAL, real, scanned_pdf, upload

pytestmark = pytest.mark.django_db(databases="__all__")

MIXED = "ca3_doc42_21-1298_mixed-text-image_p1.pdf"
TEXT_FILE = "bva_decision_A25084404_2025.txt"

# Phrases each fixture's text must contain, by page number (whitespace is normalised).
# The typographic apostrophes are the documents' own.
KNOWN_PHRASES: dict[str, dict[int, list[str]]] = {
    "azd_order_bard-ivc-mdl_15-02641.pdf": {
        1: ["Bard IVC Filters Products Liability Litigation", "DISTRICT OF ARIZONA"],
        3: ["Direct-Filed Cases to Be Transferred"],
    },
    "ca10_order_in-re-liebowitz_21-800.pdf": {1: ["RICHARD P. LIEBOWITZ", "TENTH CIRCUIT"]},
    "ca2_docketing-notice_17-3510.pdf": {
        1: ["Thurgood Marshall U.S. Courthouse", "Docket #: 17-3510"],
        2: ["My Appellate Filer Account"],
    },
    MIXED: {1: ["UNITED"]},
    "ca5_st-pierre-v-standard-ins_21-50498.pdf": {
        1: ["Vanessa St. Pierre", "Standard Insurance Company"],
        2: ["we AFFIRM"],
        9: ["estopped from denying the requested coverage"],
    },
    "ca6_clerk-letter_17-3994.pdf": {
        1: ["POTTER STEWART U.S. COURTHOUSE"],
        3: ["ISLAND CREEK COAL COMPANY"],
    },
    "ca7_order_in-re-fedex-ground_17-2400.pdf": {1: ["FEDEX GROUND PACKAGE SYSTEM"]},
    "cacd_civil-minutes_lewis-v-travertine_cv17-00016.pdf": {
        1: ["RYAN LEWIS v. TRAVERTINE", "CIVIL MINUTES - GENERAL"]
    },
    "cacd_criminal-minutes_redacted_p3of26.pdf": {
        1: ["REDACTED CRIMINAL MINUTES", "Government’s MIL #1"]  # noqa: RUF001
    },
    "cacd_judgment_regalado-v-sullivan_2-18-cv-10166.pdf": {1: ["DENNIS B. REGALADO", "JUDGMENT"]},
    "cacd_order_consumerinfo_8-16-cv-1261.pdf": {
        1: ["CONSUMERINFO.COM, INC. dba EXPERIAN"],
        2: ["Temporary Restraining Order"],
    },
    "mo_ctapp_ed_jagels-v-state_ED108783.pdf": {
        1: ["NICHOLE MARIE JAGELS", "Missouri Court of Appeals"],
        4: ["Jagels’ plea was knowing and voluntary"],  # noqa: RUF001,
    },
    TEXT_FILE: {
        1: [
            "Citation Nr: A25084404",
            "posttraumatic stress disorder (PTSD)",
            # 0xA7 bytes in a file that is not UTF-8: read as CP1252, they are section signs.
            "38 U.S.C. §§ 1155, 5107(b)",
        ]
    },
}


def flat(text: str) -> str:
    return " ".join(text.split())


def mupdf_pages(name: str) -> list[str]:
    with pymupdf.open(REAL / name) as document:
        return [page.get_text("text").strip() for page in document]


def post(client: Client, case: Case, *files: Any) -> dict[str, Any]:
    response = client.post(
        f"/api/v1/cases/{case.pk}/documents", {"files": list(files), "origin": "court"}
    )
    assert response.status_code == 201, response.content
    body: dict[str, Any] = response.json()
    return body


def assert_ocr_page(page: Page) -> None:
    """Text from Tesseract with its evidence: word boxes inside the rendered page and a
    confidence that is the mean of the words' confidences."""
    assert page.source == "ocr"
    assert page.ocr_dpi is not None
    assert django_settings.LEXWEB_OCR_MIN_DPI <= page.ocr_dpi <= django_settings.LEXWEB_OCR_DPI
    assert page.ocr_confidence is not None and 0 < page.ocr_confidence <= 100
    assert page.words, "OCR pages keep their word boxes"
    with pymupdf.open(storage.blob_path(page.document.blob.sha256)) as original:
        rect = original[page.number - 1].rect
    width_px = rect.width * page.ocr_dpi / 72 + 1
    height_px = rect.height * page.ocr_dpi / 72 + 1
    for word in page.words:
        text, left, top, width, height, confidence = word
        assert isinstance(text, str) and text.strip()
        assert all(isinstance(v, int) for v in (left, top, width, height))
        assert left >= 0 and left + width <= width_px
        assert top >= 0 and top + height <= height_px
        assert 0 <= confidence <= 100
    mean = sum(float(w[5]) for w in page.words) / len(page.words)
    assert page.ocr_confidence == pytest.approx(mean, abs=0.1)
    ocr_words = " ".join(str(w[0]) for w in page.words)
    assert flat(page.text) == flat(ocr_words)


def assert_text_layer_page(page: Page, expected_text: str) -> None:
    """Read from the PDF's text layer, and never sent to Tesseract."""
    assert page.source == "text_layer"
    assert page.text == expected_text
    assert page.ocr_confidence is None
    assert page.words == []
    assert page.ocr_dpi is None
    assert page.needs_review is False


@pytest.mark.slow
def test_every_real_fixture_is_ingested_with_the_right_pages_sources_and_text(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    names = sorted(p.name for p in REAL.iterdir() if p.suffix in {".pdf", ".txt"})
    assert len(names) == 13 and set(KNOWN_PHRASES) == set(names)

    body = post(lawyer_api, case, *(upload(name, real(name)) for name in names))
    assert body["created"] == len(names) and body["errors"] == 0

    run_jobs()

    documents = {d.filename: d for d in Document.objects.prefetch_related("pages")}
    assert set(documents) == set(names)
    for name in names:
        document = documents[name]
        pages = sorted(document.pages.all(), key=lambda p: p.number)
        assert document.status == "ready", (name, document.error)
        assert document.origin == "court"
        if name.endswith(".pdf"):
            expected = mupdf_pages(name)
            assert (document.kind, document.content_type) == ("pdf", "application/pdf")
            assert document.page_count == document.pages_done == len(pages) == len(expected)
            assert [p.number for p in pages] == list(range(1, len(expected) + 1))
            for page, text in zip(pages, expected, strict=True):
                if name == MIXED:
                    assert_ocr_page(page)
                else:
                    assert_text_layer_page(page, text)
        for number, phrases in KNOWN_PHRASES[name].items():
            text = flat(pages[number - 1].text)
            for phrase in phrases:
                assert phrase in text, (name, number, phrase)


@pytest.mark.slow
def test_mixed_page_with_an_ecf_header_over_an_image_is_ocred_not_taken_from_its_header(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    with pymupdf.open(REAL / MIXED) as original:
        header = original[0].get_text("text")
        (image,) = original[0].get_image_info()
    # Only the ECF stamp is text; the word "UNITED" exists only as pixels of the image.
    assert "UNITED" not in header

    post(lawyer_api, case, upload(MIXED, real(MIXED)))
    run_jobs()

    page = Page.objects.get()
    assert_ocr_page(page)
    assert "UNITED" in page.text
    assert "Document: 42" in flat(page.text)  # the header is read too, from the pixels
    scale = page.ocr_dpi / 72 if page.ocr_dpi else 0
    left, top, right, bottom = (v * scale for v in image["bbox"])
    (united,) = [w for w in page.words if w[0] == "UNITED"]
    assert left - 5 <= float(united[1]) and float(united[1]) + float(united[3]) <= right + 5
    assert top - 5 <= float(united[2]) and float(united[2]) + float(united[4]) <= bottom + 5
    assert page.needs_review is (
        (page.ocr_confidence or 0) < django_settings.LEXWEB_OCR_REVIEW_CONFIDENCE
    )


def test_damaged_text_file_is_one_page_read_from_the_file(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    post(lawyer_api, case, upload(TEXT_FILE, real(TEXT_FILE)))
    run_jobs()

    document = Document.objects.get()
    assert (document.kind, document.page_count, document.status) == ("text", 1, "ready")
    page = document.pages.get()
    assert page.source == "text_file"
    assert page.text == real(TEXT_FILE).decode("cp1252").strip()
    assert page.text.count("§") == real(TEXT_FILE).count(b"\xa7") == 32
    # The section signs are recovered, so nothing was lost and nothing needs a second look.
    assert "\ufffd" not in page.text
    assert page.needs_review is False
    assert page.ocr_confidence is None and page.words == []


# --- Scanned versions of real documents ---------------------------------------------------------

# (fixture, pages to scan, scan dpi, phrases by page) - OCR text, compared case-insensitively.
SCANS = [
    (
        "cacd_civil-minutes_lewis-v-travertine_cv17-00016.pdf",
        1,
        200,
        {1: ["civil minutes", "travertine", "central district of california"]},
    ),
    (
        "ca6_clerk-letter_17-3994.pdf",
        2,
        200,
        {1: ["potter stewart", "cincinnati, ohio"], 2: ["appearance of counsel"]},
    ),
    (
        "mo_ctapp_ed_jagels-v-state_ED108783.pdf",
        1,
        150,
        {1: ["court of appeals", "eastern district", "nichole marie jagels"]},
    ),
]


@pytest.mark.slow
def test_scanned_real_documents_come_back_readable_from_ocr(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    files = [
        upload(f"scan-{name}", scanned_pdf(name, pages=pages, dpi=dpi))
        for name, pages, dpi, _ in SCANS
    ]
    for name, pages, dpi, _ in SCANS:
        with pymupdf.open(stream=scanned_pdf(name, pages=pages, dpi=dpi)) as scan:
            assert all(not page.get_text().strip() for page in scan)  # no text layer at all

    post(lawyer_api, case, *files)
    run_jobs()

    for name, page_count, _dpi, phrases in SCANS:
        document = Document.objects.get(filename=f"scan-{name}")
        assert (document.status, document.page_count, document.pages_done) == (
            "ready",
            page_count,
            page_count,
        )
        scanned = list(document.pages.order_by("number"))
        for page in scanned:
            assert_ocr_page(page)
            assert page.ocr_confidence is not None and page.ocr_confidence > 70, name
            assert page.needs_review is False
        for number, wanted in phrases.items():
            text = flat(scanned[number - 1].text).lower()
            for phrase in wanted:
                assert phrase in text, (name, number, phrase, text[:300])


@pytest.mark.slow
def test_only_the_scanned_page_of_a_part_scanned_pdf_goes_to_ocr(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    """A scanned page followed by two text pages: OCR for the first only, none for the rest."""
    text_source = "ca2_docketing-notice_17-3510.pdf"
    with (
        pymupdf.open() as combined,
        pymupdf.open(
            stream=scanned_pdf("ca7_order_in-re-fedex-ground_17-2400.pdf", dpi=200)
        ) as scan,
        pymupdf.open(REAL / text_source) as text_pdf,
    ):
        combined.insert_pdf(scan)
        combined.insert_pdf(text_pdf)
        data = combined.tobytes()

    post(lawyer_api, case, upload("bundle.pdf", data))
    run_jobs()

    document = Document.objects.get()
    assert (document.status, document.page_count, document.pages_done) == ("ready", 3, 3)
    first, second, third = document.pages.order_by("number")
    assert_ocr_page(first)
    assert re.search(r"fedex\s+ground\s+package\s+system", first.text.lower())
    expected = mupdf_pages(text_source)
    assert_text_layer_page(second, expected[0])
    assert_text_layer_page(third, expected[1])


@pytest.mark.slow
def test_search_finds_real_documents_by_their_ocr_and_text_layer_words(
    lawyer_api: Client, case: Case, blob_root: Path, run_jobs: Callable[[], None]
) -> None:
    scan_name = "scan-travertine.pdf"
    post(
        lawyer_api,
        case,
        upload(scan_name, scanned_pdf("cacd_civil-minutes_lewis-v-travertine_cv17-00016.pdf")),
        upload("st-pierre.pdf", real("ca5_st-pierre-v-standard-ins_21-50498.pdf")),
    )
    run_jobs()

    from_ocr = lawyer_api.get(f"/api/v1/cases/{case.pk}/search", {"q": "Travertine"}).json()
    from_layer = lawyer_api.get(f"/api/v1/cases/{case.pk}/search", {"q": '"requested coverage"'})

    assert [(h["filename"], h["page"]) for h in from_ocr["items"]] == [(scan_name, 1)]
    assert "<mark>" in from_ocr["items"][0]["snippet"]
    hits = [(h["filename"], h["page"]) for h in from_layer.json()["items"]]
    assert ("st-pierre.pdf", 9) in hits
