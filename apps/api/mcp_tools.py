"""The MCP server's tools (apps/api/mcp.py serves them at /mcp), part one: cases, documents,
search, productions, packets, runs, drafts, findings, approval, export and the cluster; the
rest of the agent's desk is in mcp_tools_more.py. How a tool is made (the same services,
schemas and errors as its REST endpoint) is in mcp_core.py.
"""

import base64
import binascii
import io
from typing import Annotated

from django.conf import settings
from mcp.server.mcpserver import Context
from ninja import Schema
from pydantic import AliasChoices, Field

from apps.accounts.models import User
from apps.api.mcp_core import (
    After,
    Id,
    IdempotencyKey,
    NoNul,
    Wait,
    keyed_tool,
    run_async,
    run_sync,
    tool,
    tool_error,
)
from apps.cases import feed
from apps.cases import selectors as case_selectors
from apps.cases.schemas import CaseEventPageOut, CaseOut
from apps.cluster import selectors as cluster_selectors
from apps.cluster.schemas import ClusterStatusOut
from apps.documents import (
    production_selectors,
    production_services,
    provenance_selectors,
)
from apps.documents import selectors as document_selectors
from apps.documents import services as document_services
from apps.documents.models import Document
from apps.documents.schemas import (
    BatesHitOut,
    DocumentOut,
    ProducibleOut,
    ProductionDetailOut,
    ProductionIn,
    SearchFilter,
    SearchOut,
    UploadOut,
    bates_hit_out,
    producible_for_user,
    search_for_user,
)
from apps.drafting import run_stream
from apps.drafting import selectors as draft_selectors
from apps.drafting.schemas import (
    DraftDetailOut,
    DraftIn,
    ExportIn,
    GateOverrideIn,
    RunDetailOut,
    RunEventPageOut,
    RunIn,
    RunRejectIn,
    VersionDetailOut,
    VersionOut,
)
from apps.drafting.services import approval as approval_services
from apps.drafting.services import drafts as draft_services
from apps.drafting.services import exports, runs
from apps.evidence import schemas as packet_schemas
from apps.evidence.schemas import ItemOut, ItemsIn, PacketDetailOut, PacketIn
from apps.evidence.selectors import packets as packet_selectors
from apps.evidence.services import packets as packet_services
from apps.verification import schemas as verification_schemas
from apps.verification import selectors as verification_selectors
from apps.verification import services as verification_services
from apps.verification.schemas import FindingFilter, FindingOut, FindingsOut, VerificationOut

INSTRUCTIONS = """\
lexweb: a litigation practice's drafting desk. Every tool acts as the person whose API token
authorizes the connection, on the cases they are a member of (another case is "not_found").
A matter goes: cases_list -> documents_upload (base64) -> case_events (wait=60 until the
documents are "ready"; or documents_list) -> search / bates_lookup -> packet_create ->
packet_items_add -> packet_freeze -> run_start -> run_events (after=the last seq, wait=60,
until run.status says it finished or waits for approval) -> draft_get / version_get ->
version_verify -> findings_list -> finding_override (lawyer, with a reason) -> version_approve
-> version_export. Back at a matter later: runs_list (status="waiting_for_approval") and
drafts_list find earlier work. Tools that change something take an optional
`idempotency_key` (the REST API's Idempotency-Key: the same key and arguments answer the
first answer again). Errors end with JSON {detail, code, status}, the REST API's."""


# --- Cases, documents, search ----------------------------------------------------------------


@tool
async def cases_list(ctx: Context) -> list[CaseOut]:
    """The cases you are a member of."""
    return await run_sync(
        ctx,
        lambda user: [
            CaseOut.from_orm(case) for case in case_selectors.case_list_for_user(user=user)
        ],
    )


@tool
async def case_events(
    ctx: Context, case_id: Id, after: After = 0, wait: Wait = 0
) -> CaseEventPageOut:
    """The case's events numbered above `after` (ingest progress of uploads as
    `documents.progress`, productions, exports, verification), at most 1000; with `wait`, a long
    poll that answers at the first new one. Ask again with `after` = the last `seq`."""
    page = await run_async(
        ctx,
        lambda caller: feed.case_events_page(
            user=caller.user,
            access=caller.access(case_id),
            case_id=case_id,
            after=after,
            limit=case_selectors.MAX_EVENTS_PAGE,
            wait=wait,
            path=f"/api/v1/cases/{case_id}/events",
        ),
    )
    return CaseEventPageOut.model_validate(page)


