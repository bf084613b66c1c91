"""What an uploaded file really is, decided by its bytes (never by its name), and whether we can
read it. Every refusal is a DomainError whose message names the problem for the person who
uploaded the file."""

import email
import email.policy
from email.message import EmailMessage
from pathlib import Path

import pymupdf
from django.conf import settings
from PIL import Image, UnidentifiedImageError

from apps.documents import extraction, formats

# Defined with the formats that make them, and used from here as before.
from apps.documents.formats import Attachment as Attachment
from apps.documents.formats import ParsedEmail as ParsedEmail
from apps.documents.formats import Sniffed as Sniffed
from lexweb.errors import DomainError
from lexweb.text import one_line, printable

MAX_FILENAME = 200
_EMAIL_HEADERS = (
    b"from:",
    b"to:",
    b"subject:",
    b"date:",
    b"message-id:",
    b"received:",
    b"mime-version:",
)


def clean_line(raw: str, limit: int) -> str:
    """One line of free text typed by a person (e.g. a custodian): printable, single-spaced,
    at most `limit` characters."""
    return one_line(raw, limit)


def clean_filename(raw: str) -> str:
    """A display name that is safe anywhere: no path, no control characters, bounded length.

    The name is only ever shown; files are stored by their hash, so no name reaches a path.
    """
    name = printable((raw or "").replace("\\", "/").rsplit("/", 1)[-1]).strip(" .")
    if not name:
        return "upload"
    if len(name) > MAX_FILENAME:
        stem, dot, ext = name.rpartition(".")
        tail = "…" + ("." + ext[:16] if dot and stem else "")
        name = name[: MAX_FILENAME - len(tail)].rstrip() + tail
    return name


def sniff(path: Path, filename: str) -> Sniffed:
    """Identify and check the file at `path`. Raises DomainError if it cannot be ingested."""
    with path.open("rb") as handle:
        head = handle.read(4096)
    if not head:
        raise DomainError("The file is empty.")
    if head.startswith(b"%PDF-") or b"%PDF-" in head[:1024]:
        return Sniffed("pdf", "application/pdf", _pdf_pages(path))
    if head.startswith((b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")):
        content_type, frames = _image_frames(path)
        return Sniffed("image", content_type, frames)
    if head.startswith(formats.ZIP_MAGIC):
        return formats.sniff_zip(path)
    if head.startswith(formats.OLE_MAGIC):
        return formats.sniff_ole(path)
    if b"\x00" in head:
        raise DomainError(
            "This kind of file is not supported (PDF, TIFF, PNG, JPEG, plain text, e-mail "
            "(.eml, .msg), Word (.docx), Excel (.xlsx) and ZIP are)."
        )
    if _looks_like_email(head, filename):
        return Sniffed("email", "message/rfc822", 1)
    return Sniffed("text", "text/plain", 1)


_PDF_DAMAGED = "The PDF is damaged or truncated and cannot be opened."


def _pdf_pages(path: Path) -> int:
    try:
        document = pymupdf.open(path, filetype="pdf")
    except Exception:
        raise DomainError(_PDF_DAMAGED) from None
    with document:
        if document.needs_pass or document.is_encrypted:
            raise DomainError(
                "The PDF is password-protected. Remove the password and upload it again."
            )
        # MuPDF rebuilds a lost cross-reference table by scanning the file, so a PDF cut short
        # still opens, with blank or missing pages. Repaired and without its end marker, it is
        # a truncated file; repaired files that end properly are ordinary and accepted.
        if document.is_repaired and not _ends_like_a_pdf(path):
            raise DomainError(_PDF_DAMAGED)
        pages = document.page_count
    if pages == 0:
        raise DomainError("The PDF has no pages.")
    if pages > settings.LEXWEB_MAX_PDF_PAGES:
        raise DomainError(
            f"The PDF has {pages} pages; the limit is {settings.LEXWEB_MAX_PDF_PAGES}. "
            "Split it and upload the parts."
        )
    return pages


def _ends_like_a_pdf(path: Path) -> bool:
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - 2048))
        return b"%%EOF" in handle.read()


def _image_frames(path: Path) -> tuple[str, int]:
    """The image's type and frame count, bounded like a PDF's pages.

    Every frame's size is checked against the pixel limit from its header, so a bomb in any
    frame is refused before it is decoded. Frames are decoded (truncated or corrupt data fails
    here) only while the pixels decoded stay within LEXWEB_MAX_RENDER_PIXELS, so an upload
    costs the web process no more than one rendered page, whatever the file holds; a frame
    left undecoded that turns out damaged becomes a page flagged for review at ingest.
    """
    Image.MAX_IMAGE_PIXELS = settings.LEXWEB_MAX_IMAGE_PIXELS
    limit = settings.LEXWEB_MAX_PDF_PAGES
    try:
        with Image.open(path) as image:
            content_type = Image.MIME.get(image.format or "", "application/octet-stream")
            frames = 0
            decoded = 0
            # Counting goes on past the limit only so far, so the refusal can say how many.
            while frames <= 2 * limit:
                try:
                    image.seek(frames)
                except EOFError:
                    break
                pixels = image.size[0] * image.size[1]
                extraction.check_frame_pixels(image.size)
                if decoded + pixels <= settings.LEXWEB_MAX_RENDER_PIXELS:
                    image.load()
                    decoded += pixels
                frames += 1
    except DomainError:
        raise
    except Image.DecompressionBombError:
        raise DomainError(_too_many_pixels()) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError):
        raise DomainError("The image is damaged or truncated and cannot be read.") from None
    if frames > limit:
        count = f"more than {2 * limit}" if frames > 2 * limit else str(frames)
        raise DomainError(
            f"The image has {count} pages; the limit is {limit}. Split it and upload the parts."
        )
    return content_type, frames


def _too_many_pixels() -> str:
    return (
        f"The image has more than {settings.LEXWEB_MAX_IMAGE_PIXELS:,} pixels "
        "(a possible decompression bomb); it was not opened."
    )


def _looks_like_email(head: bytes, filename: str) -> bool:
    lines = head.lower().splitlines()[:40]
    headers = sum(1 for line in lines if line.startswith(_EMAIL_HEADERS))
    return headers >= 2 and (filename.lower().endswith(".eml") or headers >= 3)


def read_text(path: Path) -> tuple[str, bool]:
    """Decode a text file: UTF-8 (with or without BOM), else CP1252. Returns (text, damaged):
    damaged means characters could not be decoded or were already U+FFFD in the file."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
    return text.replace("\x00", ""), "\ufffd" in text


def parse_email(path: Path) -> ParsedEmail:
    """The message as readable text (headers + body) and its attachments."""
    with path.open("rb") as handle:
        message = email.message_from_binary_file(handle, policy=email.policy.default)
    assert isinstance(message, EmailMessage)  # noqa: S101  (policy.default guarantees it)
    header_lines = [
        f"{name}: {message[name]}"
        for name in ("From", "To", "Cc", "Date", "Subject")
        if message[name] is not None
    ]
    body_part = message.get_body(preferencelist=("plain", "html"))
    body = ""
    if body_part is not None:
        try:
            body = body_part.get_content()
        except (LookupError, ValueError):
            body = ""
    attachments = []
    for part in message.iter_attachments():
        payload = part.get_payload(decode=True)
        if isinstance(payload, bytes) and payload:
            attachments.append(
                Attachment(clean_filename(part.get_filename() or "attachment"), payload)
            )
    text = "\n".join(header_lines) + "\n\n" + body
    return ParsedEmail(text=text.replace("\x00", ""), attachments=attachments)
