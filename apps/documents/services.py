"""Writes for documents: intake of uploads and the ingest job that reads their pages."""

import io
import json
import logging
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal, cast

from django.conf import settings
from django.contrib.postgres.search import SearchVector
from django.db import IntegrityError, transaction

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.events import publish_to_case
from apps.cases.models import Case
from apps.documents import containers, extraction, formats, intake, rendition_services, storage
from apps.documents import lineage_selectors as provenance
from apps.documents.events import DocumentProgress
from apps.documents.evidence_hooks import evidence
from apps.documents.models import Blob, Derivation, Document, Page
from lexweb.errors import Conflict, DomainError
from lexweb.jobs import database_lost, job_defer

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


SYSTEM_GENERATED_REFUSED = (
    "The origin “system generated” is set only by lexweb; choose who the document came from "
    "(client, opposing party, third party, court, public record or firm work product)."
)


def origin_check(origin: str) -> None:
    """Refuse an origin a person may not choose: "system generated" (set only by lexweb) and
    anything that is not one of Document.PERSON_ORIGINS, each with a message saying what to do.
    """
    if origin == Document.Origin.SYSTEM_GENERATED:
        raise DomainError(SYSTEM_GENERATED_REFUSED)
    if not isinstance(origin, str) or origin not in Document.PERSON_ORIGINS:
        shown = origin[:40] if isinstance(origin, str) else type(origin).__name__
        choices = ", ".join(o.value for o in Document.PERSON_ORIGINS)
        raise DomainError(f"Unknown origin {shown!r}; use one of {choices}.")


def document_upload(
    *,
    case: Case,
    uploaded_by: User,
    filename: str,
    source: IO[bytes],
    origin: str,
    custodian: str = "",
) -> UploadOutcome:
    """Store one file as an original of `case` and queue its ingest.

    1. Copy to a temporary file while hashing (size limit enforced as it streams).
    2. Decide what it is by its bytes and check it can be read (damaged, encrypted, too many
       pages, decompression bombs are refused here, with the reason).
    3. Same bytes already in this case: report the existing document, store nothing.
    4. Move the file into the content-addressed store, write the rows (and the registry's check
       of the bytes) and queue the job in one transaction. An e-mail's attachments become
       documents of their own, each derived from the message ("email-attachment").
    Nothing is left behind when a step fails. `origin` is a person's choice (origin_check):
    "system generated" is refused, whoever asks.
    """
    origin_check(origin)
    return _upload(
        case=case,
        uploaded_by=uploaded_by,
        filename=filename,
        source=source,
        origin=origin,
        custodian=custodian,
        family=_Family(),
    )


@dataclass
class _Budget:
    """What one upload's nested archives may hold together (each ZIP is also checked alone)."""

    members: int = field(default_factory=lambda: settings.LEXWEB_ZIP_MAX_MEMBERS)
    unpacked: int = field(default_factory=lambda: settings.LEXWEB_ZIP_MAX_BYTES)

    def spend(self, members: list[containers.Member]) -> None:
        """Take an archive's members from the budget, or refuse the archive whole."""
        size = sum(member.info.file_size for member in members)
        if len(members) > self.members or size > self.unpacked:
            raise DomainError(
                "With the archives around it, this ZIP file goes past the limit of "
                f"{settings.LEXWEB_ZIP_MAX_MEMBERS:,} files or "
                f"{settings.LEXWEB_ZIP_MAX_BYTES:,} bytes unpacked for one upload; it was not "
                "opened."
            )
        self.members -= len(members)
        self.unpacked -= size


@dataclass(frozen=True)
class _Family:
    """Where a file sits in its upload: the document it came out of (an e-mail or Outlook
    message it is attached to, an archive it is a member of), by which transform, how deep,
    and the upload's archive budget."""

    parent: Document | None = None
    member: str = ""  # its path in the archive `parent`; empty: attached to a message
    depth: int = 0
    budget: _Budget = field(default_factory=_Budget)

    def child(self, parent: Document, member: str = "") -> "_Family":
        return _Family(parent, member, self.depth + 1, self.budget)


# Reading the children out of a container, by kind: what _upload stores after the container.
_Children = intake.ParsedEmail | list[containers.Member] | None


def _children(kind: str, path: Path, family: _Family) -> _Children:
    if kind == Document.Kind.EMAIL:
        return intake.parse_email(path)
    if kind == Document.Kind.OUTLOOK:
        return formats.parse_outlook(path)
    if kind == Document.Kind.ARCHIVE:
        members = containers.archive_members(path)
        family.budget.spend([member for member in members if not member.refused])
        return members
    return None


