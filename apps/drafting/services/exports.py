"""Export a draft version to DOCX or PDF (issue 12, requirement 7).

`version_export` is a service: a lawyer or staff member of the case exports a version whose
newest verification is done and has no open unsupported or contradicted finding (the rule of
approval, `apps.drafting.services.approval.version_approve`): before that it is refused with the
same 409s (`not_verified`, `unsupported_findings`), and a model's reply kept cut at its limit
never is (`version_truncated`).

1. The version's text and the draft's title are cleaned by the model-output rule
   (lexweb.text.model_text): whoever wrote them (a model, a paste, a row written some other
   way), a control character, a noncharacter or a lone surrogate would make python-docx refuse
   the document and a bidi override would show the rest of a line reversed in the PDF.
   The version's text is read as simple Markdown (`markdown_blocks`): `#` headings, bullet and
   numbered list items, and paragraphs (lines joined); `**`/`__` emphasis marks are dropped.
2. DOCX is written with python-docx (headings, "List Bullet"/"List Number", paragraphs); PDF
   with PyMuPDF's Story (the same blocks as escaped HTML, laid out on A4 pages). Both open
   with the case's caption (court, the case's title, "Case No. ...", the draft's title,
   centred: `Caption`) and carry "Case No. ... · Page N of M" at the foot of every page (the
   DOCX as PAGE and NUMPAGES fields, which Word fills in). Both are deterministic: no time or
   random id in the file, so exporting one version again gives the same bytes (and the
   registry the same artifact, never another copy).
3. The file is registered in the generated-artifact registry (kind `export`, linked to the
   version's own registered model output when it has one) before anything else, so the file
   can never come back in as evidence unflagged; then stored: a PDF as a system-generated
   document of the case (downloadable again from the documents API); a DOCX is answered and
   not kept (the registry holds its hash and text; the document store does not take Word
   files as evidence at all).
4. Audited ("draft.export": format, SHA-256, artifact, document).
"""

import hashlib
import html
import io
import re
import zipfile
from dataclasses import dataclass
from typing import Any

import docx
import pymupdf
from django.db import transaction
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.oxml import OxmlElement
from docx.oxml.ns import qn

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.documents import intake
from apps.documents import services as document_services
from apps.documents.models import Document
from apps.drafting import selectors as draft_selectors
from apps.drafting.models import DraftVersion
from apps.drafting.services import runs
from apps.drafting.services.approval import (
    NotVerified,
    UnsupportedFindings,
    version_complete_require,
)
from apps.evidence.models import GeneratedArtifact
from apps.evidence.services import registry
from apps.verification import selectors as verification_selectors
from apps.verification.models import Verification
from lexweb.errors import DomainError
from lexweb.text import model_text

FORMATS = {
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pdf": "application/pdf",
}

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*[-*+]\s+(.*)$")
_NUMBERED = re.compile(r"^\s*\d{1,9}[.)]\s+(.*)$")
_EMPHASIS = re.compile(r"(\*\*|__)(.+?)\1")


@dataclass(frozen=True)
class Block:
    kind: str  # "heading", "bullet", "numbered" or "paragraph"
    text: str
    level: int = 0  # a heading's level, 1 to 6


@dataclass(frozen=True)
class Caption:
    """What heads an exported draft: the court ("" when the case names none), the case's
    title and number, and the document's own title (the draft's, with its version)."""

    court: str
    case_title: str
    case_number: str
    title: str

    def lines(self) -> list[tuple[str, str]]:
        """(kind, text) from the top: "court", "case", "number", "title"."""
        lines = [("court", self.court.upper())] if self.court else []
        return [
            *lines,
            ("case", self.case_title),
            ("number", f"Case No. {self.case_number}"),
            ("title", self.title),
        ]

    def footer(self, page: int | None = None, pages: int | None = None) -> str:
        """The foot of a page ("Case No. 24-cv-01234 · Page 2 of 7"); without numbers, the
        words before the page number."""
        words = f"Case No. {self.case_number} · Page "
        return words if page is None else f"{words}{page} of {pages}"


@dataclass(frozen=True)
class Export:
    data: bytes
    filename: str
    media_type: str
    artifact: GeneratedArtifact
    document: Document | None  # the stored PDF; None for a DOCX (not kept)


def _plain(text: str) -> str:
    return _EMPHASIS.sub(r"\2", " ".join(text.split()))