@keyed_tool
async def documents_upload(
    ctx: Context,
    case_id: Id,
    filename: Annotated[str, Field(min_length=1, max_length=255), NoNul],
    content_base64: Annotated[str, Field(description="The file's bytes, base64 (RFC 4648).")],
    origin: Document.Origin,
    custodian: Annotated[str, Field(max_length=200), NoNul] = "",
    idempotency_key: IdempotencyKey = "",
) -> UploadOut:
    """Upload one file (PDF, image, text, e-mail, Word, Excel...) to the case, with its
    `origin`; at most LEXWEB_MAX_UPLOAD_BYTES once decoded (`too_large` above). The result
    says whether it was created, a duplicate, or refused and why; then wait for its `status`
    to be "ready" (case_events or documents_list)."""
    limit = settings.LEXWEB_MAX_UPLOAD_BYTES
    size = len(content_base64) * 3 // 4 - content_base64[-2:].count("=")
    if size > limit:
        raise tool_error(
            413, "too_large", f"The file is {size:,} bytes; the limit is {limit:,} bytes."
        )
    try:
        data = base64.b64decode(content_base64, validate=True)
    except (binascii.Error, ValueError):
        raise tool_error(
            422, "invalid", "content_base64 is not base64 (RFC 4648, no line breaks)."
        ) from None

    def work(user: User) -> UploadOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        summary = document_services.documents_upload(
            case=case,
            uploaded_by=user,
            files=[(filename, io.BytesIO(data))],
            origin=origin.value,
            custodian=custodian,
        )
        provenance_selectors.documents_load_provenance(
            [r.document for r in summary.results if r.document is not None], user=user
        )
        return UploadOut.from_orm(summary)

    return await run_sync(ctx, work)


@tool
async def documents_list(
    ctx: Context,
    case_id: Id,
    limit: Annotated[int, Field(strict=True, ge=1, le=200)] = 50,
    offset: Annotated[int, Field(strict=True, ge=0)] = 0,
) -> list[DocumentOut]:
    """The case's documents, newest first, with their ingest `status` (queued, processing,
    ready, failed), pages done and provenance."""

    def work(user: User) -> list[DocumentOut]:
        documents = provenance_selectors.documents_with_provenance(
            document_selectors.document_list_for_user(user=user, case_id=case_id), user=user
        )
        return [DocumentOut.from_orm(d) for d in documents[offset : offset + limit]]

    return await run_sync(ctx, work)


@tool
async def document_get(ctx: Context, case_id: Id, document_id: Id) -> DocumentOut:
    """One document with its ingest status and provenance."""

    def work(user: User) -> DocumentOut:
        document = document_selectors.document_get_for_user(
            user=user, case_id=case_id, document_id=document_id
        )
        provenance_selectors.documents_load_provenance([document], user=user)
        return DocumentOut.from_orm(document)

    return await run_sync(ctx, work)


@tool
async def search(ctx: Context, case_id: Id, filters: SearchFilter) -> SearchOut:
    """Full-text search over the case's pages, best first (`snippet` marks hits with <mark>)."""

    def work(user: User) -> SearchOut:
        return search_for_user(user=user, case_id=case_id, filters=filters)

    return await run_sync(ctx, work)


@tool
async def bates_lookup(
    ctx: Context,
    case_id: Id,
    reference: Annotated[str, Field(min_length=1, max_length=200), NoNul],
) -> list[BatesHitOut]:
    """The pages behind a Bates number (`ACME000014`) or range (`ACME000014-ACME000016`)."""

    def work(user: User) -> list[BatesHitOut]:
        hits = production_selectors.bates_lookup_for_user(
            user=user, case_id=case_id, reference=reference
        )
        return [bates_hit_out(hit, case_id=case_id) for hit in hits]

    return await run_sync(ctx, work)


