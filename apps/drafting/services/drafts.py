"""Writes for drafts: create a draft (with its first version), add a version.

Every function checks membership of the case itself (`case_get_for_user`: NotFound for
non-members, the same answer as for a missing case); lawyers and staff on the case may write.

1. The content is read into text (`version_content`): pasted text, or the bytes of an upload
   (UTF-8 Markdown or plain text, or a DOCX read with python-docx). Empty,
   oversized (LEXWEB_MAX_DRAFT_BYTES), undecodable text and control characters are refused
   with a message that says what to do.
2. A draft names a frozen packet of its own case: another case's packet is "no such packet",
   an editable one is refused (freeze it first).
3. Versions are numbered 1, 2, ... under a lock of the draft row, so two writers serialise;
   a version never changes afterwards (only its approval is recorded, once).
4. A version a person pasted or uploaded is firm work product and is not registered as
   generated; the drafting pipeline registers versions a model wrote
   (`apps.evidence.services.registry.artifact_register`) and marks them `written_by=model`.
"""

import hashlib
import io
import zipfile
from dataclasses import dataclass
from pathlib import PurePath

import docx
from django.conf import settings
from django.db import transaction
from django.db.models import Max
from docx.table import Table
from lxml import etree

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.drafting.models import Draft, DraftVersion
from apps.evidence.models import Packet
from lexweb.errors import DomainError, NotFound

MAX_TITLE = 200
_MAX_ID = 2**63 - 1
_MARKDOWN_SUFFIXES = {".md", ".markdown"}
_PLAIN_SUFFIXES = {".txt", ".text", ""}
_DOCX_SUFFIXES = {".docx"}
# What a DOCX (a ZIP file) starts with.
_ZIP_MAGIC = b"PK\x03\x04"


class PacketNotFrozen(DomainError):
    """The packet named for a draft is still editable (400)."""

    code = "packet_not_frozen"


@dataclass(frozen=True)
class VersionContent:
    """A version's text as read, and the bytes it came from (their digest and size).
    `truncated_tokens`: set only by the pipeline, for a model's reply still cut at its limit
    (DraftVersion.truncated_tokens)."""

    text: str
    media_type: str
    filename: str
    sha256: str
    size: int
    truncated_tokens: int | None = None


