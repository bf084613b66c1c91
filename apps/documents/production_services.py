"""Writes for productions: reserving Bates numbers, and the stamping job."""

import logging
import re
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from django.contrib.postgres.search import SearchVector
from django.db import IntegrityError, connection, transaction
from django.db.models import Max

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.events import publish_to_case
from apps.cases.models import Case
from apps.documents import (
    bates,
    loadfiles,
    privilege_log,
    production_door_services,
    production_numbering,
    rendering,
    rendition_services,
    services,
    stamping,
    storage,
)
from apps.documents.events import ExportProgress, ProductionProgress
from apps.documents.evidence_hooks import evidence
from apps.documents.models import (
    BatesPage,
    Blob,
    Derivation,
    Document,
    Page,
    Production,
    ProductionDocument,
    ProductionExport,
)
from lexweb.errors import Conflict, DomainError
from lexweb.jobs import database_lost, job_defer

logger = logging.getLogger(__name__)

VOLUME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,39}$")
# PDFs and images are stamped as they are; the rendered kinds through their rendition's PDF.
RENDERED = set(rendering.RENDERED_KINDS)
STAMPABLE = {Document.Kind.PDF, Document.Kind.IMAGE, *RENDERED}
PROGRESS_SECONDS = 0.5  # stamping progress is stored and pushed at most this often


def production_stamp_check(
    *,
    prefix: str,
    digits: int,
    font_size: float,
    margin: float,
    legend: str,
    position: str,
    legend_position: str,
    page_suffix_digits: int = 0,
) -> None:
    """Refuse stamp settings a production would refuse, with the same message (reads nothing;
    the stamp preview checks with it before rendering)."""
    problem = bates.prefix_problem(prefix)
    if problem is not None:
        raise DomainError(problem)
    if not 3 <= digits <= 12:
        raise DomainError("Bates numbers have 3 to 12 digits.")
    problem = bates.page_suffix_problem(page_suffix_digits, 0)
    if problem is not None:
        raise DomainError(problem)
    if not 5 <= font_size <= 24:
        raise DomainError("The stamp's font size is 5 to 24 points.")
    if not 4 <= margin <= 72:
        raise DomainError("The margin is 4 to 72 points.")
    if len(legend) > 120 or any(ord(ch) < 32 for ch in legend):
        raise DomainError("The legend is one line of at most 120 characters.")
    for value in (position, legend_position):
        if value not in Production.Position.values:
            raise DomainError(f"Unknown stamp position {value!r}.")
    if legend and position == legend_position:
        raise DomainError("The Bates number and the legend need different positions.")
    # A legend past the page's edge would be cut off, one over the number would hide it
    # (measured with the longest label: the number with its page suffix).
    problem = stamping.stamp_fit_problem(
        stamping.StampSettings(
            prefix=prefix,
            digits=digits,
            position=position,
            legend=legend,
            legend_position=legend_position,
            font_size=font_size,
            margin=margin,
            page_suffix_digits=page_suffix_digits,
        )
    )
    if problem is not None:
        raise DomainError(problem)