@keyed_tool
async def production_create(
    ctx: Context,
    case_id: Id,
    body: ProductionIn,
    idempotency_key: IdempotencyKey = "",
) -> ProductionDetailOut:
    """Reserve Bates numbers for `document_ids` in that order and queue the stamping job
    (progress on case_events; production_get says when it is stamped). System-generated
    documents, those derived from them, registry-flagged documents and firm work product are
    refused (production_refused, each named; production_check asks first) unless a lawyer of
    the case lists each in `include` with a reason; `withhold` lists documents kept out, for
    the volume's privilege log."""

    def work(user: User) -> ProductionDetailOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        production = production_services.production_create(
            case=case, actor=user, **body.create_fields()
        )
        return ProductionDetailOut.from_orm(production)

    return await run_sync(ctx, work)


@tool
async def production_check(
    ctx: Context, case_id: Id, document_ids: Annotated[list[int], Field(max_length=1000)]
) -> list[ProducibleOut]:
    """Can these documents be produced? For each: refused outright and why, held back and why
    (a lawyer may include it with a reason: lawyer_may_include), else producible."""
    return await run_sync(
        ctx,
        lambda user: producible_for_user(user=user, case_id=case_id, document_ids=document_ids),
    )


@tool
async def production_get(ctx: Context, case_id: Id, production_id: Id) -> ProductionDetailOut:
    """A production with its status and its documents' Bates ranges."""
    return await run_sync(
        ctx,
        lambda user: ProductionDetailOut.from_orm(
            production_selectors.production_get_for_user(
                user=user, case_id=case_id, production_id=production_id
            )
        ),
    )


# --- Packets ---------------------------------------------------------------------------------


@keyed_tool
async def packet_create(
    ctx: Context,
    case_id: Id,
    body: PacketIn,
    idempotency_key: IdempotencyKey = "",
) -> PacketDetailOut:
    """Open a new, empty, editable evidence packet."""

    def work(user: User) -> PacketDetailOut:
        packet = packet_services.packet_create(
            user=user, case_id=case_id, title=body.title, purpose=body.purpose
        )
        return packet_schemas.packet_detail(packet, user=user)

    return await run_sync(ctx, work)


@tool
async def packet_get(ctx: Context, case_id: Id, packet_id: Id) -> PacketDetailOut:
    """The packet with its items, their provenance, flags and warnings."""

    def work(user: User) -> PacketDetailOut:
        packet = packet_selectors.packet_get_for_user(
            user=user, case_id=case_id, packet_id=packet_id
        )
        return packet_schemas.packet_detail(packet, user=user)

    return await run_sync(ctx, work)


@keyed_tool
async def packet_items_add(
    ctx: Context,
    case_id: Id,
    packet_id: Id,
    body: ItemsIn,
    idempotency_key: IdempotencyKey = "",
) -> list[ItemOut]:
    """Add selections (a document, a page or a page range, each with a reason), all or
    nothing; one that may not be evidence is `provenance_refused`."""

    def work(user: User) -> list[ItemOut]:
        items = packet_services.packet_items_add(
            user=user,
            case_id=case_id,
            packet_id=packet_id,
            selections=body.selections(),
        )
        packet = packet_selectors.packet_get_for_user(
            user=user, case_id=case_id, packet_id=packet_id
        )
        added = {item.pk for item in items}
        detail = packet_schemas.packet_detail(packet, user=user)
        return [item for item in detail.items if item.id in added]

    return await run_sync(ctx, work)


@keyed_tool
async def packet_freeze(
    ctx: Context,
    case_id: Id,
    packet_id: Id,
    idempotency_key: IdempotencyKey = "",
) -> PacketDetailOut:
    """Snapshot every page of the packet; it never changes again (runs and drafts need a
    frozen packet)."""

    def work(user: User) -> PacketDetailOut:
        packet = packet_services.packet_freeze(user=user, case_id=case_id, packet_id=packet_id)
        return packet_schemas.packet_detail(packet, user=user)

    return await run_sync(ctx, work)


# --- Runs ------------------------------------------------------------------------------------


class RunMcpOut(RunDetailOut):
    """RunDetailOut with `last_event` named as the REST API writes it (the SDK writes aliases)."""

    last_event: int = Field(validation_alias=AliasChoices("last_event", "event_seq"))


def _run(user: User, case_id: int, run_id: int) -> RunMcpOut:
    return RunMcpOut.from_orm(
        draft_selectors.run_get_for_user(user=user, case_id=case_id, run_id=run_id)
    )