def markdown_blocks(text: str) -> list[Block]:
    """The version's text as headings, list items and paragraphs, in order."""
    blocks: list[Block] = []
    paragraph: list[str] = []

    def close() -> None:
        if paragraph:
            blocks.append(Block("paragraph", _plain(" ".join(paragraph))))
            paragraph.clear()

    for line in text.splitlines():
        if not line.strip():
            close()
        elif heading := _HEADING.match(line):
            close()
            blocks.append(Block("heading", _plain(heading[2]), len(heading[1])))
        elif bullet := _BULLET.match(line):
            close()
            blocks.append(Block("bullet", _plain(bullet[1])))
        elif numbered := _NUMBERED.match(line):
            close()
            blocks.append(Block("numbered", _plain(numbered[1])))
        else:
            paragraph.append(line)
    close()
    return [block for block in blocks if block.text]


def docx_bytes(*, caption: Caption, blocks: list[Block]) -> bytes:
    document = docx.Document()
    document.core_properties.title = caption.title
    document.core_properties.author = "lexweb"
    for kind, text in caption.lines():
        line = document.add_paragraph()
        line.alignment = WD_ALIGN_PARAGRAPH.CENTER
        line.add_run(text).bold = kind in ("court", "title")
    footer = document.sections[0].footer.paragraphs[0]
    footer.alignment = WD_ALIGN_PARAGRAPH.CENTER
    footer.add_run(caption.footer())
    _docx_field(footer, "PAGE")
    footer.add_run(" of ")
    _docx_field(footer, "NUMPAGES")
    for block in blocks:
        if block.kind == "heading":
            document.add_heading(block.text, level=block.level)
        elif block.kind == "bullet":
            document.add_paragraph(block.text, style="List Bullet")
        elif block.kind == "numbered":
            document.add_paragraph(block.text, style="List Number")
        else:
            document.add_paragraph(block.text)
    out = io.BytesIO()
    document.save(out)
    return _zip_without_times(out.getvalue())


def _docx_field(paragraph: Any, instruction: str) -> None:
    """A Word field (PAGE, NUMPAGES) at the end of `paragraph`, showing "1" until Word
    updates it (python-docx has no API for fields)."""
    field = OxmlElement("w:fldSimple")
    field.set(qn("w:instr"), instruction)
    run = OxmlElement("w:r")
    shown = OxmlElement("w:t")
    shown.text = "1"
    run.append(shown)
    field.append(run)
    paragraph._p.append(field)


