"""Native office files: Word (.docx, its XML parts read as a stream by docx_text), Excel
(.xlsx, openpyxl read-only) and Outlook (.msg, extract-msg). What a file is comes from its bytes:
a ZIP holding word/document.xml or xl/workbook.xml, an OLE2 compound file holding an Outlook
message's streams. Every refusal is a DomainError that names the problem for the person who
uploaded the file; the libraries' own exceptions never reach them.
"""

import datetime
import logging
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from xml.parsers import expat

import olefile
from django.conf import settings

from apps.documents import containers, docx_text
from lexweb.errors import DomainError

logger = logging.getLogger(__name__)

ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a ZIP with members; an empty ZIP
OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

WORD_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
SHEET_CONTENT_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
OUTLOOK_CONTENT_TYPE = "application/vnd.ms-outlook"
ZIP_CONTENT_TYPE = "application/zip"

ENCRYPTED_OFFICE = (
    "The Office file is password-protected (encrypted). Remove the password in Word or Excel "
    "(File, Info, Protect Document, Encrypt with Password) and upload it again."
)
LEGACY_OFFICE = (
    "Old binary Office files (.doc, .xls, .ppt) are not supported. Save it as .docx or .xlsx "
    "and upload it again."
)
_DAMAGED = {
    "word": "The Word document is damaged and cannot be read; open and save it again in Word.",
    "spreadsheet": (
        "The Excel workbook is damaged and cannot be read; open and save it again in Excel."
    ),
    "outlook": (
        "The Outlook message is damaged and cannot be read; save it again from Outlook (or as "
        ".eml) and upload it again."
    ),
}


@dataclass(frozen=True)
class Sniffed:
    kind: str  # Document.Kind value
    content_type: str
    page_count: int


@dataclass(frozen=True)
class Attachment:
    filename: str
    payload: bytes


@dataclass(frozen=True)
class ParsedEmail:
    text: str
    attachments: list[Attachment]


# --- What it is --------------------------------------------------------------------------------


def sniff_zip(path: Path) -> Sniffed:
    """A Word document, an Excel workbook or any other ZIP (an archive whose members become
    documents). Its size when unpacked is checked first (containers.zip_open), so no bomb is
    ever inflated. A damaged Word or Excel file is refused now rather than failing in the
    worker: a Word document is read through once (a stream, so it costs little); a
    workbook's XML parts are checked (_check_workbook), its cells read only by the worker."""
    with containers.zip_open(path) as archive:
        names = set(archive.namelist())
        if {"word/document.xml", "xl/workbook.xml"} & names:
            check_xml_size(archive)
        if "word/document.xml" in names:
            word_text(path)
            return Sniffed("word", WORD_CONTENT_TYPE, 1)
        if "xl/workbook.xml" in names:
            _check_workbook(archive)
            return Sniffed("spreadsheet", SHEET_CONTENT_TYPE, 1)
    return Sniffed("archive", ZIP_CONTENT_TYPE, 1)


def sniff_ole(path: Path) -> Sniffed:
    """An OLE2 compound file: an Outlook message is read; an encrypted Word/Excel file (its
    EncryptedPackage stream) and the old binary formats are refused, each with its reason."""
    try:
        with olefile.OleFileIO(str(path)) as ole:
            streams = {"/".join(entry) for entry in ole.listdir(streams=True, storages=True)}
    except Exception:  # olefile raises OSError and others for a broken compound file
        raise DomainError(
            "The file looks like an Office file but is damaged and cannot be read."
        ) from None
    if "EncryptedPackage" in streams or "EncryptionInfo" in streams:
        raise DomainError(ENCRYPTED_OFFICE)
    if any(name.startswith("__substg1.0_") for name in streams):
        parse_outlook(path)
        return Sniffed("outlook", OUTLOOK_CONTENT_TYPE, 1)
    raise DomainError(LEGACY_OFFICE)


# --- Word ------------------------------------------------------------------------------------


def word_text(path: Path) -> docx_text.WordText:
    """The text of a Word document as a person can see it: headers, the body with its tables,
    content controls, text boxes and tracked insertions, notes, comments and footers (see
    docx_text)."""
    return docx_text.word_text(path)


# --- Excel -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class SheetText:
    text: str
    # Cells past LEXWEB_MAX_SHEET_CELLS were not read: the page is flagged for review.
    truncated: bool


