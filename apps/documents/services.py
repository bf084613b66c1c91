"""Writes for documents: intake of uploads and the ingest job that reads their pages."""

import io
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import IO, Literal

from django.conf import settings
from django.contrib.postgres.search import SearchVector
from django.db import IntegrityError, transaction

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.events import publish_to_case
from apps.cases.models import Case
from apps.documents import extraction, intake, storage
from apps.documents.events import DocumentProgress
from apps.documents.models import Blob, Document, Page
from lexweb.errors import DomainError

logger = logging.getLogger(__name__)

SEARCH_CONFIG = "english"
MAX_CUSTODIAN = 200  # Document.custodian's max_length
# Progress events at most this often per document (the last page always reports).
_PROGRESS_EVERY_SECONDS = 0.5


@dataclass(frozen=True)
class UploadOutcome:
    """What happened to one uploaded file. Errors are per file: the others still go in."""

    filename: str
    status: Literal["created", "duplicate", "error"]
    document: Document | None = None
    error: str = ""
    notes: list[str] = field(default_factory=list)


def document_upload(
    *,
    case: Case,
    uploaded_by: User,
    filename: str,
    source: IO[bytes],
    origin: str,
    parent: Document | None = None,
    custodian: str = "",
) -> UploadOutcome:
    """Store one file as an original of `case` and queue its ingest.

    1. Copy to a temporary file while hashing (size limit enforced as it streams).
    2. Decide what it is by its bytes and check it can be read (damaged, encrypted, too many
       pages, decompression bombs are refused here, with the reason).
    3. Same bytes already in this case: report the existing document, store nothing.
    4. Move the file into the content-addressed store, write the rows and queue the job in one
       transaction. An e-mail's attachments become child documents.
    Nothing is left behind when a step fails.
    """
    name = intake.clean_filename(filename)
    custodian = intake.clean_line(custodian, MAX_CUSTODIAN)
    if origin not in Document.Origin.values:
        raise DomainError(
            f"Unknown origin {origin!r}; use one of {', '.join(Document.Origin.values)}."
        )
    try:
        with storage.blob_receive(
            source=source, max_bytes=settings.LEXWEB_MAX_UPLOAD_BYTES
        ) as received:
            sniffed = intake.sniff(received.path, name)
            existing = Document.objects.filter(case=case, blob__sha256=received.sha256).first()
            if existing is not None:
                return UploadOutcome(name, "duplicate", existing)
            parsed = intake.parse_email(received.path) if sniffed.kind == "email" else None
            document = _create(
                case, uploaded_by, name, origin, parent, received, sniffed, custodian
            )
    except DomainError as exc:
        return UploadOutcome(name, "error", error=exc.message)
    except IntegrityError:
        # The same bytes arrived twice at the same moment: the other upload won.
        existing = Document.objects.filter(case=case, blob__sha256=received.sha256).first()
        return UploadOutcome(name, "duplicate", existing)
    notes = _attachments(document, parsed, uploaded_by, origin, custodian) if parsed else []
    return UploadOutcome(name, "created", document, notes=notes)


@dataclass(frozen=True)
class UploadSummary:
    results: list[UploadOutcome]

    def _count(self, status: str) -> int:
        return sum(1 for outcome in self.results if outcome.status == status)

    @property
    def created(self) -> int:
        return self._count("created")

    @property
    def duplicates(self) -> int:
        return self._count("duplicate")

    @property
    def errors(self) -> int:
        return self._count("error")


def documents_upload(
    *,
    case: Case,
    uploaded_by: User,
    files: Sequence[tuple[str, IO[bytes]]],
    origin: str,
    custodian: str = "",
) -> UploadSummary:
    """Upload several files to a case; each succeeds or fails on its own."""
    if not files:
        raise DomainError("Choose at least one file.")
    if len(files) > settings.LEXWEB_MAX_FILES_PER_UPLOAD:
        raise DomainError(
            f"At most {settings.LEXWEB_MAX_FILES_PER_UPLOAD} files at once; upload the rest next."
        )
    if origin not in Document.Origin.values:
        raise DomainError(
            f"Unknown origin {origin!r}; use one of {', '.join(Document.Origin.values)}."
        )
    return UploadSummary(
        [
            document_upload(
                case=case,
                uploaded_by=uploaded_by,
                filename=name,
                source=source,
                origin=origin,
                custodian=custodian,
            )
            for name, source in files
        ]
    )


