"""The MCP server's tools, part two (part one is mcp_tools.py; how a tool is made is in
mcp_core.py): cases and their members, the review list (tags, withdraw, restore), clearing a
registry flag, productions' exports and volumes, packet versions and their comparison, the
lists of runs and of drafts, draft versions and their diffs, and a financial extraction's
transactions CSV.

A file (an export's zip, a stamped volume, the CSV) comes as `FileOut`: its bytes base64 in
`content_base64` when it is at most INLINE_BYTES, else null, with `download_path`, the REST
API's path for the same file (GET it with the same bearer token; access and audit are the
same).
"""

import base64
from collections.abc import Callable
from typing import Annotated, Any, Protocol

from mcp.server.mcpserver import Context
from ninja import Schema
from pydantic import AliasChoices, Field

from apps.accounts.models import User
from apps.api.mcp_core import Id, IdempotencyKey, NoNul, keyed_tool, run_sync, tool
from apps.cases import selectors as case_selectors
from apps.cases import services as case_services
from apps.cases.schemas import CaseIn, CaseOut, CasePatch, MemberIn, MemberOut, MemberPatch
from apps.documents import (
    production_selectors,
    production_services,
    provenance_selectors,
    review_services,
    storage,
)
from apps.documents import schemas as document_schemas
from apps.documents import selectors as document_selectors
from apps.documents.review_schemas import (
    TaggedOut,
    TagIn,
    TagOut,
    UntaggedOut,
    UntagIn,
    WithdrawIn,
    WithdrawnOut,
)
from apps.drafting import diff_selectors
from apps.drafting import selectors as draft_selectors
from apps.drafting.models import Run
from apps.drafting.schemas import DraftOut, RunOut, VersionDetailOut, VersionDiffOut, VersionIn
from apps.drafting.services import drafts as draft_services
from apps.drafting.services import transactions
from apps.evidence import schemas as packet_schemas
from apps.evidence.schemas import MAX_REASON_CHARS, ComparisonOut, PacketDetailOut, PacketOut
from apps.evidence.selectors import packets as packet_selectors
from apps.evidence.services import clearance as clearance_services
from apps.evidence.services import packets as packet_services

INLINE_BYTES = 4 * 1024 * 1024  # a file larger than this comes as its download_path only
API = "/api/v1"

Limit = Annotated[int, Field(strict=True, ge=1, le=200)]
Offset = Annotated[int, Field(strict=True, ge=0, le=1_000_000_000)]
# A draft's version number as the REST diff takes `against` (1 to 2**31 - 1).
VersionNumber = Annotated[int, Field(strict=True, ge=1, le=2**31 - 1)]


class FileOut(Schema):
    """A file: its bytes (base64) when at most INLINE_BYTES, and where the REST API serves it."""

    filename: str
    media_type: str
    size: int
    download_path: str = Field(
        description="The REST API's path of this file: GET it with the same bearer token."
    )
    content_base64: str | None = Field(
        description="The file's bytes, base64; null when the file is over the inline limit "
        "(4 MiB): download it from download_path."
    )
    artifact_id: int | None = None


class MemberRemovedOut(Schema):
    user_id: int
    removed: bool


def _file(*, filename: str, media_type: str, path: str, data: bytes | None, size: int) -> FileOut:
    inline = data if data is not None and size <= INLINE_BYTES else None
    return FileOut(
        filename=filename,
        media_type=media_type,
        size=size,
        download_path=path,
        content_base64=base64.b64encode(inline).decode("ascii") if inline is not None else None,
    )


class _Built(Protocol):
    output: Any  # the stored blob; None until built


def _stored_file(
    found: _Built, download: Callable[[], _Built], *, filename: str, media_type: str, path: str
) -> FileOut:
    """A stored file's answer: its bytes when at most INLINE_BYTES, read through the download's
    selector (audited as a download; it refuses a file not built yet, `conflict`), else only its
    REST download path (`found` came from the view's selector)."""
    data = None
    if found.output is None or found.output.size <= INLINE_BYTES:
        found = download()
        with storage.blob_open(found.output.sha256) as source:
            data = source.read()
    return _file(
        filename=filename, media_type=media_type, path=path, data=data, size=found.output.size
    )


