"""Searchable productions (issue 13 req. 5): the OCR text of scanned pages rides in the stamped
volume as an invisible text layer at the words' boxes; text-layer pages are left as they are.

End to end with real Tesseract on scans of real court documents; the stamping function's bad
input (malformed, oversized, non-Latin word lists) directly on real PDFs.
"""

from collections.abc import Callable
from pathlib import Path

import pymupdf
import pytest
from django.test import Client

from apps.cases.models import Case
from apps.documents import stamping, storage
from apps.documents.models import Document, Page, Production
from tests.documents.files import REAL, real, scanned_pdf, upload

JSON = "application/json"
SCAN_SOURCE = "ca10_order_in-re-liebowitz_21-800.pdf"
TEXT_SOURCE = "ca2_docketing-notice_17-3510.pdf"
INVISIBLE = 3  # get_texttrace()'s "type" of text drawn in render mode 3


def _volume(production_id: int) -> pymupdf.Document:
    production = Production.objects.get(pk=production_id)
    assert production.status == Production.Status.READY, production.error
    assert production.output is not None
    return pymupdf.open(storage.blob_path(production.output.sha256))


def _upload(client: Client, case: Case, run_jobs: Callable[[], None], *files: object) -> list[int]:
    response = client.post(
        f"/api/v1/cases/{case.pk}/documents", {"files": list(files), "origin": "client"}
    )
    assert response.status_code == 201, response.content
    run_jobs()
    return [r["document"]["id"] for r in response.json()["results"]]


def _produce(client: Client, case: Case, run_jobs: Callable[[], None], ids: list[int]) -> int:
    response = client.post(
        f"/api/v1/cases/{case.pk}/productions",
        {"volume": "VOL001", "prefix": "ACME", "document_ids": ids, "legend": "CONFIDENTIAL"},
        content_type=JSON,
    )
    assert response.status_code == 201, response.content
    run_jobs()
    return int(response.json()["id"])


def _invisible_fonts(page: pymupdf.Page) -> set[str]:
    return {span["font"] for span in page.get_texttrace() if span["type"] == INVISIBLE}