@transaction.atomic
def _create(
    case: Case,
    uploaded_by: User,
    name: str,
    origin: str,
    parent: Document | None,
    received: storage.ReceivedFile,
    sniffed: intake.Sniffed,
    custodian: str,
) -> Document:
    from apps.documents.tasks import document_extract_text_task

    blob, _ = Blob.objects.get_or_create(sha256=received.sha256, defaults={"size": received.size})
    document = Document.objects.create(
        case=case,
        blob=blob,
        parent=parent,
        filename=name,
        kind=sniffed.kind,
        content_type=sniffed.content_type,
        origin=origin,
        custodian=custodian,
        page_count=sniffed.page_count,
        uploaded_by=uploaded_by,
    )
    # Into the store before the rows commit: a row never points at a missing file. Should the
    # transaction still roll back, what remains is an unreferenced, content-addressed file.
    received.commit()
    account_services.audit_record(
        actor=uploaded_by,
        action="document.upload",
        case=case,
        target=document,
        detail={"sha256": received.sha256, "origin": origin},
    )
    document_extract_text_task.defer(document_id=document.pk)
    _publish(document)
    return document


def _attachments(
    message: Document, parsed: intake.ParsedEmail, uploaded_by: User, origin: str, custodian: str
) -> list[str]:
    notes = []
    for attachment in parsed.attachments:
        outcome = document_upload(
            case=message.case,
            uploaded_by=uploaded_by,
            filename=attachment.filename,
            source=io.BytesIO(attachment.payload),
            origin=origin,
            parent=message,
            custodian=custodian,
        )
        if outcome.status == "error":
            notes.append(f"Attachment {outcome.filename} was not added: {outcome.error}")
        elif outcome.status == "duplicate":
            notes.append(f"Attachment {outcome.filename} is already in this case.")
    return notes


# --- Ingest ----------------------------------------------------------------------------------


def document_extract_text(*, document_id: int) -> None:
    """Read every page of a document (text layer, else OCR) and make it searchable.

    Idempotent: a re-run replaces the pages. A missing document or one already ready is a
    no-op. Slow work (OCR) runs outside transactions; each page is written in its own short one.
    """
    document = Document.objects.select_related("blob").filter(pk=document_id).first()
    if document is None or document.status == Document.Status.READY:
        return
    with transaction.atomic():
        Page.objects.filter(document=document).delete()
        _set_progress(document, status=Document.Status.PROCESSING, pages_done=0, error="")
    try:
        last_report = 0.0
        for page in _pages(document):
            _store_page(document, page)
            now = time.monotonic()
            if now - last_report >= _PROGRESS_EVERY_SECONDS or page.number == document.page_count:
                _set_progress(document, pages_done=page.number)
                last_report = now
            else:
                Document.objects.filter(pk=document.pk).update(pages_done=page.number)
    except DomainError as exc:
        _set_progress(document, status=Document.Status.FAILED, error=exc.message)
        return
    except Exception as exc:
        logger.exception("Ingest of document %s failed", document.pk)
        _set_progress(
            document,
            status=Document.Status.FAILED,
            error=f"Reading the pages failed ({type(exc).__name__}); the worker log has details.",
        )
        raise
    Page.objects.filter(document=document).update(
        search_vector=SearchVector("text", config=SEARCH_CONFIG)
    )
    _set_progress(document, status=Document.Status.READY, pages_done=document.page_count)


def _pages(document: Document) -> Iterator[extraction.PageText]:
    path = storage.blob_path(document.blob.sha256)
    if document.kind == Document.Kind.PDF:
        yield from extraction.pdf_pages(path)
    elif document.kind == Document.Kind.IMAGE:
        yield from extraction.image_pages(path)
    elif document.kind == Document.Kind.EMAIL:
        yield extraction.PageText(1, intake.parse_email(path).text.strip(), "text_file")
    else:
        text, damaged = intake.read_text(path)
        yield extraction.PageText(1, text.strip(), "text_file", damaged=damaged)


def _store_page(document: Document, page: extraction.PageText) -> None:
    low_confidence = (
        page.source == Page.Source.OCR
        and (page.confidence or 0.0) < settings.LEXWEB_OCR_REVIEW_CONFIDENCE
    )
    source = page.source if page.text else Page.Source.NONE
    Page.objects.create(
        document=document,
        number=page.number,
        text=page.text.replace("\x00", ""),
        source=source,
        ocr_confidence=page.confidence,
        needs_review=low_confidence or page.damaged or not page.text,
        words=page.words,
        ocr_dpi=page.dpi,
        margin_boxes=page.margin_boxes,
    )


def _set_progress(document: Document, **changes: object) -> None:
    for name, value in changes.items():
        setattr(document, name, value)
    with transaction.atomic():
        document.save(update_fields=list(changes))
        _publish(document)


def _publish(document: Document) -> None:
    event: DocumentProgress = {
        "type": "documents.progress",
        "case_id": document.case_id,
        "document_id": document.pk,
        "filename": document.filename,
        "status": document.status,
        "pages_done": document.pages_done,
        "page_count": document.page_count,
        "error": document.error,
    }
    publish_to_case(case_id=document.case_id, event=event)
