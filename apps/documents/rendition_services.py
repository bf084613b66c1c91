"""Writes for renditions: the PDF that a text file, e-mail, Word, Excel or Outlook document is
rendered to, for viewing and production.

1. When ingest has read a document of a rendered kind, `rendition_queue` (called in the
   transaction that marks it ready) writes its Rendition row, queued, and the
   `documents.render` job (cpu queue, one at a time per document).
2. The job (`rendition_render`) marks it rendering, renders outside any transaction in a
   temporary folder of this process (rendering.render), stores the PDF by its hash, and marks
   it ready with transform, version, tool and the input's SHA-256 (its lineage); or failed
   with the reason; or unavailable where LibreOffice is not installed. The document itself
   stays ready and searchable whatever happens here.
3. Productions stamp the rendition's pages (`production_page_counts`, `document_file_to_stamp`).
Each change is pushed to the case as `documents.rendition_progress`.
"""

import logging
import tempfile
from collections.abc import Sequence
from pathlib import Path

import pymupdf
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from apps.cases.events import publish_to_case
from apps.documents import rendering, storage
from apps.documents.events import RenditionProgress
from apps.documents.models import Blob, Document, Rendition
from lexweb.errors import DomainError
from lexweb.jobs import database_lost, job_defer

logger = logging.getLogger(__name__)

RENDER_TASK = "documents.render"


def rendition_queue(document: Document) -> None:
    """Queue the rendering of `document` if its kind is rendered (else nothing). Call it in
    the transaction that marks the document read: the row and the job commit with it. A
    rendition that exists already is queued again unless it is ready."""
    if document.kind not in rendering.RENDERED_KINDS:
        return
    rendition, created = Rendition.objects.get_or_create(
        document=document, defaults={"input_sha256": document.blob.sha256}
    )
    if not created:
        if rendition.status == Rendition.Status.READY:
            return
        Rendition.objects.filter(pk=rendition.pk).update(status=Rendition.Status.QUEUED, error="")
    job_defer(RENDER_TASK, lock=f"render:{document.pk}", document_id=document.pk)


def renditions_queue_missing(*, retry: bool = False) -> int:
    """Queue the rendering of every ready document of a rendered kind that has no rendition
    (read before rendering existed), and with `retry` of those that failed or were
    unavailable. Each in its own short transaction; returns how many were queued."""
    missing = Document.objects.filter(
        kind__in=rendering.RENDERED_KINDS, status=Document.Status.READY
    ).select_related("blob")
    stuck = Rendition.objects.filter(
        status__in=(Rendition.Status.FAILED, Rendition.Status.UNAVAILABLE)
    ).values("document_id")
    missing = (
        missing.filter(Q(rendition__isnull=True) | Q(pk__in=stuck))
        if retry
        else missing.filter(rendition__isnull=True)
    )
    queued = 0
    for document in missing.order_by("pk").iterator():
        with transaction.atomic():
            rendition_queue(document)
        queued += 1
    return queued


def rendition_render(*, document_id: int) -> None:
    """Render a document to PDF and record the outcome (see the module docstring, step 2).

    Idempotent: a ready rendition, or a document that is gone, is left alone; a re-run after a
    failure or a kill starts over (its temporary folder goes with the process).
    """
    rendition = _start(document_id)
    if rendition is None:
        return
    document = rendition.document
    try:
        with (
            storage.full_store_refused("the rendering to PDF"),
            # This process's own folder in the store: the sweeper knows whose it is.
            tempfile.TemporaryDirectory(dir=storage.blob_tmp_dir()) as work,
        ):
            rendered = rendering.render(
                document.kind,
                storage.blob_path(document.blob.sha256),
                work=Path(work),
            )
            stored = storage.blob_adopt(rendered.path)
    except rendering.RenderUnavailableError as exc:
        _set(rendition, status=Rendition.Status.UNAVAILABLE, error=exc.message)
        return
    except storage.StorageFull as exc:  # the partial PDF went with its folder; tried again
        logger.warning("Rendering document %s: %s", document.pk, exc.message)
        _set(rendition, status=Rendition.Status.FAILED, error=exc.message)
        raise
    except DomainError as exc:
        _set(rendition, status=Rendition.Status.FAILED, error=exc.message)
        return
    except Exception as exc:
        if database_lost(exc):
            raise
        logger.exception("Rendering document %s failed", document.pk)
        _set(
            rendition,
            status=Rendition.Status.FAILED,
            error=f"{type(exc).__name__} while rendering; the worker log has details.",
        )
        raise
    blob, _ = Blob.objects.get_or_create(sha256=stored.sha256, defaults={"size": stored.size})
    _set(
        rendition,
        status=Rendition.Status.READY,
        error="",
        output=blob,
        page_count=rendered.page_count,
        transform=rendered.transform,
        version=rendered.version,
        tool=rendered.tool,
        input_sha256=document.blob.sha256,
        parameters=_parameters(rendered),
    )