# --- Cases and members -----------------------------------------------------------------------


@keyed_tool
async def case_create(ctx: Context, body: CaseIn, idempotency_key: IdempotencyKey = "") -> CaseOut:
    """Open a case (lawyers and admins); you become its first member."""
    return await run_sync(
        ctx, lambda user: CaseOut.from_orm(case_services.case_create(actor=user, **body.dict()))
    )


@tool
async def case_get(ctx: Context, case_id: Id) -> CaseOut:
    """One case you are a member of."""

    def work(user: User) -> CaseOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        case_selectors.case_view_for_user(user=user, case=case)
        return CaseOut.from_orm(case)

    return await run_sync(ctx, work)


@keyed_tool
async def case_update(
    ctx: Context, case_id: Id, body: CasePatch, idempotency_key: IdempotencyKey = ""
) -> CaseOut:
    """Change the case's title, number, client, court or status (the fields sent)."""

    def work(user: User) -> CaseOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        return CaseOut.from_orm(
            case_services.case_update(actor=user, case=case, changes=body.changes())
        )

    return await run_sync(ctx, work)


@tool
async def members_list(
    ctx: Context, case_id: Id, limit: Limit = 50, offset: Offset = 0
) -> list[MemberOut]:
    """Who works on the case, with their roles."""

    def work(user: User) -> list[MemberOut]:
        members = case_selectors.membership_list_for_user(user=user, case_id=case_id)
        return [MemberOut.from_orm(m) for m in members[offset : offset + limit]]

    return await run_sync(ctx, work)


@keyed_tool
async def member_add(
    ctx: Context, case_id: Id, body: MemberIn, idempotency_key: IdempotencyKey = ""
) -> MemberOut:
    """Add a person (by e-mail) to the case as lawyer or staff (a lawyer of the case may)."""

    def work(user: User) -> MemberOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        return MemberOut.from_orm(
            case_services.member_add(actor=user, case=case, email=body.email, role=body.role)
        )

    return await run_sync(ctx, work)


@keyed_tool
async def member_change_role(
    ctx: Context,
    case_id: Id,
    user_id: Id,
    body: MemberPatch,
    idempotency_key: IdempotencyKey = "",
) -> MemberOut:
    """Make a member lawyer or staff of the case."""

    def work(user: User) -> MemberOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        return MemberOut.from_orm(
            case_services.member_change_role(actor=user, case=case, user_id=user_id, role=body.role)
        )

    return await run_sync(ctx, work)


@keyed_tool
async def member_remove(
    ctx: Context, case_id: Id, user_id: Id, idempotency_key: IdempotencyKey = ""
) -> MemberRemovedOut:
    """Take a member off the case (never its last lawyer); their streams close."""

    def work(user: User) -> MemberRemovedOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        case_services.member_remove(actor=user, case=case, user_id=user_id)
        return MemberRemovedOut(user_id=user_id, removed=True)

    return await run_sync(ctx, work)


# --- The review list and flags ---------------------------------------------------------------


@tool
async def tags_list(ctx: Context, case_id: Id) -> list[TagOut]:
    """The case's tags, by name."""
    return await run_sync(
        ctx,
        lambda user: [
            TagOut.from_tag(tag)
            for tag in document_selectors.tag_list_for_user(user=user, case_id=case_id)
        ],
    )


@keyed_tool
async def documents_tag(
    ctx: Context, case_id: Id, body: TagIn, idempotency_key: IdempotencyKey = ""
) -> TaggedOut:
    """Put the tag `name` on the documents (made in this case if new; names match without
    regard to case). All the documents must be in this case."""

    def work(user: User) -> TaggedOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        tag, added = review_services.documents_tag(
            actor=user, case=case, document_ids=body.document_ids, name=body.name
        )
        return TaggedOut(tag=TagOut.from_tag(tag), added=added)

    return await run_sync(ctx, work)