@transaction.atomic
def production_create(
    *,
    case: Case,
    actor: User,
    volume: str,
    prefix: str,
    document_ids: list[int],
    start_number: int | None = None,
    digits: int = 6,
    position: str = Production.Position.BOTTOM_RIGHT,
    legend: str = "",
    legend_position: str = Production.Position.BOTTOM_LEFT,
    font_size: float = 9.0,
    margin: float = 18.0,
    page_suffix_digits: int = 0,
    inclusions: Sequence[production_door_services.Inclusion] = (),
    withheld: Sequence[privilege_log.Withholding] = (),
) -> Production:
    """Reserve Bates numbers for the documents, in the given order, and queue the stamping.

    1. Check settings and documents (members' case, ingested, PDF or image, each once, no
       production volume), then the door out (`production_door_services`): generated,
       derived from generated, flagged and work-product documents only where a lawyer of the
       case included each (`inclusions`, with a written reason; stored on its item, audited).
       Documents `withheld` (not among `document_ids`) go to the production's privilege log,
       each with its privilege and description (audited; exported with the volume).
    2. Under a transaction-scoped lock on (case, prefix key), continue after the highest
       number used so far by any prefix of that key (or at `start_number`, which may not reuse
       one): "ABC 000123" and "ABC-000123" are one number (see apps.documents.bates).
    3. Write the production, its items and every Bates index row; the database's unique
       constraint on (case, prefix, number) is the final word for one spelling, the lock for
       the key.
    """
    legend = legend.strip()
    if not VOLUME_PATTERN.match(volume):
        raise DomainError("The volume name is 1-40 letters, digits, '-' or '_' (e.g. ACME001).")
    production_stamp_check(
        prefix=prefix,
        digits=digits,
        font_size=font_size,
        margin=margin,
        legend=legend,
        position=position,
        legend_position=legend_position,
        page_suffix_digits=page_suffix_digits,
    )
    documents = _documents_in_order(case, document_ids)
    included = production_door_services.production_door_check(
        case=case, actor=actor, documents=documents, inclusions=inclusions
    )
    withholdings = privilege_log.privilege_log_check(
        case=case, documents=documents, withheld=withheld
    )
    # A rendered document takes its rendition's pages (refused while it is not ready).
    pages = rendition_services.production_page_counts(documents)
    for document in documents:
        problem = bates.page_suffix_problem(page_suffix_digits, pages[document.pk])
        if problem is not None:
            raise DomainError(f"{document.filename}: {problem}")
    key = bates.prefix_key(prefix)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [case.pk, key])
    same_key = BatesPage.objects.filter(case=case, prefix__in=bates.prefix_spellings(key))
    used = same_key.aggregate(top=Max("number"))["top"]
    first = start_number if start_number is not None else (used or 0) + 1
    if first < 1:
        raise DomainError("Bates numbers start at 1 or higher.")
    total = production_numbering.numbers_needed(
        page_counts=list(pages.values()), page_suffix_digits=page_suffix_digits
    )
    last = first + total - 1
    if len(str(last)) > digits:
        counted = "documents" if page_suffix_digits else "pages"
        raise DomainError(f"{total} {counted} from {first} need more than {digits} digits.")
    clash = same_key.filter(number__range=(first, last)).order_by("number").first()
    if clash is not None:
        raise Conflict(
            f"{bates.label(clash.prefix, clash.number, digits)} is already used in this case; "
            f"the next free number is {(used or 0) + 1}."
        )
    if Production.objects.filter(case=case, volume=volume).exists():
        raise Conflict(f"There is already a volume {volume} in this case.")
    try:
        production = production_numbering.production_rows_write(
            case=case,
            actor=actor,
            numbered=production_numbering.Numbered(
                volume=volume,
                stamp=stamping.StampSettings(
                    prefix=prefix,
                    digits=digits,
                    position=position,
                    legend=legend,
                    legend_position=legend_position,
                    font_size=font_size,
                    margin=margin,
                    page_suffix_digits=page_suffix_digits,
                ),
                first=first,
                documents=[(document, pages[document.pk]) for document in documents],
            ),
        )
    except IntegrityError:
        raise Conflict(
            "Those Bates numbers were just taken by another production; try again."
        ) from None
    account_services.audit_record(
        actor=actor,
        action="production.create",
        case=case,
        target=production,
        detail={
            "first": production.bates(first, 1 if page_suffix_digits else 0),
            "last": production.bates(last, pages[documents[-1].pk] if page_suffix_digits else 0),
            "documents": len(documents),
            "included": len(included),
        },
    )
    for document_id, (problem, reason) in included.items():
        production.items.filter(document_id=document_id).update(
            held_back=problem[:500], included_by=actor, inclusion_reason=reason
        )
    production_door_services.production_inclusions_audit(
        production=production, actor=actor, included=included
    )
    privilege_log.privilege_log_write(production=production, actor=actor, rows=withholdings)
    job_defer("documents.stamp_production", production_id=production.pk)
    _publish(production)
    return production


