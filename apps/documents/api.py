from django.db.models import QuerySet
from django.http import HttpResponse
from ninja import File, Form, Query, Router, Status
from ninja.files import UploadedFile
from ninja.pagination import paginate

from apps.accounts.types import AuthedRequest
from apps.cases import selectors as case_selectors
from apps.documents import (
    extraction,
    production_selectors,
    production_services,
    provenance_selectors,
    selectors,
    services,
    storage,
    viewer_selectors,
)
from apps.documents.evidence_hooks import evidence
from apps.documents.models import Document, Page, Production, ProductionExport
from apps.documents.schemas import (
    BatesHitOut,
    DocumentOut,
    ExportIn,
    ExportOut,
    FlagClearIn,
    HitBoxesOut,
    PageOut,
    ProducibleFilter,
    ProducibleOut,
    ProductionDetailOut,
    ProductionIn,
    ProductionOut,
    SearchFilter,
    SearchOut,
    UploadOut,
    bates_hit_out,
    producible_for_user,
    search_for_user,
)
from lexweb.api_schemas import ErrorOut, ObjectId, file_response_doc
from lexweb.downloads import FileDownload

router = Router(tags=["documents"])

_ERRORS = {400: ErrorOut, 404: ErrorOut, 413: ErrorOut}
THUMB_DPI = 18  # a letter page 153 x 198 pixels


# 400 is UploadOut (every file refused, each with its reason); it must come after _ERRORS, whose
# 400 would otherwise replace it. Request-level 400s are built by the API's error handlers.
@router.post(
    "/cases/{case_id}/documents",
    response={**_ERRORS, 507: ErrorOut, 201: UploadOut, 400: UploadOut},
)
def upload_documents(
    request: AuthedRequest,
    case_id: ObjectId,
    files: File[list[UploadedFile]],
    origin: Form[Document.Origin],
    custodian: Form[str] = "",
) -> Status[services.UploadSummary]:
    """Upload one or more files (multipart field `files`, repeated) with their `origin`.

    Each file succeeds or fails on its own: 201 if any file went in (or was already there),
    400 if none did; `results` says what happened to each, in order. A request-level refusal
    (no files, too many, an origin people may not choose: "system_generated" is set only by
    lexweb) is one 400 `{detail, code}` and stores nothing. A full store is 507 `storage_full`:
    the file it reached was not kept, those before it were (sent again, they answer duplicate).
    """
    case = case_selectors.case_get_for_user(user=request.auth, case_id=case_id)
    summary = services.documents_upload(
        case=case,
        uploaded_by=request.auth,
        files=[(upload.name or "upload", upload) for upload in files],
        origin=origin.value,
        custodian=custodian,
    )
    provenance_selectors.documents_load_provenance(
        [outcome.document for outcome in summary.results if outcome.document is not None],
        user=request.auth,
    )
    return Status(400 if summary.errors == len(summary.results) else 201, summary)


@router.get("/cases/{case_id}/documents", response=list[DocumentOut])
@paginate
def list_documents(request: AuthedRequest, case_id: ObjectId) -> QuerySet[Document]:
    """The case's documents, newest first, each with its provenance: `origin` and `untrusted`
    (opposing party, third party), the registry's verdict `provenance` (pending while the text
    is still being checked, clear, flagged) with the `matches` behind a flag, `derived_from`
    (lineage) and `production_volume` for a stamped volume."""
    return provenance_selectors.documents_with_provenance(
        selectors.document_list_for_user(user=request.auth, case_id=case_id), user=request.auth
    )


@router.get("/cases/{case_id}/documents/{document_id}", response={200: DocumentOut, 404: ErrorOut})
def get_document(request: AuthedRequest, case_id: ObjectId, document_id: ObjectId) -> Document:
    document = selectors.document_get_for_user(
        user=request.auth, case_id=case_id, document_id=document_id
    )
    provenance_selectors.documents_load_provenance([document], user=request.auth)
    return document


@router.post(
    "/cases/{case_id}/documents/{document_id}/flag-clearance",
    response={201: DocumentOut, 400: ErrorOut, 403: ErrorOut, 404: ErrorOut, 409: ErrorOut},
)
def clear_flag(
    request: AuthedRequest, case_id: ObjectId, document_id: ObjectId, payload: FlagClearIn
) -> Status[Document]:
    """A lawyer of the case clears the registry's flag on a document with a written `reason`
    (issue 20 req 8): audited, and shown for good in `flag_clearances`; the document is clear
    and packets take it again. 403 `lawyer_required` for staff (and their tokens); 404 for
    non-members; 409 `generated_lineage` (system generated, or derived from something
    generated), `generated_bytes` (its bytes are a generated file's), `not_flagged`,
    `flag_already_cleared`; 400 `reason_invalid`. Answers the document."""
    evidence().flag_clear(
        user=request.auth, case_id=case_id, document_id=document_id, reason=payload.reason
    )
    document = selectors.document_get_for_user(
        user=request.auth, case_id=case_id, document_id=document_id
    )
    provenance_selectors.documents_load_provenance([document], user=request.auth)
    return Status(201, document)


