"""The privilege log of a production (issue 25 req 1): the documents withheld from it, each with
date, author, recipients, the privilege claimed and a description, written out as CSV and PDF
into the volume's export (`production_services.production_export_build`).

`privilege_log_check` checks what a production's request says to withhold and
`privilege_log_write` writes and audits the rows (both called by
`production_services.production_create` inside its transaction); `privilege_log_files` reads a
production's log for its export, written by `log_csv` and `log_pdf` (pure functions of rows).
Any member of the case may withhold a document: withholding never sends anything out.
"""

import csv
import datetime
import io
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import pymupdf

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.models import Document, PrivilegeLogEntry, Production
from lexweb.errors import DomainError

MAX_DESCRIPTION = 2000
MAX_WITHHELD = 10_000  # privilege log rows one production request may write
MAX_AUTHOR = 200
MAX_RECIPIENTS = 1000
COLUMNS = ("Bates range or document", "Date", "Author", "Recipients", "Privilege", "Description")
# A spreadsheet runs a cell that starts with one of these as a formula (CSV injection).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@dataclass(frozen=True)
class Withholding:
    """A document kept out of the production, and what its privilege log row says."""

    document_id: int
    privilege: str
    description: str
    date: datetime.date | None = None
    author: str = ""
    recipients: str = ""


def _line(value: object, *, what: str, limit: int, required: bool = False) -> str:
    if not isinstance(value, str):
        raise DomainError(f"The privilege log's {what} must be text.")
    text = " ".join(value.split())
    if required and not text:
        raise DomainError(f"Give the privilege log's {what} for each withheld document.")
    if len(text) > limit:
        raise DomainError(f"The privilege log's {what} is at most {limit:,} characters.")
    if any(unicodedata.category(ch) in {"Cc", "Cf", "Cs", "Co"} for ch in text):
        raise DomainError(f"The privilege log's {what} holds a control or invisible character.")
    return text


def withholdings_check(
    *, documents: dict[int, Document], produced: set[int], withholdings: Sequence[Withholding]
) -> list[tuple[Document, Withholding]]:
    """Each withholding with its document, cleaned, or a DomainError saying what to change.
    `documents`: the case's documents named (others are unknown); `produced`: the ids the
    production takes (a document is produced or withheld, never both)."""
    rows: list[tuple[Document, Withholding]] = []
    seen: set[int] = set()
    for one in withholdings:
        document = documents.get(one.document_id)
        if document is None:
            raise DomainError(f"No document {one.document_id} in this case to withhold.")
        if one.document_id in produced:
            raise DomainError(
                f"{document.filename} (document {document.pk}) is both produced and withheld; "
                "take it out of the production's documents to withhold it."
            )
        if one.document_id in seen:
            raise DomainError(f"Document {one.document_id} is withheld twice.")
        seen.add(one.document_id)
        if one.privilege not in PrivilegeLogEntry.Privilege.values:
            choices = ", ".join(PrivilegeLogEntry.Privilege.values)
            raise DomainError(f"Unknown privilege {one.privilege!r:.40}; use one of {choices}.")
        cleaned = Withholding(
            document_id=one.document_id,
            privilege=one.privilege,
            description=_line(
                one.description, what="description", limit=MAX_DESCRIPTION, required=True
            ),
            date=one.date,
            author=_line(one.author, what="author", limit=MAX_AUTHOR),
            recipients=_line(one.recipients, what="recipients", limit=MAX_RECIPIENTS),
        )
        rows.append((document, cleaned))
    return rows


@dataclass(frozen=True)
class LogRow:
    document: str  # "memo.pdf (document 12)": withheld documents carry no Bates number
    date: str
    author: str
    recipients: str
    privilege: str
    description: str

    def cells(self) -> tuple[str, ...]:
        return (
            self.document,
            self.date,
            self.author,
            self.recipients,
            self.privilege,
            self.description,
        )


def log_rows(entries: Sequence[PrivilegeLogEntry]) -> list[LogRow]:
    """The log's rows, in the order the entries were written (`document` loaded with each)."""
    return [
        LogRow(
            document=f"{entry.document.filename} (document {entry.document_id})",
            date=entry.date.isoformat() if entry.date else "",
            author=entry.author,
            recipients=entry.recipients,
            privilege=entry.get_privilege_display(),
            description=entry.description,
        )
        for entry in entries
    ]


