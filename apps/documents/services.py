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
from procrastinate.contrib.django import app

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.events import publish_to_case
from apps.cases.models import Case
from apps.documents import extraction, intake, storage
from apps.documents.events import DocumentProgress
from apps.documents.models import Blob, Document, Page
from lexweb.errors import DomainError
from lexweb.jobs import database_lost

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
    _defer_ingest(document)
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

INGEST_TASK = "documents.extract_text"
# Lowest priority an ingest job is given (a case with more waiting documents than this ties).
_MAX_BACKLOG = 1000


def _defer_ingest(document: Document) -> None:
    """Queue a job for the next batch of `document`'s pages, fairly across cases.

    Procrastinate runs the highest priority first, then the oldest. A job's priority is minus
    the number of the case's other documents still waiting, so a quiet case's document goes
    before the second, third... of a busy case, and a long document's next batch queues behind
    what arrived while its last batch ran. The lock lets one job per document run at a time.
    Called inside the transaction that writes the rows the job will read (Procrastinate uses
    the same connection), so the job exists exactly when they do.
    """
    waiting = (
        Document.objects.filter(
            case_id=document.case_id,
            status__in=(Document.Status.QUEUED, Document.Status.PROCESSING),
        )
        .exclude(pk=document.pk)
        .count()
    )
    app.configure_task(
        name=INGEST_TASK,
        allow_unknown=False,
        lock=f"document:{document.pk}",
        priority=-min(waiting, _MAX_BACKLOG),
    ).defer(document_id=document.pk)


def document_extract_text(*, document_id: int) -> None:
    """Read the next batch of a document's pages (text layer, else OCR); queue the rest.

    1. A missing or ready document: nothing to do. Otherwise reading continues after the last
       stored page (a page and the progress are written together, so they always agree).
    2. Up to LEXWEB_INGEST_BATCH_PAGES pages are read outside any transaction; each is stored
       with the progress in one short transaction, and pushed at most every 0.5 s.
    3. The batch's pages become searchable; then, in the same transaction, either the next
       batch is queued (behind other cases' waiting documents, see `_defer_ingest`) or the
       document is ready.
    Idempotent and safe to kill at any point: a re-run continues from the stored pages, and a
    page is never written twice (a second run of the same document stops at the first page
    the other already stored).
    """
    document = _resume(document_id)
    if document is None:
        return
    first = document.pages_done + 1
    last = min(document.page_count, first + settings.LEXWEB_INGEST_BATCH_PAGES - 1)
    try:
        last_report = 0.0
        for page in _pages(document, first=first, last=last):
            now = time.monotonic()
            report = now - last_report >= _PROGRESS_EVERY_SECONDS or page.number == last
            if not _store_page(document, page, report=report):
                return
            if report:
                last_report = now
        if document.pages_done < last:
            # Without this, a file that yields fewer pages than were counted at upload would
            # queue an empty batch after empty batch.
            raise DomainError(
                f"Page {document.pages_done + 1} of {document.page_count} could not be found "
                "in the file; upload it again."
            )
    except DomainError as exc:
        _set_progress(document, status=Document.Status.FAILED, error=exc.message)
        return
    except Exception as exc:
        if database_lost(exc):
            raise
        logger.exception("Ingest of document %s failed", document.pk)
        _set_progress(
            document,
            status=Document.Status.FAILED,
            error=f"Reading the pages failed ({type(exc).__name__}); the worker log has details.",
        )
        raise
    _finish_batch(document_id)


def _resume(document_id: int) -> Document | None:
    """The document, marked as being read, with any page past its recorded progress dropped;
    None when it is gone or already ready."""
    with transaction.atomic():
        document = (
            Document.objects.select_for_update(of=("self",))
            .select_related("blob")
            .filter(pk=document_id)
        ).first()
        if document is None or document.status == Document.Status.READY:
            return None
        Page.objects.filter(document=document, number__gt=document.pages_done).delete()
        if document.status != Document.Status.PROCESSING:
            _set_progress(document, status=Document.Status.PROCESSING, error="")
    return document


def _finish_batch(document_id: int) -> None:
    with transaction.atomic():
        document = Document.objects.select_for_update().filter(pk=document_id).first()
        if document is None or document.status != Document.Status.PROCESSING:
            return
        Page.objects.filter(document=document, search_vector__isnull=True).update(
            search_vector=SearchVector("text", config=SEARCH_CONFIG)
        )
        if document.pages_done < document.page_count:
            _defer_ingest(document)
        else:
            _set_progress(document, status=Document.Status.READY)


def _pages(document: Document, *, first: int, last: int) -> Iterator[extraction.PageText]:
    path = storage.blob_path(document.blob.sha256)
    if document.kind == Document.Kind.PDF:
        yield from extraction.pdf_pages(path, first=first, last=last)
    elif document.kind == Document.Kind.IMAGE:
        yield from extraction.image_pages(path, first=first, last=last)
    elif first > 1:
        return
    elif document.kind == Document.Kind.EMAIL:
        yield extraction.PageText(1, intake.parse_email(path).text.strip(), "text_file")
    else:
        text, damaged = intake.read_text(path)
        yield extraction.PageText(1, text.strip(), "text_file", damaged=damaged)


def _store_page(document: Document, page: extraction.PageText, *, report: bool) -> bool:
    """Store one page together with the progress (pushed when `report`). False when the page
    is no longer the next one to store (another run of this document got there first, or the
    document is gone): the caller stops."""
    low_confidence = (
        page.source == Page.Source.OCR
        and (page.confidence or 0.0) < settings.LEXWEB_OCR_REVIEW_CONFIDENCE
    )
    source = page.source if page.text else Page.Source.NONE
    with transaction.atomic():
        current = (
            Document.objects.select_for_update()
            .filter(pk=document.pk, status=Document.Status.PROCESSING)
            .values_list("pages_done", flat=True)
            .first()
        )
        if current != page.number - 1:
            return False
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
        if report:
            _set_progress(document, pages_done=page.number)
        else:
            document.pages_done = page.number
            Document.objects.filter(pk=document.pk).update(pages_done=page.number)
    return True


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