@tool
async def run_start(
    ctx: Context,
    case_id: Id,
    body: RunIn,
    idempotency_key: Annotated[
        str,
        Field(
            max_length=200,
            description="Your id for this run: the same key again answers that run instead "
            "of starting another.",
        ),
        NoNul,
    ] = "",
) -> RunMcpOut:
    """Queue a drafting run (motion, affidavit, summary, financial extraction) over a frozen
    packet; follow it with run_events."""

    def work(user: User) -> RunMcpOut:
        run, _ = runs.run_start(
            user=user,
            case_id=case_id,
            request=body.run_request(),
            idempotency_key=idempotency_key,
        )
        return _run(user, case_id, run.pk)

    return await run_sync(ctx, work)


@tool
async def run_get(ctx: Context, case_id: Id, run_id: Id) -> RunMcpOut:
    """The run with its status, its stages and their chain of custody."""
    return await run_sync(ctx, lambda user: _run(user, case_id, run_id))


@tool
async def run_events(
    ctx: Context, case_id: Id, run_id: Id, after: After = 0, wait: Wait = 0
) -> RunEventPageOut:
    """The run's events numbered above `after`, at most 1000; with `wait`, a long poll that
    answers at the first new one (at once when the run is finished). Ask again with `after` =
    the last `seq` until `run.status` says it finished or waits for approval."""
    page = await run_async(
        ctx,
        lambda caller: run_stream.run_events_page(
            user=caller.user,
            access=caller.access(case_id),
            case_id=case_id,
            run_id=run_id,
            after=after,
            limit=draft_selectors.MAX_EVENTS_PAGE,
            wait=wait,
            path=f"/api/v1/cases/{case_id}/runs/{run_id}/events",
        ),
    )
    return RunEventPageOut.model_validate(page)


@keyed_tool
async def run_cancel(
    ctx: Context,
    case_id: Id,
    run_id: Id,
    idempotency_key: IdempotencyKey = "",
) -> RunMcpOut:
    """Cancel a queued, running or gate-stopped run (`run_finished` if it already ended)."""

    def work(user: User) -> RunMcpOut:
        runs.run_cancel(user=user, case_id=case_id, run_id=run_id)
        return _run(user, case_id, run_id)

    return await run_sync(ctx, work)


@keyed_tool
async def run_reject(
    ctx: Context,
    case_id: Id,
    run_id: Id,
    body: RunRejectIn,
    idempotency_key: IdempotencyKey = "",
) -> RunMcpOut:
    """A lawyer rejects a run waiting for approval, with a reason (10 to 5000 characters);
    its versions stay, marked rejected."""

    def work(user: User) -> RunMcpOut:
        runs.run_reject(user=user, case_id=case_id, run_id=run_id, reason=body.reason)
        return _run(user, case_id, run_id)

    return await run_sync(ctx, work)


@keyed_tool
async def run_gate_override(
    ctx: Context,
    case_id: Id,
    run_id: Id,
    body: GateOverrideIn,
    idempotency_key: IdempotencyKey = "",
) -> RunMcpOut:
    """A lawyer goes on past a gate that said "no" or "insufficient", with a reason."""

    def work(user: User) -> RunMcpOut:
        runs.run_gate_override(user=user, case_id=case_id, run_id=run_id, reason=body.reason)
        return _run(user, case_id, run_id)

    return await run_sync(ctx, work)


# --- Drafts, findings, approval, export ------------------------------------------------------


@keyed_tool
async def draft_create(
    ctx: Context,
    case_id: Id,
    body: DraftIn,
    idempotency_key: IdempotencyKey = "",
) -> DraftDetailOut:
    """A new draft checked against a frozen packet, its pasted text as version 1."""

    def work(user: User) -> DraftDetailOut:
        draft = draft_services.draft_create(
            user=user,
            case_id=case_id,
            title=body.title,
            kind=body.kind,
            packet_id=body.packet_id,
            content=draft_services.pasted_content(text=body.text, media_type=body.media_type),
        )
        return DraftDetailOut.from_orm(
            draft_selectors.draft_get_for_user(user=user, case_id=case_id, draft_id=draft.pk)
        )

    return await run_sync(ctx, work)