@pytest.mark.django_db(databases="__all__")
@pytest.mark.slow
def test_ocr_pages_carry_their_ocr_words_invisibly_and_text_pages_are_unchanged(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    scan_id, text_id = _upload(
        lawyer_api,
        case,
        run_jobs,
        upload("scan.pdf", scanned_pdf(SCAN_SOURCE)),
        upload("notice.pdf", real(TEXT_SOURCE)),
    )
    scan_page = Page.objects.get(document_id=scan_id, number=1)
    assert scan_page.source == Page.Source.OCR and scan_page.ocr_dpi
    tokens = [str(w[0]) for w in scan_page.words]
    assert "Liebowitz" in " ".join(tokens)  # Tesseract read the scan
    # The scan as uploaded has no text at all.
    with pymupdf.open(storage.blob_path(Document.objects.get(pk=scan_id).blob.sha256)) as scan:
        assert scan[0].get_text().strip() == ""

    production_id = _produce(lawyer_api, case, run_jobs, [scan_id, text_id])

    with _volume(production_id) as volume, pymupdf.open(REAL / TEXT_SOURCE) as notice:
        scanned = volume[0]
        text = scanned.get_text()
        # Every OCR word is there, in reading order, and the stamp too (visible).
        found = [w[4] for w in scanned.get_text("words") if w[4] in set(tokens)]
        assert [t for t in tokens if t in found] == tokens
        assert "ACME000001" in text and "CONFIDENTIAL" in text
        assert _invisible_fonts(scanned) == {"GlyphLessFont"}
        visible = {s["font"] for s in scanned.get_texttrace() if s["type"] != INVISIBLE}
        assert visible == {"Helvetica"}  # only the stamps are drawn
        # Each word at its OCR box (pixels at the OCR dpi, in points here).
        scale = 72.0 / scan_page.ocr_dpi
        word = next(w for w in scan_page.words if len(str(w[0])) >= 6)
        expected = pymupdf.Rect(
            word[1] * scale,
            word[2] * scale,
            (word[1] + word[3]) * scale,
            (word[2] + word[4]) * scale,
        )
        hits = scanned.search_for(str(word[0]))
        assert any(abs(hit - expected) < 1.0 for hit in hits), (hits, expected)

        # The text-layer pages: no invisible layer, their own text as before, plus the stamps.
        for k in range(notice.page_count):
            page = volume[1 + k]
            assert _invisible_fonts(page) == set()
            assert notice[k].get_text() in page.get_text()


@pytest.mark.django_db(databases="__all__")
@pytest.mark.slow
def test_a_shrunk_scanned_page_carries_its_words_where_the_shrunk_image_shows_them(
    lawyer_api: Client, case: Case, run_jobs: Callable[[], None]
) -> None:
    with pymupdf.open() as crowded:
        page = crowded.new_page()
        page.insert_text((72, 100), "Top of the page", fontsize=14)
        page.insert_text((380, page.rect.height - 22), "SCANNED FOOTER WORDS", fontsize=14)
        pixmap = page.get_pixmap(dpi=200, colorspace=pymupdf.csGRAY)
        with pymupdf.open() as scan:
            target = scan.new_page(width=page.rect.width, height=page.rect.height)
            target.insert_image(target.rect, stream=pixmap.tobytes("png"))
            data = scan.tobytes()
    (document_id,) = _upload(lawyer_api, case, run_jobs, upload("scan.pdf", data))

    production_id = _produce(lawyer_api, case, run_jobs, [document_id])

    with _volume(production_id) as volume:
        stamped = volume[0]
        image = pymupdf.Rect(stamped.get_image_info()[0]["bbox"])
        stamp = stamped.search_for("ACME000001")[0]
        assert image.y1 < stamp.y0  # shrunk, as before
        footer = stamped.search_for("FOOTER")
        top = stamped.search_for("Top")
        assert footer and top
        # The words moved with the image: inside it, the footer above the stamp's band.
        assert all(image.contains(hit) for hit in footer + top)
        assert footer[0].y1 < stamp.y0


# --- The stamping function's bad input -----------------------------------------------------


def _stamp_one(
    tmp_path: Path, layer: stamping.OcrLayer | None, legend: str = "CONFIDENTIAL"
) -> pymupdf.Document:
    source = stamping.Source(
        path=REAL / SCAN_SOURCE,
        kind="pdf",
        first_number=7,
        known_boxes={0: []},
        ocr_layers={0: layer} if layer is not None else {},
    )
    out = tmp_path / "volume.pdf"
    settings = stamping.StampSettings(prefix="BAD", digits=6, legend=legend)
    assert stamping.stamp_volume([source], settings, out) == 1
    return pymupdf.open(out)


def test_malformed_words_are_skipped_and_the_good_ones_kept(tmp_path: Path) -> None:
    words: list[object] = [
        ["Accepted", 100, 100, 200, 40, 95.0],
        ["", 100, 200, 200, 40, 90],  # empty
        ["   ", 100, 200, 200, 40, 90],  # blank
        ["Negative", 100, 300, -5, 40, 90],
        ["Zero", 100, 300, 50, 0, 90],
        ["NotANumber", "left", 300, 50, 40, 90],
        ["Infinite", float("inf"), 300, 50, 40, 90],
        ["NaN", 100, float("nan"), 50, 40, 90],
        [12345, 100, 300, 50, 40, 90],  # not text
        ["Short"],  # no box
        "not a list",
        None,
        ["Control\x00\x07chars", 100, 400, 300, 40, 90],
        ["Kept", 400, 100, 100, 40, 90],
    ]
    with _stamp_one(tmp_path, stamping.OcrLayer(dpi=200, words=words)) as volume:
        text = volume[0].get_text()
        for good in ("Accepted", "Kept", "Controlchars", "BAD000007"):
            assert good in text
        for bad in ("Negative", "Zero", "NotANumber", "Infinite", "NaN", "12345", "Short"):
            assert bad not in text


@pytest.mark.parametrize("dpi", [0, -72, float("nan"), float("inf"), None, "200"])
def test_a_layer_with_an_unusable_dpi_is_left_out(tmp_path: Path, dpi: object) -> None:
    layer = stamping.OcrLayer(dpi=dpi, words=[["Hidden", 100, 100, 200, 40, 95]])  # type: ignore[arg-type]
    with _stamp_one(tmp_path, layer) as volume:
        text = volume[0].get_text()
        assert "BAD000007" in text
        # "200" (a string) is a usable number; the others are not.
        assert ("Hidden" in text) == (dpi == "200")


def test_a_page_without_words_gets_no_layer_and_no_font(tmp_path: Path) -> None:
    with _stamp_one(tmp_path, stamping.OcrLayer(dpi=300, words=[])) as volume:
        assert _invisible_fonts(volume[0]) == set()
        assert "GlyphLessFont" not in {f[3] for f in volume[0].get_fonts()}
        assert "BAD000007" in volume[0].get_text()


def test_a_huge_word_list_is_cut_at_the_budget(tmp_path: Path) -> None:
    count = stamping.MAX_LAYER_WORDS + 500
    words = [[f"w{n}", (n % 80) * 60, (n // 80) * 12, 40, 10, 90] for n in range(count)]
    with _stamp_one(tmp_path, stamping.OcrLayer(dpi=600, words=words)) as volume:
        found = {w[4] for w in volume[0].get_text("words") if w[4].startswith("w")}
    assert f"w{stamping.MAX_LAYER_WORDS - 1}" in found
    assert f"w{stamping.MAX_LAYER_WORDS}" not in found
    assert f"w{count - 1}" not in found


def test_non_latin_ocr_text_extracts_as_it_was_read(tmp_path: Path) -> None:
    words = [
        ["Привет", 100, 100, 200, 40, 90],  # Cyrillic
        ["日本語の文書", 100, 200, 300, 40, 90],  # CJK
        ["مرحبا", 100, 300, 200, 40, 90],  # Arabic
        ["Ελληνικά", 100, 400, 250, 40, 90],  # Greek
        ["naïve—café", 100, 500, 300, 40, 90],  # Latin with accents and a dash
        ["emoji😀here", 100, 600, 300, 40, 90],  # outside the BMP: U+FFFD
    ]
    with _stamp_one(tmp_path, stamping.OcrLayer(dpi=200, words=words)) as volume:
        text = volume[0].get_text()
    for word in ("Привет", "日本語の文書", "Ελληνικά", "naïve—café", "emoji\ufffdhere"):
        assert word in text
    assert "مرحبا" in text or "ابحرم" in text  # right-to-left: extraction order may differ


def test_a_legend_outside_windows_1252_is_still_written(tmp_path: Path) -> None:
    with _stamp_one(tmp_path, None, legend="機密 — Конфиденциально") as volume:
        text = volume[0].get_text()
    assert "BAD000007" in text
    assert "機密 — Конфиденциально" in text


def test_a_legend_with_pdf_string_delimiters_is_written_as_typed(tmp_path: Path) -> None:
    legend = r"CONFIDENTIAL (AEO) \ 50% ) ( \\"
    with _stamp_one(tmp_path, None, legend=legend) as volume:
        assert legend in volume[0].get_text()


def test_a_rotated_page_is_stamped_upright_where_the_reader_sees_its_corner(
    tmp_path: Path,
) -> None:
    with pymupdf.open(REAL / TEXT_SOURCE) as original:
        original[0].set_rotation(90)
        rotated = tmp_path / "rotated.pdf"
        original.save(rotated)
    out = tmp_path / "volume.pdf"
    layer = stamping.OcrLayer(dpi=72, words=[["Sideways", 100, 100, 120, 20, 90]])
    source = stamping.Source(path=rotated, kind="pdf", first_number=1, ocr_layers={0: layer})
    stamping.stamp_volume([source], stamping.StampSettings(prefix="ROT", digits=6), out)
    with pymupdf.open(out) as volume:
        page = volume[0]
        assert page.rotation == 90
        shown = page.rotation_matrix  # search hits are in the unrotated page's space
        (stamp,) = (hit * shown for hit in page.search_for("ROT000001"))
        # Bottom right of the page as shown, within the margin.
        assert page.rect.width - 60 < stamp.x1 <= page.rect.width - 17
        assert page.rect.height - 40 < stamp.y1 <= page.rect.height - 12
        # Upright: the label reads left to right as shown (its box wider than tall).
        assert stamp.width > stamp.height
        # The OCR words (read from the page as shown) are where the reader sees them.
        (hit,) = (hit * shown for hit in page.search_for("Sideways"))
        assert abs(hit - pymupdf.Rect(100, 100, 220, 120)) < 1.0