@keyed_tool
async def documents_untag(
    ctx: Context, case_id: Id, body: UntagIn, idempotency_key: IdempotencyKey = ""
) -> UntaggedOut:
    """Take the case's tag `tag_id` off the documents."""

    def work(user: User) -> UntaggedOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        removed = review_services.documents_untag(
            actor=user, case=case, document_ids=body.document_ids, tag_id=body.tag_id
        )
        return UntaggedOut(removed=removed)

    return await run_sync(ctx, work)


@keyed_tool
async def documents_withdraw(
    ctx: Context, case_id: Id, body: WithdrawIn, idempotency_key: IdempotencyKey = ""
) -> list[WithdrawnOut]:
    """Withdraw wrong uploads, all or none, for a written reason: out of lists, search and
    new packets and productions; the originals are kept. 409 for one already withdrawn, in a
    packet or in a production."""

    def work(user: User) -> list[WithdrawnOut]:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        documents = review_services.documents_withdraw(
            actor=user, case=case, document_ids=body.document_ids, reason=body.reason
        )
        return [WithdrawnOut.from_document(document) for document in documents]

    return await run_sync(ctx, work)


@keyed_tool
async def document_restore(
    ctx: Context, case_id: Id, document_id: Id, idempotency_key: IdempotencyKey = ""
) -> WithdrawnOut:
    """Bring a withdrawn document back (409 if it is not withdrawn)."""

    def work(user: User) -> WithdrawnOut:
        case = case_selectors.case_get_for_user(user=user, case_id=case_id)
        return WithdrawnOut.from_document(
            review_services.document_restore(actor=user, case=case, document_id=document_id)
        )

    return await run_sync(ctx, work)


@keyed_tool
async def document_flag_clear(
    ctx: Context,
    case_id: Id,
    document_id: Id,
    body: document_schemas.FlagClearIn,
    idempotency_key: IdempotencyKey = "",
) -> document_schemas.DocumentOut:
    """A lawyer of the case clears the registry's flag on a document with a written reason
    (10 to 2,000 characters): audited, shown for good in `flag_clearances`. Staff:
    `lawyer_required`; never for generated lineage or bytes."""

    def work(user: User) -> document_schemas.DocumentOut:
        clearance_services.document_flag_clear(
            user=user, case_id=case_id, document_id=document_id, reason=body.reason
        )
        document = document_selectors.document_get_for_user(
            user=user, case_id=case_id, document_id=document_id
        )
        provenance_selectors.documents_load_provenance([document], user=user)
        return document_schemas.DocumentOut.from_orm(document)

    return await run_sync(ctx, work)


# --- Productions: the list, exports, the stamped volume --------------------------------------


@tool
async def productions_list(
    ctx: Context, case_id: Id, limit: Limit = 50, offset: Offset = 0
) -> list[document_schemas.ProductionOut]:
    """The case's productions, newest first."""

    def work(user: User) -> list[document_schemas.ProductionOut]:
        productions = production_selectors.production_list_for_user(user=user, case_id=case_id)
        return [
            document_schemas.ProductionOut.from_orm(p) for p in productions[offset : offset + limit]
        ]

    return await run_sync(ctx, work)


def _production_path(case_id: int, production_id: int) -> str:
    return f"{API}/cases/{case_id}/productions/{production_id}"


@tool
async def production_volume(ctx: Context, case_id: Id, production_id: Id) -> FileOut:
    """The stamped volume as one PDF (`conflict` until stamping has finished)."""

    def work(user: User) -> FileOut:
        where = {"case_id": case_id, "production_id": production_id}
        production = production_selectors.production_get_for_user(user=user, **where)
        return _stored_file(
            production,
            lambda: production_selectors.production_volume_for_user(user=user, **where),
            filename=f"{production.volume}.pdf",
            media_type="application/pdf",
            path=f"{_production_path(case_id, production_id)}/pdf",
        )

    return await run_sync(ctx, work)


@keyed_tool
async def production_export_create(
    ctx: Context,
    case_id: Id,
    production_id: Id,
    body: document_schemas.ExportIn,
    idempotency_key: IdempotencyKey = "",
) -> document_schemas.ExportOut:
    """Queue the volume's zip (stamped PDF, Group IV TIFFs, text, Concordance .dat, Opticon
    .opt, privilege log); production_export_get says when it is ready."""

    def work(user: User) -> document_schemas.ExportOut:
        production = production_selectors.production_get_for_user(
            user=user, case_id=case_id, production_id=production_id
        )
        export = production_services.production_export_request(
            production=production,
            actor=user,
            encoding=body.encoding.value,
            image_dpi=body.image_dpi,
        )
        return document_schemas.ExportOut.from_orm(export)

    return await run_sync(ctx, work)