@tool
async def draft_get(ctx: Context, case_id: Id, draft_id: Id) -> DraftDetailOut:
    """The draft with its packet and its versions (without their text)."""
    return await run_sync(
        ctx,
        lambda user: DraftDetailOut.from_orm(
            draft_selectors.draft_get_for_user(user=user, case_id=case_id, draft_id=draft_id)
        ),
    )


@tool
async def version_get(ctx: Context, case_id: Id, draft_id: Id, number: Id) -> VersionDetailOut:
    """One version of a draft with its text (the findings' offsets point into it)."""
    return await run_sync(
        ctx,
        lambda user: VersionDetailOut.from_orm(
            draft_selectors.version_get_for_user(
                user=user, case_id=case_id, draft_id=draft_id, number=number
            )
        ),
    )


@keyed_tool
async def version_verify(
    ctx: Context,
    case_id: Id,
    draft_id: Id,
    number: Id,
    idempotency_key: IdempotencyKey = "",
) -> VerificationOut:
    """Queue a verification of the version against its frozen packet (progress on
    case_events; findings_list once it finished)."""
    return await run_sync(
        ctx,
        lambda user: VerificationOut.from_orm(
            verification_services.verification_request(
                user=user, case_id=case_id, draft_id=draft_id, number=number
            )
        ),
    )


@tool
async def findings_list(
    ctx: Context,
    case_id: Id,
    draft_id: Id,
    number: Id,
    filters: FindingFilter | None = None,
) -> FindingsOut:
    """The findings of the version's newest verification; `blocking` counts those that stop
    approval until fixed or overridden."""

    def work(user: User) -> FindingsOut:
        found = verification_selectors.findings_for_user(
            user=user, case_id=case_id, draft_id=draft_id, number=number
        )
        return verification_schemas.findings_out(found, only=filters)

    return await run_sync(ctx, work)


@keyed_tool
async def finding_override(
    ctx: Context,
    case_id: Id,
    draft_id: Id,
    number: Id,
    finding_id: Id,
    body: verification_schemas.OverrideIn,
    idempotency_key: IdempotencyKey = "",
) -> FindingOut:
    """A lawyer lets one unsupported or contradicted finding stand, with a written reason."""

    def work(user: User) -> FindingOut:
        override = verification_services.finding_override(
            user=user,
            case_id=case_id,
            draft_id=draft_id,
            number=number,
            finding_id=finding_id,
            reason=body.reason,
        )
        return verification_schemas.finding_out(override.finding)

    return await run_sync(ctx, work)


@keyed_tool
async def version_approve(
    ctx: Context,
    case_id: Id,
    draft_id: Id,
    number: Id,
    idempotency_key: IdempotencyKey = "",
) -> VersionOut:
    """A lawyer approves the version (`unsupported_findings` while a finding blocks)."""
    return await run_sync(
        ctx,
        lambda user: VersionOut.from_orm(
            approval_services.version_approve(
                user=user, case_id=case_id, draft_id=draft_id, number=number
            )
        ),
    )


class ExportedFileOut(Schema):
    """An exported version: the file (base64) and what it was registered as."""

    filename: str
    media_type: str
    size: int
    artifact_id: int
    document_id: int | None
    content_base64: str


@keyed_tool
async def version_export(
    ctx: Context,
    case_id: Id,
    draft_id: Id,
    number: Id,
    body: ExportIn,
    idempotency_key: IdempotencyKey = "",
) -> ExportedFileOut:
    """The version as a Word document or a PDF (base64), registered as a generated artifact;
    refused (`not_verified`, `unsupported_findings`) as the approval rule says."""

    def work(user: User) -> ExportedFileOut:
        export = exports.version_export(
            user=user, case_id=case_id, draft_id=draft_id, number=number, format=body.format
        )
        return ExportedFileOut(
            filename=export.filename,
            media_type=export.media_type,
            size=len(export.data),
            artifact_id=export.artifact.pk,
            document_id=export.document.pk if export.document is not None else None,
            content_base64=base64.b64encode(export.data).decode("ascii"),
        )

    return await run_sync(ctx, work)


@tool
async def cluster_status(ctx: Context) -> ClusterStatusOut:
    """The cluster as the dashboard shows it: hosts, boards and GPUs, backends, deployments."""
    return await run_sync(
        ctx, lambda user: ClusterStatusOut.from_orm(cluster_selectors.dashboard_get())
    )
