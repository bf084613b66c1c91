"""A workbook's columns widened to their values before LibreOffice renders it (rendering.py),
so that the PDF shows every value whole (issue 25 req 6: "an Excel date cut to 2025-01-0").

A spreadsheet program shows a value in its column's width: text runs on into the next cell
only while that one is empty and is cut where it is not ("2025-01-0"), and a number or a date
that does not fit becomes "###". The PDF of a workbook is how people read it in lexweb, so
`fit_columns` widens, in the sanitised copy only (the original is never changed), every column
whose longest value is wider than the column: to that value's width in characters plus a
margin, at most MAX_WIDTH. Columns are never narrowed; nothing else of the workbook changes.

A value's width is read from the sheet's XML: shared and inline strings by their text (the
longest line), numbers by their digits (at most 11, as "General" shows them), dates by their
number format (a built-in date format or one whose code has date letters: its code's length).
"""

import re
import zipfile
from pathlib import Path

from lxml import etree

_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_NS = {"m": _MAIN}
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=True)
# The widest a column is made, in characters (a long paragraph in one cell stays cut).
MAX_WIDTH = 60.0
# Added to a value's width: the cell's padding and a wider letter or two.
MARGIN = 2.0
# Excel's built-in number formats that show a date or a time (ECMA-376 18.8.30), by id, with
# the width of what they show.
_BUILTIN_DATES = {14: 10, 15: 9, 16: 6, 17: 6, 18: 8, 19: 11, 20: 5, 21: 8, 22: 16}
_BUILTIN_DATES.update({45: 5, 46: 10, 47: 7})
_DATE_LETTERS = re.compile(r"[dmyhs]", re.IGNORECASE)
_QUOTED = re.compile(r'"[^"]*"|\\.|\[[^\]]*\]')
_CELL_COLUMN = re.compile(r"^([A-Z]{1,3})")


def fit_columns(path: Path) -> int:
    """Widen the columns of every worksheet of the workbook at `path` (rewritten in place) to
    their values (see the module docstring); how many columns were widened."""
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        strings = _shared_strings(archive, names)
        date_widths = _date_styles(archive, names)
        parts = {name: archive.read(name) for name in names}
        infos = {info.filename: info for info in archive.infolist()}
    widened = 0
    for name in names:
        if name.startswith("xl/worksheets/") and name.endswith(".xml"):
            changed, count = _fit_sheet(parts[name], strings, date_widths)
            if count:
                parts[name], widened = changed, widened + count
    if widened:
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
            for name in names:
                out.writestr(infos[name], parts[name])
    return widened


def _shared_strings(archive: zipfile.ZipFile, names: list[str]) -> list[int]:
    """The width of each shared string (its longest line), by index."""
    if "xl/sharedStrings.xml" not in names:
        return []
    root = etree.fromstring(archive.read("xl/sharedStrings.xml"), _PARSER)
    return [_text_width("".join(si.itertext())) for si in root.iterfind("m:si", _NS)]


def _date_styles(archive: zipfile.ZipFile, names: list[str]) -> dict[int, int]:
    """The cell styles (cellXfs index) whose number format shows a date or time: the width
    of what it shows."""
    if "xl/styles.xml" not in names:
        return {}
    root = etree.fromstring(archive.read("xl/styles.xml"), _PARSER)
    custom = {}
    for fmt in root.iterfind("m:numFmts/m:numFmt", _NS):
        code = _QUOTED.sub("", fmt.get("formatCode", ""))
        if _DATE_LETTERS.search(code.split(";")[0]):
            custom[int(fmt.get("numFmtId", "0"))] = len(code.split(";")[0])
    widths = {}
    for index, xf in enumerate(root.iterfind("m:cellXfs/m:xf", _NS)):
        fmt_id = int(xf.get("numFmtId", "0"))
        width = custom.get(fmt_id) or _BUILTIN_DATES.get(fmt_id)
        if width:
            widths[index] = width
    return widths