def _check_text(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    for index, char in enumerate(text):
        code = ord(char)
        if (code < 32 and char not in "\t\n\r\f") or code == 0x7F or 0xD800 <= code <= 0xDFFF:
            raise DomainError(
                f"The draft contains a control character (U+{code:04X}) at character {index}; "
                "remove it (or save the file as plain UTF-8 text) and send it again."
            )
    if not text.strip():
        raise DomainError("The draft is empty: paste or upload its text.")
    return text


def _check_size(size: int) -> None:
    limit = settings.LEXWEB_MAX_DRAFT_BYTES
    if size > limit:
        raise DomainError(
            f"The draft is {size:,} bytes; the limit is {limit:,} bytes. Split it into "
            "several drafts."
        )


def pasted_content(
    *, text: str, media_type: str = DraftVersion.MediaType.MARKDOWN
) -> VersionContent:
    """Content from text a person pasted (Markdown or plain text)."""
    if media_type not in (DraftVersion.MediaType.MARKDOWN, DraftVersion.MediaType.PLAIN):
        raise DomainError("Pasted text is Markdown or plain text; upload a DOCX as a file.")
    data = text.encode("utf-8", errors="surrogatepass")
    _check_size(len(data))
    return VersionContent(
        text=_check_text(text),
        media_type=media_type,
        filename="",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
    )


def uploaded_content(*, data: bytes, filename: str) -> VersionContent:
    """Content from an uploaded file: Markdown or plain text in UTF-8 (by its name's suffix;
    no suffix is plain text), or a DOCX (its text, read with python-docx)."""
    _check_size(len(data))
    name = PurePath(filename.replace("\\", "/")).name[:255]
    suffix = PurePath(name).suffix.lower()
    digest = hashlib.sha256(data).hexdigest()
    if suffix in _DOCX_SUFFIXES or data.startswith(_ZIP_MAGIC):
        return VersionContent(
            _docx_text(data), DraftVersion.MediaType.DOCX, name, digest, len(data)
        )
    if suffix not in _MARKDOWN_SUFFIXES | _PLAIN_SUFFIXES:
        raise DomainError(
            f"“{name}” is not a draft lexweb can read: upload Markdown (.md), plain text (.txt) "
            "or a Word document (.docx), or paste the text."
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DomainError(
            f"“{name}” is not UTF-8 text (byte {exc.start} cannot be read); save it as UTF-8 "
            "and upload it again."
        ) from None
    kinds = DraftVersion.MediaType
    media = kinds.MARKDOWN if suffix in _MARKDOWN_SUFFIXES else kinds.PLAIN
    return VersionContent(_check_text(text), media, name, digest, len(data))


def _docx_text(data: bytes) -> str:
    """The text of a Word document: its paragraphs and tables in document order (a table row's
    cells separated by tabs), paragraphs separated by blank lines, then its footnotes and
    endnotes, each as "[n] text"."""
    _check_unpacked(data)
    try:
        document = docx.Document(io.BytesIO(data))
        notes = _notes(document)
    except Exception:  # python-docx and lxml raise many kinds for a broken file
        raise DomainError(
            "The file could not be read as a Word document; save it again as .docx, or "
            "upload it as Markdown or plain text."
        ) from None
    parts: list[str] = []
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            parts.extend("\t".join(cell.text for cell in row.cells) for row in block.rows)
        else:
            parts.append(block.text)
    return _check_text("\n\n".join(parts + notes))


# A DOCX is a zip: python-docx unpacks its parts in memory, so what they hold unpacked is
# bounded before it is opened (a few hundred kB of zip can unpack to gigabytes).
DOCX_UNPACKED_FACTOR = 20
DOCX_MAX_PARTS = 1000


def _check_unpacked(data: bytes) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        raise DomainError(
            "The file could not be read as a Word document; save it again as .docx, or "
            "upload it as Markdown or plain text."
        ) from None
    limit = DOCX_UNPACKED_FACTOR * settings.LEXWEB_MAX_DRAFT_BYTES
    unpacked = sum(member.file_size for member in members)
    if len(members) > DOCX_MAX_PARTS or unpacked > limit:
        raise DomainError(
            f"The Word document unpacks to {unpacked:,} bytes in {len(members):,} parts; the "
            f"limit is {limit:,} bytes in {DOCX_MAX_PARTS:,} parts. Save its text as Markdown "
            "or plain text and upload that."
        )


_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_NOTE_PARTS = {"/word/footnotes.xml": "footnote", "/word/endnotes.xml": "endnote"}
# Word's own separator "notes" are layout, not text.
_NOT_NOTES = {"separator", "continuationSeparator", "continuationNotice"}


def _notes(document: "docx.document.Document") -> list[str]:
    """Footnotes and endnotes (python-docx does not read them): from their XML parts, with a
    parser that resolves no entities and fetches nothing."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    notes = []
    for part in document.part.package.iter_parts():
        tag = _NOTE_PARTS.get(str(part.partname))
        if tag is None:
            continue
        root = etree.fromstring(part.blob, parser)
        for note in root.iter(f"{_W}{tag}"):
            if note.get(f"{_W}type") in _NOT_NOTES:
                continue
            text = " ".join(
                "".join(t.text or "" for t in paragraph.iter(f"{_W}t"))
                for paragraph in note.iter(f"{_W}p")
            ).strip()
            if text:
                notes.append(f"[{note.get(f'{_W}id')}] {text}")
    return notes


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= _MAX_ID


def _case(*, user: User, case_id: int) -> Case:
    if not _is_id(case_id):
        raise NotFound(f"No case {case_id}.")
    return case_selectors.case_get_for_user(user=user, case_id=case_id)


def _frozen_packet(*, case: Case, packet_id: int) -> Packet:
    packet = Packet.objects.filter(pk=packet_id, case=case).first() if _is_id(packet_id) else None
    if packet is None:
        raise NotFound(f"No packet {packet_id} in this case.")
    if packet.status != Packet.Status.FROZEN:
        raise PacketNotFrozen(
            f"“{packet.title}” version {packet.version} is not frozen: a draft is checked "
            "against a frozen packet only. Freeze it, then create the draft."
        )
    return packet


def _title(title: str) -> str:
    title = " ".join(title.split())
    if not title:
        raise DomainError("Give the draft a title.")
    if len(title) > MAX_TITLE:
        raise DomainError(f"The title is {len(title)} characters; at most {MAX_TITLE}.")
    return title


@transaction.atomic
def draft_create(
    *,
    user: User,
    case_id: int,
    title: str,
    kind: str,
    packet_id: int,
    content: VersionContent,
    written_by: str = DraftVersion.WrittenBy.PERSON,
) -> Draft:
    """A new draft of the case, checked against `packet_id` (a frozen packet of the same
    case), with `content` as its version 1. Audited ("draft.create")."""
    case = _case(user=user, case_id=case_id)
    if kind not in Draft.Kind.values:
        raise DomainError(f"Unknown kind {kind!r:.40}; one of: {', '.join(Draft.Kind.values)}.")
    packet = _frozen_packet(case=case, packet_id=packet_id)
    draft = Draft.objects.create(
        case=case, title=_title(title), kind=kind, packet=packet, created_by=user
    )
    version = _write_version(
        draft=draft, number=1, user=user, content=content, written_by=written_by
    )
    account_services.audit_record(
        actor=user,
        action="draft.create",
        case=case,
        target=draft,
        detail={"packet": packet.pk, "version": version.number, "sha256": version.sha256},
    )
    return draft


@transaction.atomic
def version_add(
    *,
    user: User,
    case_id: int,
    draft_id: int,
    content: VersionContent,
    written_by: str = DraftVersion.WrittenBy.PERSON,
) -> DraftVersion:
    """The draft's next version (numbered under a lock of the draft row). Audited
    ("draft.version_add")."""
    case = _case(user=user, case_id=case_id)
    drafts = Draft.objects.select_for_update().filter(case=case)
    draft = drafts.filter(pk=draft_id).first() if _is_id(draft_id) else None
    if draft is None:
        raise NotFound(f"No draft {draft_id} in this case.")
    top = DraftVersion.objects.filter(draft=draft).aggregate(top=Max("number"))["top"] or 0
    version = _write_version(
        draft=draft, number=top + 1, user=user, content=content, written_by=written_by
    )
    account_services.audit_record(
        actor=user,
        action="draft.version_add",
        case=case,
        target=version,
        detail={"draft": draft.pk, "version": version.number, "sha256": version.sha256},
    )
    return version


def _write_version(
    *, draft: Draft, number: int, user: User, content: VersionContent, written_by: str
) -> DraftVersion:
    if written_by not in DraftVersion.WrittenBy.values:
        raise DomainError(f"Unknown author kind {written_by!r:.40}.")
    return DraftVersion.objects.create(
        draft=draft,
        number=number,
        text=content.text,
        media_type=content.media_type,
        filename=content.filename,
        sha256=content.sha256,
        size=content.size,
        written_by=written_by,
        created_by=user,
        truncated_tokens=content.truncated_tokens,
    )