# Every member of an exported DOCX carries this time: the same version exported twice is the
# same bytes (one registry entry, never a flood of copies that differ only in a timestamp).
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def _zip_without_times(data: bytes) -> bytes:
    """The zip (python-docx's output) again, members in the same order and compression, each
    dated _ZIP_TIME instead of the moment of writing."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.infolist():
            fixed = zipfile.ZipInfo(member.filename, date_time=_ZIP_TIME)
            fixed.compress_type = member.compress_type
            fixed.external_attr = member.external_attr
            target.writestr(fixed, source.read(member))
    return out.getvalue()


def _html(blocks: list[Block], caption: Caption) -> str:
    parts = [
        f'<p class="caption caption--{kind}">{html.escape(text)}</p>'
        for kind, text in caption.lines()
    ]
    open_list = ""
    for block in blocks:
        wanted = {"bullet": "ul", "numbered": "ol"}.get(block.kind, "")
        if open_list and open_list != wanted:
            parts.append(f"</{open_list}>")
            open_list = ""
        if wanted and not open_list:
            parts.append(f"<{wanted}>")
            open_list = wanted
        text = html.escape(block.text)
        if block.kind == "heading":
            parts.append(f"<h{block.level}>{text}</h{block.level}>")
        elif wanted:
            parts.append(f"<li>{text}</li>")
        else:
            parts.append(f"<p>{text}</p>")
    if open_list:
        parts.append(f"</{open_list}>")
    return "".join(parts)


_PDF_CSS = (
    "* {font-family: serif; font-size: 11pt;} h1 {font-size: 16pt;} h2 {font-size: 14pt;}"
    " .caption {text-align: center; margin: 0;} .caption--court, .caption--title"
    " {font-weight: bold;} .caption--title {margin-top: 12pt; margin-bottom: 18pt;}"
)


def pdf_bytes(*, caption: Caption, blocks: list[Block]) -> bytes:
    title = caption.title
    out = io.BytesIO()
    page = pymupdf.paper_rect("a4")
    body = pymupdf.Rect(page.x0 + 72, page.y0 + 72, page.x1 - 72, page.y1 - 72)
    story = pymupdf.Story(html=_html(blocks, caption), user_css=_PDF_CSS)
    writer = pymupdf.DocumentWriter(out)
    more = True
    while more:
        device = writer.begin_page(page)
        more, _filled = story.place(body)
        story.draw(device)
        writer.end_page()
    writer.close()
    with pymupdf.open(stream=out.getvalue(), filetype="pdf") as pdf:
        for number, sheet in enumerate(pdf, start=1):
            foot = pymupdf.Rect(72, sheet.rect.y1 - 54, sheet.rect.x1 - 72, sheet.rect.y1 - 36)
            sheet.insert_textbox(
                foot,
                caption.footer(number, pdf.page_count),
                fontname="Times-Roman",
                fontsize=9,
                align=pymupdf.TEXT_ALIGN_CENTER,
            )
        pdf.set_metadata({"title": title, "creator": "lexweb", "producer": "lexweb"})
        # No new /ID (MuPDF makes one from the time by default): the same version exported
        # twice is the same bytes.
        return pdf.tobytes(garbage=3, deflate=True, no_new_id=True)


def _require_exportable(version: DraftVersion) -> Verification:
    """The approval rule: a complete version (never one cut at its limit) whose newest
    verification is done with no open blocking finding."""
    version_complete_require(version, doing="exported")
    latest = verification_selectors.verification_latest(version)
    if latest is None or latest.status != Verification.Status.DONE:
        state = "has not been verified" if latest is None else f"verification is {latest.status}"
        raise NotVerified(
            f"Version {version.number} {state}: verify it, and export once the verification "
            "is done with no unsupported finding open."
        )
    blocking = verification_selectors.blocking_count(latest)
    if blocking:
        raise UnsupportedFindings(
            f"Version {version.number} has {blocking} unsupported or contradicted finding"
            f"{'' if blocking == 1 else 's'} open: correct the draft, or have a lawyer override "
            "each with a reason, then export.",
            count=blocking,
        )
    return latest


def version_export(*, user: User, case_id: int, draft_id: int, number: int, format: str) -> Export:
    """Export version `number` of the draft as `format` ("docx" or "pdf"); see the module."""
    if format not in FORMATS:
        raise DomainError(f"Unknown format {format!r:.20}; one of: docx, pdf.")
    case = draft_selectors.case_for_user(user=user, case_id=case_id)
    draft = draft_selectors.draft_in_case(case=case, draft_id=draft_id)
    version = draft_selectors.version_in_draft(draft=draft, number=number)
    runs.require_member(user=user, case=case, doing="export a draft")
    verification = _require_exportable(version)
    title = model_text(f"{draft.title} v{version.number}")
    text = model_text(version.text)
    blocks = markdown_blocks(text)
    if not blocks:
        raise DomainError(f"Version {number} has no text to export.")
    caption = Caption(
        court=model_text(case.court),
        case_title=model_text(case.title),
        case_number=model_text(case.number),
        title=title,
    )
    maker = docx_bytes if format == "docx" else pdf_bytes
    data = maker(caption=caption, blocks=blocks)
    filename = intake.clean_filename(f"{title}.{format}")
    media_type = FORMATS[format]
    source = f"draft {draft.pk} v{version.number} export ({format})"
    exported_from = GeneratedArtifact.objects.filter(
        case=case, sha256=hashlib.sha256(version.text.encode("utf-8")).hexdigest()
    ).first()
    # Registered first, in its own transaction: it stays registered whatever happens next.
    with transaction.atomic():
        artifact = registry.artifact_register(
            data=data,
            text=text,
            kind=GeneratedArtifact.Kind.EXPORT,
            media_type=media_type,
            title=f"{title} ({format.upper()} export)",
            case=case,
            source=source,
            exported_from=exported_from,
            created_by=user,
            packet=draft.packet,
        )
    document = None
    if format == "pdf":
        document = document_services.document_create_generated(
            case=case,
            actor=user,
            filename=filename,
            data=data,
            text=text,
            media_type=media_type,
            source=source,
        )
    account_services.audit_record(
        actor=user,
        action="draft.export",
        case=case,
        target=version,
        detail={
            "draft": draft.pk,
            "version": version.number,
            "format": format,
            "sha256": artifact.sha256,
            "artifact": artifact.pk,
            "document": document.pk if document else None,
            "verification": verification.pk,
        },
    )
    return Export(data, filename, media_type, artifact, document)