def _safe(cell: str) -> str:
    return "'" + cell if cell.startswith(_FORMULA_START) else cell


def log_csv(rows: Sequence[LogRow]) -> bytes:
    """The log as CSV in UTF-8 with a byte-order mark (Excel reads it as UTF-8), CRLF line
    ends, a header row; a cell a spreadsheet would run as a formula starts with a quote."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\r\n")
    writer.writerow(COLUMNS)
    for row in rows:
        writer.writerow([_safe(cell) for cell in row.cells()])
    return buffer.getvalue().encode("utf-8-sig")


def log_pdf(rows: Sequence[LogRow], *, title: str) -> bytes:
    """The log as a PDF (landscape A4): a title, then one block per withheld document, each on
    the page where it fits whole (a description is at most 2,000 characters: one page)."""
    width, height, margin = 842.0, 595.0, 48.0
    with pymupdf.open() as pdf:
        page = pdf.new_page(width=width, height=height)
        page.insert_text((margin, margin + 14), title, fontsize=14)
        y = margin + 36
        blocks = [
            "\n".join(
                [
                    f"{number}. {row.document}",
                    *(
                        f"{name}: {value or '-'}"
                        for name, value in zip(COLUMNS[1:], row.cells()[1:], strict=True)
                    ),
                ]
            )
            for number, row in enumerate(rows, start=1)
        ] or ["No document was withheld."]
        for block in blocks:
            rect = pymupdf.Rect(margin, y, width - margin, height - margin)
            left = page.insert_textbox(rect, block, fontsize=9)
            if left < 0:  # not enough room left on this page: the next one
                page = pdf.new_page(width=width, height=height)
                rect = pymupdf.Rect(margin, margin, width - margin, height - margin)
                left = page.insert_textbox(rect, block, fontsize=9)
            y = rect.y1 - max(left, 0) + 10
        return pdf.tobytes(garbage=3, deflate=True)


def privilege_log_check(
    *, case: Case, documents: list[Document], withheld: Sequence[Withholding]
) -> list[tuple[Document, Withholding]]:
    """Each withholding with its document of `case`, cleaned (see withholdings_check)."""
    if len(withheld) > MAX_WITHHELD:
        raise DomainError(f"A production's privilege log lists at most {MAX_WITHHELD:,} documents.")
    ids = [w.document_id for w in withheld if isinstance(w.document_id, int)]
    named = {d.pk: d for d in Document.objects.filter(case=case, pk__in=ids)}
    return withholdings_check(
        documents=named, produced={d.pk for d in documents}, withholdings=withheld
    )


def privilege_log_write(
    *, production: Production, actor: User, rows: list[tuple[Document, Withholding]]
) -> None:
    """The privilege log's rows, in the order given, each audited."""
    PrivilegeLogEntry.objects.bulk_create(
        PrivilegeLogEntry(
            production=production,
            document=document,
            order=order,
            date=one.date,
            author=one.author,
            recipients=one.recipients,
            privilege=one.privilege,
            description=one.description,
            entered_by=actor,
        )
        for order, (document, one) in enumerate(rows, start=1)
    )
    for document, one in rows:
        account_services.audit_record(
            actor=actor,
            action="production.document_withheld",
            case=production.case,
            target=document,  # the activity names the document; the production is in detail
            detail={
                "document": document.pk,
                "production": production.pk,
                "volume": production.volume,
                "privilege": one.privilege,
            },
        )


def privilege_log_files(production: Production) -> dict[str, bytes]:
    """The volume's privilege log as CSV and PDF, if any document was withheld from it."""
    entries = list(production.privilege_log.select_related("document").order_by("order"))
    if not entries:
        return {}
    rows = log_rows(entries)
    title = f"Privilege log of production {production.volume} ({production.case.number})"
    return {
        "PRIVILEGE_LOG.csv": log_csv(rows),
        "PRIVILEGE_LOG.pdf": log_pdf(rows, title=title),
    }
