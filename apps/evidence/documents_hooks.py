"""The evidence app's answers to what the documents app beneath it asks
(apps.documents.evidence_hooks): registered by EvidenceConfig.ready. Each is a thin call of this
app's own services and selectors, whose rules stay theirs."""

from collections.abc import Sequence

from django.db.models import BooleanField, Exists, OuterRef, Prefetch, Q, Value
from django.db.models.expressions import Combinable
from django.utils import timezone

from apps.accounts.models import User
from apps.cases.models import BreakGlassGrant, Case, Membership
from apps.documents.evidence_hooks import ClearanceView, MatchView, PacketChoice
from apps.documents.models import Document
from apps.evidence.models import ArtifactMatch, FlagClearance, GeneratedArtifact, Packet, PacketItem
from apps.evidence.selectors import packets as packet_selectors
from apps.evidence.services import checks, clearance, registry
from apps.evidence.services import packets as packet_services


def _visible_case(user: User) -> Combinable | Q:
    """True for a match whose artifact's case `user` may see (the artifact's case_id is read
    through OuterRef, so this is one subquery per statement, not one per row)."""
    member = Exists(
        Membership.objects.filter(user_id=user.pk, case_id=OuterRef("artifact__case_id"))
    )
    if not (user.is_active and user.role == User.Role.ADMIN):
        return member
    return member | Exists(
        BreakGlassGrant.objects.filter(
            user_id=user.pk, case_id=OuterRef("artifact__case_id"), expires_at__gt=timezone.now()
        )
    )


class DocumentsHooks:
    """apps.documents.evidence_hooks.EvidenceHooks, answered by this app."""

    def check_bytes(self, document: Document) -> None:
        checks.document_check_bytes(document)

    def check_text(self, document: Document) -> None:
        checks.document_check_text(document)

    def model_output_register(
        self,
        *,
        data: bytes,
        text: str,
        media_type: str,
        title: str,
        case: Case,
        source: str,
        created_by: User | None,
    ) -> None:
        registry.artifact_register(
            data=data,
            text=text,
            kind=GeneratedArtifact.Kind.MODEL_OUTPUT,
            media_type=media_type,
            title=title,
            case=case,
            source=source,
            created_by=created_by,
        )

    def matches_copy(self, *, volume: Document, originals: Sequence[Document]) -> None:
        best: dict[tuple[int, str], float] = {}
        rows = ArtifactMatch.objects.filter(document__in=originals).values_list(
            "artifact_id", "by", "share"
        )
        for artifact_id, by, share in rows:
            best[(artifact_id, by)] = max(share, best.get((artifact_id, by), 0.0))
        ArtifactMatch.objects.bulk_create(
            ArtifactMatch(document=volume, artifact_id=artifact_id, by=by, share=share)
            for (artifact_id, by), share in best.items()
        )

    def provenance_lookups(self, user: User | None) -> "list[Prefetch[str]]":
        matches = ArtifactMatch.objects.select_related("artifact").order_by("-share", "by", "id")
        if user is not None and user.is_authenticated and user.is_active:
            matches = matches.annotate(title_visible=_visible_case(user))
        else:
            matches = matches.annotate(title_visible=Value(False, output_field=BooleanField()))
        clearances = FlagClearance.objects.select_related("cleared_by").order_by("cleared_at", "id")
        return [
            Prefetch("artifact_matches", queryset=matches, to_attr="provenance_matches"),
            Prefetch("flag_clearances", queryset=clearances, to_attr="provenance_clearances"),
        ]

    def matches_of(self, document: Document) -> list[MatchView]:
        matches: Sequence[ArtifactMatch] = getattr(document, "provenance_matches", ())
        return [
            MatchView(
                artifact_id=match.artifact_id,
                title=match.artifact.title if getattr(match, "title_visible", False) else None,
                by=match.by,
                share=match.share,
                found=match.found,
                found_label=str(ArtifactMatch.Found(match.found).label),
                cleared=match.clearance_id is not None,
            )
            for match in matches
        ]

    def clearances_of(self, document: Document) -> list[ClearanceView]:
        rows: Sequence[FlagClearance] = getattr(document, "provenance_clearances", ())
        return [
            ClearanceView(
                id=row.pk,
                cleared_by=str(row.cleared_by),
                cleared_by_id=row.cleared_by_id,
                cleared_at=row.cleared_at,
                reason=row.reason,
            )
            for row in rows
        ]

    def flag_clear(self, *, user: User, case_id: int, document_id: int, reason: str) -> Document:
        return clearance.document_flag_clear(
            user=user, case_id=case_id, document_id=document_id, reason=reason
        ).document

    def in_packet(self) -> Exists:
        return Exists(PacketItem.objects.filter(document=OuterRef("pk")))

    def packet_holding(
        self, *, document_ids: Sequence[int], frozen: bool
    ) -> tuple[int, str] | None:
        status = Packet.Status.FROZEN if frozen else Packet.Status.EDITABLE
        item = (
            PacketItem.objects.filter(document_id__in=list(document_ids), packet__status=status)
            .select_related("packet")
            .order_by("document_id")
            .first()
        )
        return None if item is None else (item.document_id, str(item.packet))

    def packet_menu(
        self, *, user: User, case_id: int, limit: int, editable: bool
    ) -> list[PacketChoice]:
        packets = packet_selectors.packet_list_for_user(user=user, case_id=case_id)
        if editable:
            packets = packets.filter(status=Packet.Status.EDITABLE)
        return [
            PacketChoice(id=p.pk, title=str(p), item_count=int(getattr(p, "item_count", 0)))
            for p in packets[:limit]
        ]

    def packet_choices(self, *, user: User, case_id: int, limit: int) -> list[tuple[int, str]]:
        return packet_selectors.packet_choices_for_user(user=user, case_id=case_id, limit=limit)

    def packet_document_ids(self, *, user: User, case_id: int, packet_id: int) -> list[int]:
        packet = packet_selectors.packet_get_for_user(
            user=user, case_id=case_id, packet_id=packet_id
        )
        return [item.document_id for item in packet.items.all()]

    def packet_add(
        self, *, user: User, case_id: int, packet_id: int, document_ids: Sequence[int], reason: str
    ) -> int:
        items = packet_services.packet_items_add(
            user=user,
            case_id=case_id,
            packet_id=packet_id,
            selections=[
                packet_services.Selection(document_id=i, reason=reason) for i in document_ids
            ],
        )
        return len(items)