def _documents_in_order(case: Case, document_ids: list[int]) -> list[Document]:
    if not document_ids:
        raise DomainError("Pick at least one document.")
    if len(set(document_ids)) != len(document_ids):
        raise DomainError("Each document can appear only once in a production.")
    # Locked (in id order, as withdrawing locks them): a withdrawal at the same moment either
    # waits for this production and is refused, or ends first and this one sees it.
    rows = Document.objects.filter(case=case, pk__in=document_ids).order_by("pk")
    found = {d.pk: d for d in rows.select_for_update(of=("self",))}
    missing = [i for i in document_ids if i not in found]
    if missing:
        raise DomainError(f"No document {missing[0]} in this case.")
    documents = [found[i] for i in document_ids]
    # A volume that lineage made system generated keeps no "production" origin: found by its row.
    volumes = set(
        Production.objects.filter(volume_document__in=found).values_list(
            "volume_document_id", flat=True
        )
    )
    for document in documents:
        production_document_check(document, volume=document.pk in volumes)
    return documents


def production_document_check(document: Document, *, volume: bool = False) -> None:
    """Refuse a document a production cannot take (a production volume, withdrawn, not
    stampable, not read yet), saying why. Reads nothing (`volume`: the caller knows it is a
    production's volume); the stamp preview checks its document with it too."""
    if volume or document.origin == Document.Origin.PRODUCTION:
        raise DomainError(
            f"{document.filename} is a production volume (the firm's outgoing production); "
            "produce its originals instead."
        )
    if document.withdrawn_at is not None:
        raise DomainError(
            f"{document.filename} was withdrawn (“{document.withdrawn_reason[:200]}”); "
            "restore it first to produce it."
        )
    if document.kind not in STAMPABLE:
        raise DomainError(
            f"{document.filename} is a {document.get_kind_display()} file; productions take "
            "PDFs, images, and text, e-mail, Word, Excel and Outlook documents rendered to PDF "
            "(produce its members instead)."
        )
    if document.status != Document.Status.READY:
        raise DomainError(
            f"{document.filename} is not ingested yet ({document.get_status_display()})."
        )