def _parameters(rendered: rendering.Rendered) -> dict[str, object]:
    """How LibreOffice ran (its isolation) and the links taken out first; {} for our own
    layout."""
    if rendered.network_isolated is None:
        return {}
    parameters: dict[str, object] = {
        "network_isolated": rendered.network_isolated,
        "filesystem_isolated": rendered.filesystem_isolated,
    }
    if rendered.links_removed:
        parameters["links_removed"] = rendered.links_removed
    return parameters


def _start(document_id: int) -> Rendition | None:
    with transaction.atomic():
        rendition = (
            Rendition.objects.select_for_update(of=("self",))
            .select_related("document__blob")
            .filter(document_id=document_id)
            .first()
        )
        if rendition is None or rendition.status == Rendition.Status.READY:
            return None
        _set(rendition, status=Rendition.Status.PROCESSING, error="", finished_at=None)
    return rendition


def _set(rendition: Rendition, **changes: object) -> None:
    if changes.get("status") in (
        Rendition.Status.READY,
        Rendition.Status.FAILED,
        Rendition.Status.UNAVAILABLE,
    ):
        changes["finished_at"] = timezone.now()
    for name, value in changes.items():
        setattr(rendition, name, value)
    with transaction.atomic():
        rendition.save(update_fields=list(changes))
        event: RenditionProgress = {
            "type": "documents.rendition_progress",
            "case_id": rendition.document.case_id,
            "document_id": rendition.document_id,
            "status": rendition.status,
            "page_count": rendition.page_count,
            "label": rendition.label,
        }
        publish_to_case(case_id=rendition.document.case_id, event=event)


# --- Productions -------------------------------------------------------------------------------


def production_page_counts(documents: Sequence[Document]) -> dict[int, int]:
    """Pages each document takes in a production, by id: a rendered kind's rendered pages,
    else its own. DomainError naming the document when a rendering is not ready."""
    rendered = [d.pk for d in documents if d.kind in rendering.RENDERED_KINDS]
    renditions = {r.document_id: r for r in Rendition.objects.filter(document_id__in=rendered)}
    counts = {}
    for document in documents:
        if document.kind not in rendering.RENDERED_KINDS:
            counts[document.pk] = document.page_count
            continue
        rendition = renditions.get(document.pk)
        if rendition is None or rendition.status in (
            Rendition.Status.QUEUED,
            Rendition.Status.PROCESSING,
        ):
            state = rendition.label if rendition else "not queued"
            raise DomainError(
                f"{document.filename} is not rendered to PDF yet ({state}); produce it once "
                "its rendering is ready."
            )
        if rendition.status != Rendition.Status.READY:
            raise DomainError(
                f"{document.filename} cannot be produced: {rendition.label}. Remove it from "
                "the production, or produce a PDF of it instead."
            )
        counts[document.pk] = rendition.page_count
    return counts


def document_file_to_stamp(document: Document) -> tuple[Path, str]:
    """The file to stamp for `document` and its kind: a rendered kind's ready rendition
    ("pdf"), else the original. DomainError when the rendition is not ready."""
    if document.kind not in rendering.RENDERED_KINDS:
        return storage.blob_path(document.blob.sha256), document.kind
    rendition = (
        Rendition.objects.select_related("output")
        .filter(document=document, status=Rendition.Status.READY)
        .first()
    )
    if rendition is None or rendition.output is None:
        raise DomainError(f"{document.filename} is not rendered to PDF yet.")
    return storage.blob_path(rendition.output.sha256), "pdf"


def rendered_page_texts(document: Document) -> list[str]:
    """The text of each page of a document's ready rendition (its text layer), in order."""
    rendition = Rendition.objects.select_related("output").get(
        document=document, status=Rendition.Status.READY
    )
    assert rendition.output is not None  # noqa: S101  (a ready rendition has its PDF)
    with pymupdf.open(storage.blob_path(rendition.output.sha256), filetype="pdf") as pdf:
        return [page.get_text() for page in pdf]