def _text_width(text: str) -> int:
    return max((len(line) for line in text.splitlines()), default=0)


def _column_number(letters: str) -> int:
    number = 0
    for letter in letters:
        number = number * 26 + ord(letter) - 64
    return number


def _value_width(cell: etree._Element, strings: list[int], date_widths: dict[int, int]) -> int:
    kind = cell.get("t", "n")
    value = cell.findtext("m:v", default="", namespaces=_NS)
    if kind == "s":
        index = int(value) if value.isdigit() else -1
        return strings[index] if 0 <= index < len(strings) else 0
    if kind == "inlineStr":
        found = cell.find("m:is", _NS)
        return _text_width("".join(found.itertext())) if found is not None else 0
    if kind in ("str", "e"):
        return _text_width(value)
    if kind == "b":
        return 5  # FALSE
    style = int(cell.get("s", "0")) if cell.get("s", "0").isdigit() else 0
    if style in date_widths and value:
        return date_widths[style]
    return min(len(value), 11)


def _fit_sheet(data: bytes, strings: list[int], date_widths: dict[int, int]) -> tuple[bytes, int]:
    """The sheet's XML with its columns widened, and how many were."""
    root = etree.fromstring(data, _PARSER)
    needed: dict[int, float] = {}
    for cell in root.iterfind("m:sheetData/m:row/m:c", _NS):
        match = _CELL_COLUMN.match(cell.get("r", ""))
        if match is None:
            continue
        width = _value_width(cell, strings, date_widths)
        if width:
            column = _column_number(match.group(1))
            needed[column] = max(needed.get(column, 0), min(width + MARGIN, MAX_WIDTH))
    if not needed:
        return data, 0
    default = _default_width(root)
    cols = root.find("m:cols", _NS)
    ranges: list[etree._Element] = list(cols) if cols is not None else []
    kept: list[etree._Element] = []
    widened = 0
    covered: set[int] = set()
    for element in ranges:
        low, high = int(element.get("min", "1")), int(element.get("max", "1"))
        current = float(element.get("width", default))
        inside = sorted(c for c in needed if low <= c <= high and needed[c] > current)
        start = low
        for column in inside:
            if start < column:
                kept.append(_col(element, start, column - 1))
            kept.append(_col(element, column, column, width=needed[column]))
            widened += 1
            start = column + 1
        if start <= high:
            kept.append(_col(element, start, high))
        covered.update(c for c in needed if low <= c <= high)
    for column in sorted(set(needed) - covered):
        if needed[column] > default:
            kept.append(_col(None, column, column, width=needed[column]))
            widened += 1
    if not widened:
        return data, 0
    if cols is None:
        cols = etree.Element(f"{{{_MAIN}}}cols")
        data_element = root.find("m:sheetData", _NS)
        assert data_element is not None  # noqa: S101  (it held the cells read above)
        data_element.addprevious(cols)
    for element in list(cols):
        cols.remove(element)
    for element in sorted(kept, key=lambda e: int(e.get("min", "1"))):
        cols.append(element)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True), widened


def _default_width(root: etree._Element) -> float:
    """The sheet's default column width in characters (Excel's 8.43 when it says none)."""
    format_element = root.find("m:sheetFormatPr", _NS)
    if format_element is not None:
        for name in ("defaultColWidth", "baseColWidth"):
            if format_element.get(name):
                try:
                    return float(format_element.get(name, ""))
                except ValueError:
                    break
    return 8.43


def _col(
    model: etree._Element | None, low: int, high: int, *, width: float | None = None
) -> etree._Element:
    element = etree.Element(f"{{{_MAIN}}}col")
    if model is not None:
        for key, value in model.attrib.items():
            element.set(key, value)
    element.set("min", str(low))
    element.set("max", str(high))
    if width is not None:
        element.set("width", f"{width:.2f}")
        element.set("customWidth", "1")
    elif model is None:
        element.set("width", "8.43")
    return element