@router.get(
    "/cases/{case_id}/documents/{document_id}/original",
    response={404: ErrorOut},
    openapi_extra=file_response_doc("*/*", "The original file, of its own media type."),
)
def download_original(
    request: AuthedRequest, case_id: ObjectId, document_id: ObjectId
) -> FileDownload:
    """The original file, byte for byte as uploaded. Every download is audited."""
    document = selectors.document_original_for_user(
        user=request.auth, case_id=case_id, document_id=document_id
    )
    return FileDownload(
        storage.blob_open(document.blob.sha256),
        as_attachment=True,
        filename=document.filename,
        content_type=document.content_type,
    )


@router.get("/cases/{case_id}/documents/{document_id}/pages", response=list[PageOut])
@paginate
def list_pages(request: AuthedRequest, case_id: ObjectId, document_id: ObjectId) -> QuerySet[Page]:
    return selectors.page_list_for_user(user=request.auth, case_id=case_id, document_id=document_id)


@router.get(
    "/cases/{case_id}/documents/{document_id}/pages/{number}/image",
    response={404: ErrorOut, 503: ErrorOut},
    openapi_extra=file_response_doc("image/png", "The page as a PNG image."),
)
def page_image(
    request: AuthedRequest,
    case_id: ObjectId,
    document_id: ObjectId,
    number: ObjectId,
    dpi: int = Query(100, ge=36, le=300),
    thumb: bool = False,
) -> HttpResponse:
    """The page rendered as PNG. Text files, e-mails, Word, Excel and Outlook documents show
    the pages of their rendering to PDF (404 saying so while it is not ready). `thumb`:
    a thumbnail, rendered at THUMB_DPI whatever `dpi` says. 503 `page_images_busy` with
    Retry-After when the server is already drawing LEXWEB_PAGE_IMAGE_CONCURRENCY page images
    and none finished within LEXWEB_PAGE_IMAGE_WAIT_SECONDS."""
    source = selectors.page_image_source_for_user(
        user=request.auth, case_id=case_id, document_id=document_id, number=number
    )
    png = extraction.page_png(
        source.path, kind=source.kind, number=source.number, dpi=THUMB_DPI if thumb else dpi
    )
    return HttpResponse(png, content_type="image/png")


@router.get(
    "/cases/{case_id}/documents/{document_id}/pages/{number}/hits",
    response={200: HitBoxesOut, **_ERRORS},
)
def page_hits(
    request: AuthedRequest,
    case_id: ObjectId,
    document_id: ObjectId,
    number: ObjectId,
    q: str = Query(..., max_length=selectors.MAX_QUERY_LENGTH),
) -> viewer_selectors.HitBoxes:
    """Where the words a search `q` matches are on the page: boxes `[x0, y0, x1, y1]` as
    fractions of the page's width and height (draw them over the page image at any size),
    from the stored OCR words or the PDF's text layer; at most 300, `truncated` when more
    matched. Matching is the search's own (stemmed English; negated words are not boxed)."""
    return viewer_selectors.page_hit_boxes_for_user(
        user=request.auth, case_id=case_id, document_id=document_id, number=number, query=q
    )


@router.get("/cases/{case_id}/search", response={200: SearchOut, 400: ErrorOut, 404: ErrorOut})
def search(request: AuthedRequest, case_id: ObjectId, filters: Query[SearchFilter]) -> SearchOut:
    """Full-text search over the case's pages, best first; `snippet` marks hits with <mark>.

    `capped` is true when the query matched more than 1,000 pages: the hits are then the best
    of the first 1,000 (in upload order), and a narrower query gives better ranking.
    """
    return search_for_user(user=request.auth, case_id=case_id, filters=filters)


# --- Productions and the Bates index -----------------------------------------------------------


@router.post(
    "/cases/{case_id}/productions", response={201: ProductionDetailOut, **_ERRORS, 409: ErrorOut}
)
def create_production(
    request: AuthedRequest, case_id: ObjectId, payload: ProductionIn
) -> Status[Production]:
    """Reserve Bates numbers for `document_ids` in that order and queue the stamping job."""
    case = case_selectors.case_get_for_user(user=request.auth, case_id=case_id)
    production = production_services.production_create(
        case=case, actor=request.auth, **payload.create_fields()
    )
    return Status(201, production)