def workbook_text(path: Path) -> SheetText:
    """Each sheet under its name, one line per row with its non-empty cells as text separated
    by tabs (formulas by the value Excel last saved, not recomputed). At most
    LEXWEB_MAX_SHEET_CELLS cells are read, over all sheets; the text then says so."""
    budget = settings.LEXWEB_MAX_SHEET_CELLS
    lines: list[str] = []
    truncated = False
    handle = path.open("rb")  # a file, not a name: openpyxl refuses names without .xlsx
    try:
        import openpyxl  # here: 0.2 s to import, which every process would pay at start

        workbook = openpyxl.load_workbook(handle, read_only=True, data_only=True)
    except Exception:  # openpyxl raises KeyError, zipfile and lxml errors, ValueError...
        handle.close()
        raise DomainError(_DAMAGED["spreadsheet"]) from None
    try:
        for sheet in workbook.worksheets:
            lines.append(f"Sheet: {sheet.title}")
            for row in sheet.iter_rows(values_only=True):
                if budget - len(row) < 0:
                    truncated = True
                    break
                budget -= len(row)
                cells = [_cell(value) for value in row if value is not None and value != ""]
                if cells:
                    lines.append("\t".join(cells))
            if truncated:
                lines.append(
                    f"[Only the first {settings.LEXWEB_MAX_SHEET_CELLS:,} cells of this "
                    "workbook were read.]"
                )
                break
            lines.append("")
    except Exception:
        raise DomainError(_DAMAGED["spreadsheet"]) from None
    finally:
        workbook.close()
        handle.close()
    return SheetText("\n".join(lines).strip().replace("\x00", ""), truncated)


def check_xml_size(archive: zipfile.ZipFile) -> None:
    """LibreOffice holds a Word document's XML in memory, openpyxl a workbook's shared strings:
    their XML parts unpacked are bounded by LEXWEB_MAX_OFFICE_XML_BYTES."""
    limit = settings.LEXWEB_MAX_OFFICE_XML_BYTES
    size = sum(i.file_size for i in archive.infolist() if i.filename.endswith((".xml", ".rels")))
    if size > limit:
        raise DomainError(
            f"The Office file's text unpacks to {size:,} bytes of XML; the limit is "
            f"{limit:,}. Split it and upload the parts."
        )


def _check_workbook(archive: zipfile.ZipFile) -> None:
    """Check that every XML part of the workbook is well formed. expat with no handlers parses
    without calling back into Python (a million cells in about a second), reads no external
    entities and, since expat 2.4, stops entity-expansion bombs. Opening it with openpyxl is
    left to the worker: even read-only, openpyxl scans a sheet without a declared size whole
    (some 25 s for a million cells on a busy machine); a workbook that is well formed but
    still unreadable fails there, with the same message."""
    try:
        for name in archive.namelist():
            if name.endswith((".xml", ".rels")):
                parser = expat.ParserCreate()
                parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
                with archive.open(name) as part:
                    parser.ParseFile(part)
    except Exception:  # zipfile and expat errors alike
        raise DomainError(_DAMAGED["spreadsheet"]) from None


def _cell(value: object) -> str:
    if isinstance(value, datetime.datetime) and value.time() == datetime.time(0):
        return value.date().isoformat()
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return " ".join(str(value).split())


# --- Outlook ---------------------------------------------------------------------------------


def parse_outlook(path: Path) -> ParsedEmail:
    """An Outlook message as the .eml path reads one: From, To, Cc, Date, Subject, a blank
    line and the plain-text body; its attachments (files byte for byte, an attached message
    as a .msg of its own). Attachments that hold no bytes (links to the web) are left out."""
    try:
        import extract_msg  # here: 0.06 s to import, which every process would pay at start

        message = extract_msg.openMsg(str(path), strict=False)
    except Exception:  # extract-msg raises its own and olefile's errors for a broken file
        raise DomainError(_DAMAGED["outlook"]) from None
    try:
        header = message.header if hasattr(message, "header") else None
        date = getattr(message, "date", None) or (header["Date"] if header else None)
        fields = {
            "From": getattr(message, "sender", None),
            "To": getattr(message, "to", None),
            "Cc": getattr(message, "cc", None),
            "Date": date,
            "Subject": getattr(message, "subject", None),
        }
        header_lines = [f"{name}: {value}" for name, value in fields.items() if value]
        body = getattr(message, "body", None) or ""
        attachments = list(_outlook_attachments(message))
    except DomainError:
        raise
    except Exception:
        raise DomainError(_DAMAGED["outlook"]) from None
    finally:
        message.close()
    text = "\n".join(header_lines) + "\n\n" + str(body).replace("\r\n", "\n")
    return ParsedEmail(text=text.replace("\x00", ""), attachments=attachments)


def _outlook_attachments(message: object) -> Iterator[Attachment]:
    import extract_msg

    for index, attachment in enumerate(getattr(message, "attachments", []), start=1):
        name = (
            getattr(attachment, "longFilename", None)
            or getattr(attachment, "shortFilename", None)
            or f"attachment-{index}"
        )
        data = getattr(attachment, "data", None)
        if isinstance(data, bytes):
            if data:
                yield Attachment(name, data)
        elif isinstance(data, extract_msg.MSGFile):
            subject = getattr(data, "subject", None) or f"attachment-{index}"
            yield Attachment(
                name if str(name).lower().endswith(".msg") else f"{subject}.msg",
                data.exportBytes(),
            )