@tool
async def production_export_get(
    ctx: Context, case_id: Id, production_id: Id, export_id: Id
) -> document_schemas.ExportOut:
    """One export of a production: its status and settings."""
    return await run_sync(
        ctx,
        lambda user: document_schemas.ExportOut.from_orm(
            production_selectors.export_get_for_user(
                user=user, case_id=case_id, production_id=production_id, export_id=export_id
            )
        ),
    )


@tool
async def production_export_download(
    ctx: Context, case_id: Id, production_id: Id, export_id: Id
) -> FileOut:
    """The export's zip (`conflict` until it is built): base64 when at most 4 MiB, else its
    download_path on the REST API."""

    def work(user: User) -> FileOut:
        where = {"case_id": case_id, "production_id": production_id, "export_id": export_id}
        export = production_selectors.export_get_for_user(user=user, **where)
        return _stored_file(
            export,
            lambda: production_selectors.export_zip_for_user(user=user, **where),
            filename=f"{export.production.volume}.zip",
            media_type="application/zip",
            path=f"{_production_path(case_id, production_id)}/exports/{export_id}/zip",
        )

    return await run_sync(ctx, work)


# --- Packets: the list, item removal, versions, comparison -----------------------------------


@tool
async def packets_list(
    ctx: Context, case_id: Id, limit: Limit = 50, offset: Offset = 0
) -> list[PacketOut]:
    """The case's packets, the latest version of each series first; older versions follow."""

    def work(user: User) -> list[PacketOut]:
        packets = packet_selectors.packet_list_for_user(user=user, case_id=case_id)
        packets = packets.select_related("created_by", "frozen_by")
        return [PacketOut.from_orm(p) for p in packets[offset : offset + limit]]

    return await run_sync(ctx, work)


@keyed_tool
async def packet_item_remove(
    ctx: Context,
    case_id: Id,
    packet_id: Id,
    item_id: Id,
    reason: Annotated[str, Field(max_length=MAX_REASON_CHARS), NoNul] = "",
    idempotency_key: IdempotencyKey = "",
) -> PacketDetailOut:
    """Take an item out of an editable packet (`reason` goes to the audit); answers the
    packet."""

    def work(user: User) -> PacketDetailOut:
        packet_services.packet_item_remove(
            user=user,
            case_id=case_id,
            packet_id=packet_id,
            item_id=item_id,
            reason=reason.strip(),
        )
        packet = packet_selectors.packet_get_for_user(
            user=user, case_id=case_id, packet_id=packet_id
        )
        return packet_schemas.packet_detail(packet, user=user)

    return await run_sync(ctx, work)


@keyed_tool
async def packet_version_create(
    ctx: Context, case_id: Id, packet_id: Id, idempotency_key: IdempotencyKey = ""
) -> PacketDetailOut:
    """A new editable version of a frozen packet, with the same items (409 if not frozen)."""

    def work(user: User) -> PacketDetailOut:
        packet = packet_services.packet_new_version(user=user, case_id=case_id, packet_id=packet_id)
        return packet_schemas.packet_detail(packet, user=user)

    return await run_sync(ctx, work)


@tool
async def packet_versions(ctx: Context, case_id: Id, packet_id: Id) -> list[PacketOut]:
    """Every version of the packet's series, oldest first."""
    return await run_sync(
        ctx,
        lambda user: [
            PacketOut.from_orm(p)
            for p in packet_selectors.packet_versions_for_user(
                user=user, case_id=case_id, packet_id=packet_id
            )
        ],
    )


@tool
async def packet_compare(ctx: Context, case_id: Id, packet_id: Id, other_id: Id) -> ComparisonOut:
    """What changed from `packet_id` to `other_id` (two versions of one packet): items added,
    items removed, pages whose text changed."""
    return await run_sync(
        ctx,
        lambda user: packet_schemas.comparison_out(
            packet_selectors.packet_compare_for_user(
                user=user, case_id=case_id, packet_id=packet_id, other_id=other_id
            )
        ),
    )