def production_stamp(*, production_id: int) -> None:
    """Merge and stamp a production's originals into one PDF, stored by hash as its output,
    and make the stamped volume a document of the case (see `_volume_document`).

    Idempotent: a ready production is left alone; a re-run after a failure or a kill starts
    over. The volume document is written in the transaction that marks the production ready
    (with the production row locked and its state read again), so it is created exactly once
    however often, and however many workers at once, the stamping runs.
    """
    production = Production.objects.filter(pk=production_id).first()
    if production is None or production.status == Production.Status.READY:
        return
    # Only a production that is not ready yet goes back to "stamping": a run that arrives just
    # after another one finished must not undo its READY.
    started = (
        Production.objects.filter(pk=production_id)
        .exclude(status=Production.Status.READY)
        .update(status=Production.Status.PROCESSING, pages_done=0, error="")
    )
    if not started:
        return
    production.status, production.pages_done, production.error = Production.Status.PROCESSING, 0, ""
    _publish(production)
    items = list(production.items.select_related("document__blob").order_by("order"))
    try:
        sources = [
            production_source(document=item.document, first_number=item.first_number)
            for item in items
        ]
    except DomainError as exc:  # a rendition that is no longer ready
        _set(production, status=Production.Status.FAILED, error=exc.message)
        return
    stamp = stamping.StampSettings(
        prefix=production.prefix,
        digits=production.digits,
        position=production.position,
        legend=production.legend,
        legend_position=production.legend_position,
        font_size=production.font_size,
        margin=production.margin,
        page_suffix_digits=production.page_suffix_digits,
    )

    reported = [time.monotonic()]

    def progress(done: int) -> None:  # called after each document; stored and pushed at most
        now = time.monotonic()  # every PROGRESS_SECONDS (each costs a transaction)
        if now - reported[0] >= PROGRESS_SECONDS:
            reported[0] = now
            _set(production, pages_done=done)

    try:
        with (
            storage.full_store_refused(f"the stamped volume {production.volume}"),
            # This process's own folder in the store: the sweeper knows whose it is.
            tempfile.TemporaryDirectory(dir=storage.blob_tmp_dir()) as work,
        ):
            out_path = Path(work) / "volume.pdf"
            stamping.stamp_volume(sources, stamp, out_path, progress)
            stored = storage.blob_adopt(out_path)
    except storage.StorageFull as exc:  # the partial volume went with its folder; tried again
        logger.warning("Stamping production %s: %s", production.pk, exc.message)
        _set(production, status=Production.Status.FAILED, error=exc.message)
        raise
    except Exception as exc:
        if database_lost(exc):
            raise
        logger.exception("Stamping production %s failed", production.pk)
        _set(
            production,
            status=Production.Status.FAILED,
            error=f"Stamping failed ({type(exc).__name__}); the worker log has details.",
        )
        raise
    blob, _ = Blob.objects.get_or_create(sha256=stored.sha256, defaults={"size": stored.size})
    try:
        _finish(production, items, blob)
    except Exception as exc:
        if database_lost(exc):
            raise
        logger.exception("Recording production %s's volume as a document failed", production.pk)
        _set(
            production,
            status=Production.Status.FAILED,
            error=(
                f"The volume was stamped but could not be recorded as a document "
                f"({type(exc).__name__}); the worker log has details."
            ),
        )
        raise


def _finish(production: Production, items: list[ProductionDocument], blob: Blob) -> None:
    """Ready, with its volume document, in one transaction (the production row locked)."""
    with transaction.atomic():
        locked = Production.objects.select_for_update().filter(pk=production.pk).first()
        if locked is None or locked.status == Production.Status.READY:
            return  # another run finished first: its volume document stands
        if locked.volume_document_id is not None:  # ready before, whatever reset it since
            _set(production, status=Production.Status.READY, pages_done=production.page_count)
            return
        volume = _volume_document(locked, items, blob)
        _set(
            production,
            status=Production.Status.READY,
            output=blob,
            pages_done=production.page_count,
            volume_document=volume,
        )


