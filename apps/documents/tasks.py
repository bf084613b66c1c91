from django.db import InterfaceError, OperationalError
from procrastinate import RetryStrategy
from procrastinate.contrib.django import app

from apps.documents import production_services, rendition_services, services
from apps.documents.storage import StorageFull
from lexweb.jobs import require_arg

# A full disk (StorageFull, or an OSError) or an unreadable file and a database that went away
# mid-job (OperationalError, InterfaceError: the job itself cannot record its failure then) are
# worth another try; every task here is safe to run again from the start. Anything else fails now.
_RETRY = RetryStrategy(
    max_attempts=3,
    exponential_wait=10,
    retry_exceptions={OSError, StorageFull, OperationalError, InterfaceError},
)


@app.task(
    name="documents.extract_text",
    queue="cpu",
    retry=_RETRY,
)
def document_extract_text_task(*, document_id: int) -> None:
    """Read the next LEXWEB_INGEST_BATCH_PAGES pages of a document from its text layer or
    Tesseract, and queue a job like this one for the rest (see services.document_extract_text).

    Idempotent and safe to re-run from the start: it continues after the stored pages. A no-op
    if the document was deleted or is already done.
    """
    require_arg(document_id, int, "document_id")
    services.document_extract_text(document_id=document_id)


@app.task(
    name="documents.stamp_production",
    queue="cpu",
    retry=_RETRY,
)
def production_stamp_task(*, production_id: int) -> None:
    """Merge and Bates-stamp a production. Idempotent; a missing production is a no-op."""
    require_arg(production_id, int, "production_id")
    production_services.production_stamp(production_id=production_id)


@app.task(name="documents.export_production", queue="cpu", retry=_RETRY)
def production_export_task(*, export_id: int) -> None:
    """Build a production's volume zip with load files. Idempotent."""
    require_arg(export_id, int, "export_id")
    production_services.production_export_build(export_id=export_id)


@app.task(name="documents.render", queue="cpu", retry=_RETRY)
def rendition_render_task(*, document_id: int) -> None:
    """Render a text file, e-mail, Word, Excel or Outlook document to PDF (see
    rendition_services.rendition_render). Idempotent; a missing document is a no-op."""
    require_arg(document_id, int, "document_id")
    rendition_services.rendition_render(document_id=document_id)