@router.get("/cases/{case_id}/productions", response=list[ProductionOut])
@paginate
def list_productions(request: AuthedRequest, case_id: ObjectId) -> QuerySet[Production]:
    return production_selectors.production_list_for_user(user=request.auth, case_id=case_id)


# Before productions/{production_id}, which would take "check" for an id.
@router.get(
    "/cases/{case_id}/productions/check",
    response={200: list[ProducibleOut], 404: ErrorOut},
)
def check_producible(
    request: AuthedRequest, case_id: ObjectId, filters: Query[ProducibleFilter]
) -> list[ProducibleOut]:
    """Can these documents be produced, and if not, why (the order screen's column)."""
    return producible_for_user(
        user=request.auth, case_id=case_id, document_ids=filters.document_ids
    )


@router.get(
    "/cases/{case_id}/productions/{production_id}",
    response={200: ProductionDetailOut, 404: ErrorOut},
)
def get_production(
    request: AuthedRequest, case_id: ObjectId, production_id: ObjectId
) -> Production:
    return production_selectors.production_get_for_user(
        user=request.auth, case_id=case_id, production_id=production_id
    )


@router.get(
    "/cases/{case_id}/productions/{production_id}/pdf",
    response={404: ErrorOut, 409: ErrorOut},
    openapi_extra=file_response_doc("application/pdf", "The stamped volume."),
)
def download_production(
    request: AuthedRequest, case_id: ObjectId, production_id: ObjectId
) -> FileDownload:
    """The stamped volume as one PDF (409 until stamping has finished)."""
    production = production_selectors.production_volume_for_user(
        user=request.auth, case_id=case_id, production_id=production_id
    )
    assert production.output is not None  # noqa: S101  (the selector refuses a volume without)
    return FileDownload(
        storage.blob_open(production.output.sha256),
        as_attachment=True,
        filename=f"{production.volume}.pdf",
        content_type="application/pdf",
    )


@router.get("/cases/{case_id}/bates/{reference}", response={200: list[BatesHitOut], **_ERRORS})
def bates_lookup(request: AuthedRequest, case_id: ObjectId, reference: str) -> list[BatesHitOut]:
    """The pages behind a Bates number (`ACME000014`) or range (`ACME000014-ACME000016`)."""
    hits = production_selectors.bates_lookup_for_user(
        user=request.auth, case_id=case_id, reference=reference
    )
    return [bates_hit_out(hit, case_id=case_id) for hit in hits]


@router.post(
    "/cases/{case_id}/productions/{production_id}/exports",
    response={202: ExportOut, **_ERRORS, 409: ErrorOut},
)
def request_export(
    request: AuthedRequest, case_id: ObjectId, production_id: ObjectId, payload: ExportIn
) -> Status[ProductionExport]:
    """Queue the volume zip: stamped PDF, Group IV TIFFs, text, Concordance .dat, Opticon .opt."""
    production = production_selectors.production_get_for_user(
        user=request.auth, case_id=case_id, production_id=production_id
    )
    export = production_services.production_export_request(
        production=production,
        actor=request.auth,
        encoding=payload.encoding.value,
        image_dpi=payload.image_dpi,
    )
    return Status(202, export)


@router.get(
    "/cases/{case_id}/productions/{production_id}/exports/{export_id}",
    response={200: ExportOut, 404: ErrorOut},
)
def get_export(
    request: AuthedRequest, case_id: ObjectId, production_id: ObjectId, export_id: ObjectId
) -> ProductionExport:
    return production_selectors.export_get_for_user(
        user=request.auth, case_id=case_id, production_id=production_id, export_id=export_id
    )


@router.get(
    "/cases/{case_id}/productions/{production_id}/exports/{export_id}/zip",
    response={404: ErrorOut, 409: ErrorOut},
    openapi_extra=file_response_doc("application/zip", "The export's load file set."),
)
def download_export(
    request: AuthedRequest, case_id: ObjectId, production_id: ObjectId, export_id: ObjectId
) -> FileDownload:
    export = production_selectors.export_zip_for_user(
        user=request.auth, case_id=case_id, production_id=production_id, export_id=export_id
    )
    assert export.output is not None  # noqa: S101  (the selector refuses an export without)
    return FileDownload(
        storage.blob_open(export.output.sha256),
        as_attachment=True,
        filename=f"{export.production.volume}.zip",
        content_type="application/zip",
    )