def _upload(
    *,
    case: Case,
    uploaded_by: User,
    filename: str,
    source: IO[bytes],
    origin: str,
    custodian: str,
    family: _Family,
) -> UploadOutcome:
    name = intake.clean_filename(filename)
    custodian = intake.clean_line(custodian, MAX_CUSTODIAN)
    if family.depth > settings.LEXWEB_MAX_NESTING:
        return UploadOutcome(
            name,
            "error",
            error=(
                f"It is nested more than {settings.LEXWEB_MAX_NESTING} containers (ZIP, "
                "e-mail) deep; it was not opened."
            ),
        )
    try:
        with storage.blob_receive(
            source=source, max_bytes=settings.LEXWEB_MAX_UPLOAD_BYTES
        ) as received:
            sniffed = intake.sniff(received.path, name)
            existing = Document.objects.filter(case=case, blob__sha256=received.sha256).first()
            if existing is not None:
                return UploadOutcome(name, "duplicate", existing)
            children = _children(sniffed.kind, received.path, family)
            document = _create(
                case, uploaded_by, name, origin, family, received, sniffed, custodian
            )
    except storage.StorageFull as exc:
        # Not this file's fault, and the next would fail alike: the whole request stops here,
        # saying which file it reached (those before it are stored: sent again, duplicates).
        raise storage.StorageFull(
            exc.message.replace("the file", f"“{name}”", 1)
            + " Files before it in the same upload were stored; sent again they answer duplicate."
        ) from exc
    except DomainError as exc:
        return UploadOutcome(name, "error", error=exc.message)
    except IntegrityError:
        # The same bytes arrived twice at the same moment: the other upload won.
        existing = Document.objects.filter(case=case, blob__sha256=received.sha256).first()
        return UploadOutcome(name, "duplicate", existing)
    upload = _ChildUpload(document, uploaded_by, origin, custodian, family)
    if isinstance(children, intake.ParsedEmail):
        notes = upload.attachments(children)
    elif children is not None:
        notes = upload.members(children)
    else:
        notes = []
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
    """Upload several files to a case; each succeeds or fails on its own, except that a full
    store raises StorageFull for the request (the files before it stay stored)."""
    if not files:
        raise DomainError("Choose at least one file.")
    if len(files) > settings.LEXWEB_MAX_FILES_PER_UPLOAD:
        raise DomainError(
            f"At most {settings.LEXWEB_MAX_FILES_PER_UPLOAD} files at once; upload the rest next."
        )
    origin_check(origin)
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
    family: "_Family | None",
    received: storage.ReceivedFile,
    sniffed: intake.Sniffed,
    custodian: str,
    *,
    action: str = "document.upload",
    audit_actor: User | Literal["uploader"] | None = "uploader",
) -> Document:
    blob, _ = Blob.objects.get_or_create(sha256=received.sha256, defaults={"size": received.size})
    document = Document.objects.create(
        case=case,
        blob=blob,
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
    if family is not None and family.parent is not None:
        derivation_record(
            child=document,
            parents=[family.parent],
            transform=Derivation.ARCHIVE_MEMBER if family.member else Derivation.EMAIL_ATTACHMENT,
            version="1",
            deterministic=True,
            parameters={"member": family.member} if family.member else None,
        )
    # Bytes that are a registered artifact flag the document at once (same transaction).
    evidence().check_bytes(document)
    account_services.audit_record(
        actor=uploaded_by if audit_actor == "uploader" else audit_actor,
        action=action,
        case=case,
        target=document,
        detail={"sha256": received.sha256, "origin": document.origin},
    )
    _defer_ingest(document)
    _publish(document)
    return document


@dataclass(frozen=True)
class _ChildUpload:
    """The files taken out of a stored container, each uploaded through the same path (so a
    container inside it opens in turn), derived from it; what befell each that did not go in
    is a note on the container's outcome."""

    container: Document
    uploaded_by: User
    origin: str
    custodian: str
    family: _Family

    def attachments(self, parsed: intake.ParsedEmail) -> list[str]:
        notes = []
        for attachment in parsed.attachments:
            outcome = self._one(attachment.filename, io.BytesIO(attachment.payload))
            notes.extend(_note("Attachment", outcome))
        return notes

    def members(self, members: list[containers.Member]) -> list[str]:
        """An archive's members, read from the stored archive one at a time."""
        notes = []
        path = storage.blob_path(self.container.blob.sha256)
        with containers.zip_open(path) as archive:
            for member in members:
                if member.refused:
                    notes.append(f"File {member.name} was not added: {member.refused}.")
                    continue
                reader = containers.MemberReader(archive, member.info)
                try:
                    outcome = self._one(member.name, cast(IO[bytes], reader), member.name)
                finally:
                    reader.close()
                notes.extend(_note(f"File {member.name}", outcome, named=False))
        return notes

    def _one(self, filename: str, source: IO[bytes], member: str = "") -> UploadOutcome:
        """One child; `member` is its path in the archive (none for an attachment)."""
        return _upload(
            case=self.container.case,
            uploaded_by=self.uploaded_by,
            filename=filename,
            source=source,
            origin=self.origin,
            custodian=self.custodian,
            family=self.family.child(self.container, member),
        )


def _note(what: str, outcome: UploadOutcome, *, named: bool = True) -> list[str]:
    label = f"{what} {outcome.filename}" if named else what
    if outcome.status == "error":
        return [f"{label} was not added: {outcome.error}", *outcome.notes]
    if outcome.status == "duplicate":
        return [f"{label} is already in this case."]
    return outcome.notes


# --- Lineage ---------------------------------------------------------------------------------

MAX_TRANSFORM = 60  # Derivation.transform's max_length
MAX_VERSION = 20  # Derivation.version's max_length
MAX_PARAMETERS = 10_000  # characters of one row's parameters as JSON


def derivation_record(
    *,
    child: Document,
    parents: Sequence[Document],
    transform: str,
    version: str,
    deterministic: bool,
    parameters: Mapping[str, Any] | None = None,
    parameters_each: Sequence[Mapping[str, Any]] | None = None,
) -> list[Derivation]:
    """Record that `child` was made from `parents` (in that order: Derivation.order 1, 2, ...)
    by `transform` at `version`. Call it in the transaction that creates the child.

    The rule of lineage: a child of a non-deterministic transform (a model wrote it), or of
    any system-generated parent, is system generated. lexweb sets that origin here, on the
    child and on everything already derived from it, at any depth. A deterministic transform
    of evidence (attachment extraction, Bates stamping) leaves the child's origin alone.

    `parameters` go on every row; `parameters_each` (one mapping per parent) is merged into
    that parent's row (a production's per-original numbers). Refused with DomainError: no
    parents, a parent twice, the child among its parents, a parent of another case, an empty
    or over-long transform or version, parameters that are not JSON or over 10,000 characters,
    and an edge that would close a cycle. The rows are
    protected: a parent with derivations cannot be deleted.
    """
    if not parents:
        raise DomainError("A derivation needs at least one parent document.")
    if not 0 < len(transform) <= MAX_TRANSFORM or not 0 < len(version) <= MAX_VERSION:
        raise DomainError(
            f"A transform is named in 1-{MAX_TRANSFORM} characters and its version in "
            f"1-{MAX_VERSION}."
        )
    if parameters_each is not None and len(parameters_each) != len(parents):
        raise DomainError("Give one set of parameters per parent, or none.")
    rows_parameters = [
        {**(parameters or {}), **(parameters_each[k] if parameters_each else {})}
        for k in range(len(parents))
    ]
    for row_parameters in rows_parameters:
        try:
            encoded = json.dumps(row_parameters, allow_nan=False)
        except (TypeError, ValueError):
            raise DomainError(
                "Derivation parameters are JSON: text, numbers, true/false, null, lists and "
                "objects with text keys."
            ) from None
        if len(encoded) > MAX_PARAMETERS:
            raise DomainError(f"Derivation parameters are at most {MAX_PARAMETERS:,} characters.")
    parent_ids = [parent.pk for parent in parents]
    if len(set(parent_ids)) != len(parent_ids):
        raise DomainError("Each parent document can appear only once in a derivation.")
    if child.pk in parent_ids:
        raise DomainError(f"Document {child.pk} cannot be derived from itself.")
    if any(parent.case_id != child.case_id for parent in parents):
        raise DomainError("Lineage stays within one case: a parent belongs to another case.")
    if provenance.descendant_ids([child.pk]) & set(parent_ids):
        raise DomainError(
            f"Document {child.pk} is already an ancestor of one of its parents; lineage "
            "cannot go in a circle."
        )
    rows = Derivation.objects.bulk_create(
        [
            Derivation(
                child=child,
                parent=parent,
                transform=transform,
                version=version,
                deterministic=deterministic,
                parameters=rows_parameters[k],
                order=k + 1,
            )
            for k, parent in enumerate(parents)
        ]
    )
    generated_parent = Document.objects.filter(
        pk__in=parent_ids, origin=Document.Origin.SYSTEM_GENERATED
    ).exists()
    if not deterministic or generated_parent:
        _mark_generated(child)
    return rows


def _mark_generated(document: Document) -> None:
    """`document` and everything derived from it become system generated."""
    ids = provenance.descendant_ids([document.pk]) | {document.pk}
    Document.objects.filter(pk__in=ids).exclude(origin=Document.Origin.SYSTEM_GENERATED).update(
        origin=Document.Origin.SYSTEM_GENERATED
    )
    document.origin = Document.Origin.SYSTEM_GENERATED


def document_create_generated(
    *,
    case: Case,
    actor: User | None,
    filename: str,
    data: bytes,
    text: str,
    media_type: str,
    source: str,
    parents: Sequence[Document] = (),
    transform: str = Derivation.MODEL_OUTPUT,
    version: str = "1",
) -> Document:
    """Store something a model wrote as a document of `case`: the one way lexweb does it.

    1. Register it in the generated-artifact registry (kind model_output; SHA-256 and text
       fingerprint) in its own transaction, so it stays registered even if storing fails.
    2. Store the bytes like an upload (same checks of what the file is), origin system
       generated, with a non-deterministic derivation (`transform`/`version`) from each of
       `parents`, and queue the ingest that reads its pages; the registry's byte check flags
       it at once (it matches itself).
    Audited as "document.generated". The same bytes again in this case return the stored
    document, with derivations from any parents it did not have yet (a Conflict when those
    bytes were uploaded by a person: say so, store nothing).
    """
    with transaction.atomic():
        evidence().model_output_register(
            data=data,
            text=text,
            media_type=media_type,
            title=intake.clean_line(filename, 200) or "model output",
            case=case,
            source=intake.clean_line(source, 200),
            created_by=actor,
        )
    name = intake.clean_filename(filename)
    with storage.blob_receive(
        source=io.BytesIO(data), max_bytes=settings.LEXWEB_MAX_UPLOAD_BYTES
    ) as received:
        sniffed = intake.sniff(received.path, name)
        try:
            with transaction.atomic():
                existing = Document.objects.filter(case=case, blob__sha256=received.sha256)
                document = existing.first() or _create(
                    case,
                    actor or _system_user(case),
                    name,
                    Document.Origin.SYSTEM_GENERATED,
                    None,
                    received,
                    sniffed,
                    "",
                    action="document.generated",
                    audit_actor=actor,
                )
                _generated_lineage(document, parents, transform, version)
        except IntegrityError:
            # The same output stored at the same moment by another call: that one stands.
            with transaction.atomic():
                document = Document.objects.get(case=case, blob__sha256=received.sha256)
                _generated_lineage(document, parents, transform, version)
    return document


def _generated_lineage(
    document: Document, parents: Sequence[Document], transform: str, version: str
) -> None:
    """The model-output derivations of a generated document, those it lacks; a Conflict when
    the bytes are a person's upload (never turned into something else)."""
    if document.origin != Document.Origin.SYSTEM_GENERATED:
        raise Conflict(
            f"These bytes are already document {document.pk} of this case "
            f"(“{document.filename}”, {document.get_origin_display()}); the model output was "
            "registered but not stored again."
        )
    known = set(
        Derivation.objects.filter(child=document, transform=transform).values_list(
            "parent_id", flat=True
        )
    )
    missing = [parent for parent in parents if parent.pk not in known]
    if missing:
        derivation_record(
            child=document,
            parents=missing,
            transform=transform,
            version=version,
            deterministic=False,
        )


def _system_user(case: Case) -> User:
    """Whom a document made without a person is recorded as uploaded by: the case's creator."""
    return case.created_by


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
    job_defer(
        INGEST_TASK,
        lock=f"document:{document.pk}",
        priority=-min(waiting, _MAX_BACKLOG),
        document_id=document.pk,
    )


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
    try:
        _finish_batch(document_id)
    except Exception as exc:
        # The registry's check of the text runs here: should it fail, the document must not
        # stay "processing" with all its pages read and nothing queued to finish it.
        if database_lost(exc):
            raise
        logger.exception("Finishing the ingest of document %s failed", document.pk)
        _set_progress(
            document,
            status=Document.Status.FAILED,
            error=(
                f"Checking the document's text failed ({type(exc).__name__}); the worker log "
                "has details."
            ),
        )
        raise


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
            # The registry's check of the text, before anyone can use the document: it is
            # READY (and CLEAR or FLAGGED) in the same commit.
            evidence().check_text(document)
            _set_progress(document, status=Document.Status.READY)
            # Text files, e-mails and office files are rendered to PDF next (searchable now).
            rendition_services.rendition_queue(document)


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
    elif document.kind == Document.Kind.OUTLOOK:
        yield extraction.PageText(1, formats.parse_outlook(path).text.strip(), "text_file")
    elif document.kind == Document.Kind.WORD:
        word = formats.word_text(path)
        yield extraction.PageText(1, word.text.strip(), "text_file", damaged=word.truncated)
    elif document.kind == Document.Kind.SPREADSHEET:
        sheets = formats.workbook_text(path)
        yield extraction.PageText(1, sheets.text, "text_file", damaged=sheets.truncated)
    elif document.kind == Document.Kind.ARCHIVE:
        yield extraction.PageText(1, containers.archive_listing(path), "text_file")
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
            review_reason=page.review_reason[:500],
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
        "provenance": document.provenance,
    }
    publish_to_case(case_id=document.case_id, event=event)
