"""A workbook's columns are widened to their values before LibreOffice renders it (issue 25
req 6: "an Excel date cut to 2025-01-0"): text beside a filled cell is no longer cut and a
date no longer shows as ###; columns are never narrowed and the original is never changed."""

import datetime
import shutil
import zipfile
from pathlib import Path

import openpyxl
import pymupdf
import pytest
from lxml import etree

from apps.documents import rendering, sheet_columns
from tests.documents.test_render import soffice, work

__all__ = ["soffice", "work"]

NS = {"m": "http://schemas.openxmlformats.org/spreadsheetml/2006/main"}


def _ledger(path: Path) -> Path:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["Date", "Item", "Amount"])
    sheet.append(["2025-01-05", "Rent for January, as invoiced", 1250.5])  # a date typed as text
    sheet.append([datetime.datetime(2025, 1, 15), "Fee", 10])  # noqa: DTZ001  (Excel's are naive)
    sheet.append([datetime.date(2025, 2, 3), "Call", 12345678901234])
    workbook.save(path)
    return path


def _widths(path: Path, sheet: str = "xl/worksheets/sheet1.xml") -> list[tuple[int, int, float]]:
    with zipfile.ZipFile(path) as archive:
        root = etree.fromstring(archive.read(sheet))
    return [
        (int(c.get("min")), int(c.get("max")), float(c.get("width", "0")))
        for c in root.iterfind("m:cols/m:col", NS)
    ]


def test_each_column_is_widened_to_its_longest_value(tmp_path: Path) -> None:
    path = _ledger(tmp_path / "ledger.xlsx")

    widened = sheet_columns.fit_columns(path)

    widths = {low: width for low, high, width in _widths(path) if low == high}
    assert widened == 3
    assert widths[1] >= len("2025-01-05") + sheet_columns.MARGIN
    assert widths[2] >= len("Rent for January, as invoiced")
    assert widths[3] >= 11  # a long number as "General" shows it
    values = list(openpyxl.load_workbook(path).active.iter_rows(values_only=True))
    assert values[1] == ("2025-01-05", "Rent for January, as invoiced", 1250.5)


def _with_cols(path: Path, cols: str) -> None:
    """Give the workbook's first sheet these <col> elements (as Excel writes a range)."""
    sheet = "xl/worksheets/sheet1.xml"
    with zipfile.ZipFile(path) as archive:
        parts = {info: archive.read(info) for info in archive.infolist()}
    with zipfile.ZipFile(path, "w") as out:
        for info, data in parts.items():
            if info.filename == sheet:
                data = data.replace(b"<sheetData", f"<cols>{cols}</cols><sheetData".encode(), 1)
            out.writestr(info, data)


def test_columns_are_never_narrowed_and_ranges_are_split_around_a_widened_one(
    tmp_path: Path,
) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["x", "a value wider than five", "y", "z", "w", "short"])
    workbook.save(tmp_path / "book.xlsx")
    _with_cols(
        tmp_path / "book.xlsx",
        '<col min="1" max="5" width="5" customWidth="1"/>'
        '<col min="6" max="6" width="40" customWidth="1"/>',
    )

    assert sheet_columns.fit_columns(tmp_path / "book.xlsx") == 1

    widths = _widths(tmp_path / "book.xlsx")
    assert [(low, high) for low, high, _ in widths] == [(1, 1), (2, 2), (3, 5), (6, 6)]
    by_column = {c: w for low, high, w in widths for c in range(low, high + 1)}
    assert by_column[2] >= len("a value wider than five")
    assert by_column[1] == by_column[3] == by_column[5] == 5  # untouched
    assert by_column[6] == 40  # never narrowed


def test_a_workbook_that_fits_is_left_as_it_is(tmp_path: Path) -> None:
    workbook = openpyxl.Workbook()
    sheet = workbook.active
    assert sheet is not None
    sheet.append(["a", 1])
    workbook.save(tmp_path / "small.xlsx")
    before = (tmp_path / "small.xlsx").read_bytes()

    assert sheet_columns.fit_columns(tmp_path / "small.xlsx") == 0
    assert (tmp_path / "small.xlsx").read_bytes() == before


@pytest.mark.slow
def test_the_rendered_pdf_shows_dates_whole_and_the_original_unchanged(
    soffice: str, tmp_path: Path, work: object
) -> None:
    original = _ledger(tmp_path / "ledger.xlsx")
    kept = tmp_path / "kept.xlsx"
    shutil.copy(original, kept)

    rendered = rendering.render("spreadsheet", original, work=work())  # type: ignore[operator]

    with pymupdf.open(rendered.path) as pdf:
        text = " ".join(page.get_text() for page in pdf)
    assert "2025-01-05" in text and "###" not in text
    assert "2025-01-15" in text and "2025-02-03" in text
    assert original.read_bytes() == kept.read_bytes()


@pytest.mark.parametrize("damage", ["styles", "strings"])
@pytest.mark.slow
def test_a_workbook_whose_parts_cannot_be_read_still_renders(
    soffice: str, tmp_path: Path, work: object, damage: str
) -> None:
    source = _ledger(tmp_path / "ledger.xlsx")
    broken = tmp_path / "broken.xlsx"
    part = "xl/styles.xml" if damage == "styles" else "xl/sharedStrings.xml"
    with zipfile.ZipFile(source) as archive, zipfile.ZipFile(broken, "w") as out:
        for info in archive.infolist():
            data = archive.read(info)
            out.writestr(info, data.replace(b"<", b"< ", 3) if info.filename == part else data)

    try:
        rendered = rendering.render("spreadsheet", broken, work=work())  # type: ignore[operator]
    except rendering.RenderFailedError:
        return  # LibreOffice itself refused it: refused with a reason, never a crash
    assert rendered.page_count >= 1