# --- The lists of runs and of drafts ---------------------------------------------------------


class RunListMcpOut(RunOut):
    """RunOut with `last_event` named as the REST API writes it (the SDK writes aliases)."""

    last_event: int = Field(validation_alias=AliasChoices("last_event", "event_seq"))


@tool
async def runs_list(
    ctx: Context,
    case_id: Id,
    status: Run.Status | None = None,
    kind: Run.Kind | None = None,
    limit: Limit = 50,
    offset: Offset = 0,
) -> list[RunListMcpOut]:
    """The case's runs, newest first (without their stages: run_get has them); `status` and
    `kind` keep only runs in that state or of that kind, e.g. `waiting_for_approval` for the
    runs a lawyer should approve or reject. A run's `draft_id` is the draft it wrote."""

    def work(user: User) -> list[RunListMcpOut]:
        found = draft_selectors.run_list_for_user(
            user=user,
            case_id=case_id,
            status=status.value if status is not None else None,
            kind=kind.value if kind is not None else None,
        )
        return [RunListMcpOut.from_orm(run) for run in found[offset : offset + limit]]

    return await run_sync(ctx, work)


@tool
async def drafts_list(
    ctx: Context, case_id: Id, limit: Limit = 50, offset: Offset = 0
) -> list[DraftOut]:
    """The case's drafts, newest first, each with its packet and `version_count` (draft_get
    lists the versions)."""

    def work(user: User) -> list[DraftOut]:
        drafts = draft_selectors.draft_list_for_user(user=user, case_id=case_id)
        return [DraftOut.from_orm(draft) for draft in drafts[offset : offset + limit]]

    return await run_sync(ctx, work)


# --- Draft versions and diffs; a financial extraction's table ---------------------------------


@keyed_tool
async def version_add(
    ctx: Context, case_id: Id, draft_id: Id, body: VersionIn, idempotency_key: IdempotencyKey = ""
) -> VersionDetailOut:
    """The draft's next version, its text pasted (Markdown or plain). Earlier versions never
    change."""

    def work(user: User) -> VersionDetailOut:
        version = draft_services.version_add(
            user=user,
            case_id=case_id,
            draft_id=draft_id,
            content=draft_services.pasted_content(text=body.text, media_type=body.media_type),
        )
        return VersionDetailOut.from_orm(
            draft_selectors.version_get_for_user(
                user=user, case_id=case_id, draft_id=draft_id, number=version.number
            )
        )

    return await run_sync(ctx, work)


@tool
async def version_diff(
    ctx: Context,
    case_id: Id,
    draft_id: Id,
    number: Id,
    against: VersionNumber | None = None,
) -> VersionDiffOut:
    """What changed from version `against` (by default the one before) to version `number`,
    word by word: `equal`, `insert` and `delete` stretches, long unchanged ones shortened."""
    return await run_sync(
        ctx,
        lambda user: VersionDiffOut.from_orm(
            diff_selectors.version_diff_for_user(
                user=user, case_id=case_id, draft_id=draft_id, number=number, against=against
            )
        ),
    )


@tool
async def run_transactions_csv(ctx: Context, case_id: Id, run_id: Id) -> FileOut:
    """A financial extraction's table as CSV (UTF-8 with a byte order mark): date, amount,
    counterparty, description, Bates citation, the verifier's status for the row and the
    validation's problems; registered as a generated artifact (`artifact_id`). Another kind of
    run, or one whose table is not written yet, is `no_table`."""

    def work(user: User) -> FileOut:
        export = transactions.transactions_csv_for_user(user=user, case_id=case_id, run_id=run_id)
        answer = _file(
            filename=export.filename,
            media_type=transactions.MEDIA_TYPE,
            path=f"{API}/cases/{case_id}/runs/{run_id}/transactions.csv",
            data=export.data,
            size=len(export.data),
        )
        answer.artifact_id = export.artifact.pk
        return answer

    return await run_sync(ctx, work)