def _volume_document(
    production: Production, items: list[ProductionDocument], blob: Blob
) -> Document:
    """The stamped volume as a document of the case, ready at once: no ingest runs on it.

    - Pages: copied from the originals' pages in volume order (text, source, OCR confidence,
      words, dpi, review flag and search vector), in one statement. Margin boxes are not
      copied: the volume's margins hold the stamps now. A rendered original's pages get the
      text of its rendition's pages (see `_rendered_volume_pages`).
    - Provenance: flagged if any original is flagged (their registry matches are copied, best
      share per artifact), else clear.
    - Origin: "production", the firm's outgoing production (issue 25 req 1): never evidence,
      refused from packets; system generated instead if any original is (a lawyer included
      it), as `services.derivation_record` marks it when the lineage is written.
    - Lineage: one deterministic "bates-stamp" derivation (version from Production.transform)
      to every original, in order, with the prefix, digits, volume, production and that
      original's order and first and last number.
    Listed among the case's documents with a "production volume" label; full-text search
    leaves it out (its pages are found in the originals), see documents.selectors.
    """
    originals = [item.document for item in items]
    volume = Document.objects.create(
        case=production.case,
        blob=blob,
        filename=f"{production.volume}.pdf",
        kind=Document.Kind.PDF,
        content_type="application/pdf",
        # The firm's outgoing production; lineage below makes it system generated if an
        # original (included by a lawyer) is.
        origin=Document.Origin.PRODUCTION,
        status=Document.Status.READY,
        page_count=production.page_count,
        pages_done=production.page_count,
        provenance=(
            Document.Provenance.FLAGGED
            if any(d.provenance == Document.Provenance.FLAGGED for d in originals)
            else Document.Provenance.CLEAR
        ),
        uploaded_by=production.created_by,
    )
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO documents_page (document_id, number, text, source, ocr_confidence,
                                        needs_review, words, ocr_dpi, search_vector)
            SELECT %s, b.production_page, p.text, p.source, p.ocr_confidence,
                   p.needs_review, p.words, p.ocr_dpi, p.search_vector
            FROM documents_batespage b
            JOIN documents_page p ON p.document_id = b.document_id AND p.number = b.page_number
            WHERE b.production_id = %s AND NOT b.document_id = ANY(%s)
            ORDER BY b.production_page
            """,
            [volume.pk, production.pk, [d.pk for d in originals if d.kind in RENDERED]],
        )
    _rendered_volume_pages(volume, items)
    evidence().matches_copy(volume=volume, originals=originals)
    version = production.transform.partition("/")[2] or "1"
    services.derivation_record(
        child=volume,
        parents=originals,
        transform=Derivation.BATES_STAMP,
        version=version,
        deterministic=True,
        parameters={
            "production": production.pk,
            "volume": production.volume,
            "prefix": production.prefix,
            "digits": production.digits,
            # Only where set: the lineage of a production without it reads as before.
            **(
                {"page_suffix_digits": production.page_suffix_digits}
                if production.page_suffix_digits
                else {}
            ),
        },
        parameters_each=[
            {"order": item.order, "first": item.first_number, "last": item.last_number}
            for item in items
        ],
    )
    # lexweb's act, not a person's: the stamping job made the document.
    account_services.audit_record(
        actor=None,
        actor_label="lexweb stamping",
        action="document.production_volume",
        case=production.case,
        target=volume,
        detail={"production": production.pk, "volume": production.volume, "origin": volume.origin},
    )
    return volume


def _rendered_volume_pages(volume: Document, items: list[ProductionDocument]) -> None:
    """The volume pages of rendered originals: one per rendered page, with that page's text
    (a text file's one stored page spans several rendered pages), searchable."""
    rows = []
    for item in items:
        if item.document.kind not in RENDERED:
            continue
        first_page = (
            BatesPage.objects.filter(production_id=item.production_id, document=item.document)
            .order_by("production_page")
            .values_list("production_page", flat=True)
            .first()
        ) or 1
        for k, text in enumerate(rendition_services.rendered_page_texts(item.document)):
            rows.append(
                Page(
                    document=volume,
                    number=first_page + k,
                    text=text.replace("\x00", ""),
                    source=Page.Source.TEXT_LAYER if text.strip() else Page.Source.NONE,
                )
            )
    Page.objects.bulk_create(rows, batch_size=2000)
    if rows:
        Page.objects.filter(document=volume, search_vector__isnull=True).update(
            search_vector=SearchVector("text", config=services.SEARCH_CONFIG)
        )


def production_source(
    *, document: Document, first_number: int, first_page_only: bool = False
) -> stamping.Source:
    """What the stamping reads of one original: its file, first Bates number, the margin word
    boxes known from ingest and (read when its turn comes) its OCR pages' words.
    `first_page_only`: the facts of page 1 alone (the stamp preview)."""
    known, ocr_pages = _page_facts(document, first_page_only)
    # A rendered document's rendition (its Page rows hold no margin boxes or OCR words).
    path, kind = rendition_services.document_file_to_stamp(document)
    return stamping.Source(
        path=path,
        kind=kind,
        first_number=first_number,
        known_boxes=known,
        load_layers=partial(_ocr_layers, document.pk, first_page_only) if ocr_pages else None,
    )


def _page_facts(
    document: Document, first_page_only: bool = False
) -> tuple[dict[int, list[list[float]]], bool]:
    """Margin word boxes recorded at ingest ([x0, y0, x1, y1] in points), by 0-based page
    index; and whether any page's text came from OCR (those get an invisible text layer)."""
    boxes: dict[int, list[list[float]]] = {}
    ocr = False
    pages = Page.objects.filter(document=document)
    if first_page_only:
        pages = pages.filter(number=1)
    for number, margin_boxes, source in pages.values_list("number", "margin_boxes", "source"):
        if margin_boxes is not None:
            boxes[number - 1] = margin_boxes
        ocr = ocr or source == Page.Source.OCR
    return boxes, ocr


def _ocr_layers(document_id: int, first_page_only: bool = False) -> dict[int, stamping.OcrLayer]:
    """The OCR words of a document's OCR pages, by 0-based page index (read when the
    document's turn comes in the stamping, so one document's words are in memory at a time)."""
    pages = Page.objects.filter(document_id=document_id, source=Page.Source.OCR)
    if first_page_only:
        pages = pages.filter(number=1)
    return {
        number - 1: stamping.OcrLayer(dpi=dpi or 0, words=words)
        for number, dpi, words in pages.filter(ocr_dpi__isnull=False).values_list(
            "number", "ocr_dpi", "words"
        )
        if words
    }


def _set(production: Production, **changes: object) -> None:
    for name, value in changes.items():
        setattr(production, name, value)
    with transaction.atomic():
        production.save(update_fields=list(changes))
        _publish(production)


def _publish(production: Production) -> None:
    event: ProductionProgress = {
        "type": "documents.production_progress",
        "case_id": production.case_id,
        "production_id": production.pk,
        "volume": production.volume,
        "status": production.status,
        "pages_done": production.pages_done,
        "page_count": production.page_count,
        "error": production.error,
    }
    publish_to_case(case_id=production.case_id, event=event)


# --- Volumes with load files -------------------------------------------------------------------


@transaction.atomic
def production_export_request(
    *, production: Production, actor: User, encoding: str = "utf-8", image_dpi: int = 300
) -> ProductionExport:
    """Queue building the volume zip (PDF, TIFF images, text, .dat and .opt)."""
    if encoding not in ProductionExport.Encoding.values:
        raise DomainError("Load files are written in UTF-8 or CP1252.")
    if not 100 <= image_dpi <= 600:
        raise DomainError("Page images are 100 to 600 dpi.")
    if production.status != Production.Status.READY:
        raise Conflict(f"Volume {production.volume} is not stamped yet ({production.status}).")
    export = ProductionExport.objects.create(
        production=production, encoding=encoding, image_dpi=image_dpi, created_by=actor
    )
    account_services.audit_record(
        actor=actor,
        action="production.export",
        case=production.case,
        target=production,
        detail={"encoding": encoding, "dpi": image_dpi},
    )
    job_defer("documents.export_production", export_id=export.pk)
    return export


def production_export_build(*, export_id: int) -> None:
    """Build and store the volume zip. Idempotent; a missing export is a no-op."""
    export = (
        ProductionExport.objects.select_related("production__output").filter(pk=export_id).first()
    )
    if export is None or export.status == ProductionExport.Status.READY:
        return
    production = export.production
    if production.output is None:
        _set_export(
            export, status=ProductionExport.Status.FAILED, error="The volume is not stamped."
        )
        return
    _set_export(export, status=ProductionExport.Status.PROCESSING, error="")
    documents, pages = _volume_rows(production)
    try:
        with (
            storage.full_store_refused(f"the volume zip {production.volume}.zip"),
            # This process's own folder in the store: the sweeper knows whose it is.
            tempfile.TemporaryDirectory(dir=storage.blob_tmp_dir()) as work,
        ):
            out = Path(work) / f"{production.volume}.zip"
            loadfiles.write_volume(
                out=out,
                volume=production.volume,
                volume_pdf=storage.blob_path(production.output.sha256),
                documents=documents,
                pages=pages,
                encoding=export.encoding,
                dpi=export.image_dpi,
                extra=privilege_log.privilege_log_files(production),
            )
            stored = storage.blob_adopt(out)
    except storage.StorageFull as exc:  # the partial zip went with its folder; tried again
        logger.warning("Export %s: %s", export.pk, exc.message)
        _set_export(export, status=ProductionExport.Status.FAILED, error=exc.message)
        raise
    except Exception as exc:
        if database_lost(exc):
            raise
        logger.exception("Export %s failed", export.pk)
        _set_export(
            export,
            status=ProductionExport.Status.FAILED,
            error=f"Building the volume failed ({type(exc).__name__}).",
        )
        raise
    blob, _ = Blob.objects.get_or_create(sha256=stored.sha256, defaults={"size": stored.size})
    _set_export(export, status=ProductionExport.Status.READY, output=blob)


def _volume_rows(
    production: Production,
) -> tuple[list[loadfiles.VolumeDocument], list[loadfiles.VolumePage]]:
    items = list(production.items.select_related("document__blob").order_by("order"))
    by_document = {item.document_id: item for item in items}
    texts: dict[int, list[str]] = {}
    for document_id, text in (
        Page.objects.filter(document_id__in=by_document)
        .order_by("document_id", "number")
        .values_list("document_id", "text")
    ):
        texts.setdefault(document_id, []).append(text)
    messages = _messages(by_document)
    documents, pages = [], []
    for item in items:
        document = item.document
        page_count = item.page_count  # a rendition's, if rendered
        family = _family(messages.get(document.pk, document.pk), by_document, messages)
        begbates, endbates = production.item_bates(item)
        documents.append(
            loadfiles.VolumeDocument(
                begbates=begbates,
                endbates=endbates,
                begattach=production.item_bates(family[0])[0] if family else "",
                endattach=production.item_bates(family[1])[1] if family else "",
                custodian=document.custodian,
                filename=document.filename,
                page_count=page_count,
                sha256=document.blob.sha256,
                text="\f".join(texts.get(document.pk, [])),
            )
        )
        for k in range(page_count):
            pages.append(
                loadfiles.VolumePage(
                    bates=(
                        production.bates(item.first_number, k + 1)
                        if production.page_suffix_digits
                        else production.bates(item.first_number + k)
                    ),
                    first_of_document=k == 0,
                    document_page_count=page_count,
                )
            )
    return documents, pages


def _messages(items: dict[int, ProductionDocument]) -> dict[int, int]:
    """The e-mail each produced attachment came out of (its "email-attachment" derivation),
    by the attachment's id. An attachment of several messages belongs to the first produced
    one, else to the first."""
    message: dict[int, int] = {}
    for child, parent in (
        Derivation.objects.filter(child_id__in=items, transform__in=Derivation.FAMILY)
        .order_by("id")
        .values_list("child_id", "parent_id")
    ):
        if child not in message or (message[child] not in items and parent in items):
            message[child] = parent
    return message


def _family(
    head_id: int, items: dict[int, ProductionDocument], messages: dict[int, int]
) -> tuple[ProductionDocument, ProductionDocument] | None:
    """The first and last item of an e-mail and its attachments in this production."""
    members = [
        item
        for item in items.values()
        if item.document_id == head_id or messages.get(item.document_id) == head_id
    ]
    if len(members) < 2:
        return None
    return min(members, key=lambda m: m.order), max(members, key=lambda m: m.order)


def _set_export(export: ProductionExport, **changes: object) -> None:
    for name, value in changes.items():
        setattr(export, name, value)
    with transaction.atomic():
        export.save(update_fields=list(changes))
        event: ExportProgress = {
            "type": "documents.export_progress",
            "case_id": export.production.case_id,
            "production_id": export.production_id,
            "export_id": export.pk,
            "status": export.status,
            "error": export.error,
        }
        publish_to_case(case_id=export.production.case_id, event=event)
