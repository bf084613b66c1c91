"""What the document list, the viewer and the API show about where a document came from, before
anyone builds a packet: its origin (untrusted or not), the registry's verdict with the matches
behind it, and its lineage (parents, e-mail family, production volume).

These read on top of documents that a `*_for_user` selector of `apps.documents.selectors` has
already returned (membership checked, read audited). One thing here depends on the user again:
a match names the generated artifact only to someone who may see the artifact's own case (a
member, or an admin with a live break-glass grant); anyone else reads "a document lexweb
generated". The registry is site-wide, so a match may point at another case's artifact.

A lawyer's clearing of a flag (issue 20 req 8) is shown for good: "Flag cleared by X on D:
reason", with the matches it covers marked cleared.

Lists stay at a fixed number of queries: `documents_with_provenance` adds three prefetches and
one annotation, whatever the page size.
"""

import math
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import (
    BooleanField,
    Exists,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Value,
    prefetch_related_objects,
)
from django.db.models.expressions import Combinable
from django.utils import timezone

from apps.accounts.models import User
from apps.cases.models import BreakGlassGrant, Case, Membership
from apps.documents.models import Derivation, Document, Production
from apps.evidence.models import ArtifactMatch, FlagClearance

EMAIL_ATTACHMENT = Derivation.EMAIL_ATTACHMENT
UNTRUSTED_ORIGINS = frozenset(str(origin) for origin in Document.UNTRUSTED_ORIGINS)
_ORIGIN_LABELS = dict(Document.Origin.choices)
# What a person reads instead of a title they may not see.
HIDDEN_ARTIFACT = "a document lexweb generated"


@dataclass(frozen=True)
class MatchView:
    """One registry match of a document. `title` is None when the user may not see the
    artifact's case."""

    artifact_id: int
    title: str | None
    by: str  # ArtifactMatch.By: "bytes" | "text"
    share: float  # of the artifact found in the document, 0..1
    # ArtifactMatch.Found: "intake", or a late flag ("packet_add", "freeze")
    found: str = "intake"
    # A lawyer cleared it (FlagClearance): it no longer flags the document.
    cleared: bool = False

    @property
    def percent(self) -> int:
        """The share as a whole percentage, never rounded up to 100 when it is not all."""
        value = math.floor(round(self.share * 100, 6))
        return min(max(value, 0), 100 if self.share >= 1 else 99)

    @property
    def sentence(self) -> str:
        what = f"“{self.title}”" if self.title is not None else HIDDEN_ARTIFACT
        which = ", which lexweb generated" if self.title is not None else ""
        if self.by == ArtifactMatch.By.BYTES:
            return f"Same bytes as {what}{which}."
        late = ""
        if self.found != ArtifactMatch.Found.INTAKE:
            late = f" Found late, {ArtifactMatch.Found(self.found).label.lower()}."
        return f"Its text matches {self.percent}% of {what}{which}.{late}"


@dataclass(frozen=True)
class ClearanceView:
    """A lawyer's clearing of the document's flag, with the reason: shown for good."""

    id: int
    cleared_by: str  # the lawyer's name (or e-mail)
    cleared_by_id: int
    cleared_at: datetime
    reason: str

    @property
    def sentence(self) -> str:
        return f"Flag cleared by {self.cleared_by} on {self.cleared_at:%Y-%m-%d}: {self.reason}"


@dataclass(frozen=True)
class ParentView:
    """A direct parent of a document: what it was made from, and how."""

    document_id: int
    filename: str
    origin: str
    transform: str
    version: str
    deterministic: bool


@dataclass(frozen=True)
class ProvenanceView:
    origin: str
    untrusted: bool
    verdict: str  # Document.Provenance: pending | clear | flagged
    matches: list[MatchView]
    derived_from: list[ParentView]
    # The stamped production volume this document is (its volume name), if it is one.
    volume: str | None
    # Lawyers' clearings of its flag, oldest first (issue 20 req 8).
    clearances: list[ClearanceView] = field(default_factory=list)

    @property
    def origin_label(self) -> str:
        return _ORIGIN_LABELS.get(self.origin, self.origin)

    @property
    def system_generated(self) -> bool:
        return self.origin == Document.Origin.SYSTEM_GENERATED

    @property
    def attachment_of(self) -> ParentView | None:
        """The e-mail this document came out of, if it is an attachment."""
        return next((p for p in self.derived_from if p.transform in Derivation.FAMILY), None)

    @property
    def verdict_text(self) -> str:
        if self.verdict == Document.Provenance.PENDING:
            return "Checking for generated text…"
        if self.verdict == Document.Provenance.CLEAR:
            if self.clearances:
                return "Clear: " + " ".join(c.sentence + "." for c in self.clearances)
            return "Clear: no match with anything lexweb generated."
        standing = [match for match in self.matches if not match.cleared]
        if not standing:
            return "Flagged: matches something lexweb generated."
        return "Flagged: " + " ".join(match.sentence for match in standing)


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


def _lookups(user: User | None) -> "list[Prefetch[str]]":
    matches = ArtifactMatch.objects.select_related("artifact").order_by("-share", "by", "id")
    if user is not None and user.is_authenticated and user.is_active:
        matches = matches.annotate(title_visible=_visible_case(user))
    else:
        matches = matches.annotate(title_visible=Value(False, output_field=BooleanField()))
    parents = (
        Derivation.objects.select_related("parent")
        .only(
            "child",
            "transform",
            "version",
            "deterministic",
            "order",
            "parent__id",
            "parent__filename",
            "parent__origin",
        )
        .order_by("order", "id")
    )
    clearances = FlagClearance.objects.select_related("cleared_by").order_by("cleared_at", "id")
    return [
        Prefetch("artifact_matches", queryset=matches, to_attr="provenance_matches"),
        Prefetch("derived_from", queryset=parents, to_attr="provenance_parents"),
        Prefetch("flag_clearances", queryset=clearances, to_attr="provenance_clearances"),
    ]


def documents_with_provenance(
    documents: QuerySet[Document], *, user: User | None
) -> QuerySet[Document]:
    """`documents` (from a `_for_user` selector) with what `provenance_of` reads: matches (with
    whether `user` may see each artifact's title), direct parents and the volume name (the
    documents selectors already annotate `production_volume`; added here when not)."""
    if "production_volume" not in documents.query.annotations:
        documents = documents.annotate(production_volume=F("volume_of__volume"))
    return documents.prefetch_related(*_lookups(user))


def documents_load_provenance(documents: Sequence[Document], *, user: User | None) -> None:
    """The same for documents already in hand (a viewer's one document, an upload's results)."""
    documents = [d for d in documents if not hasattr(d, "provenance_matches")]
    if not documents:
        return
    prefetch_related_objects(documents, *_lookups(user))
    volumes = dict(
        Production.objects.filter(volume_document__in=documents).values_list(
            "volume_document_id", "volume"
        )
    )
    for document in documents:
        if not hasattr(document, "production_volume"):
            document.production_volume = volumes.get(document.pk)  # type: ignore[attr-defined]


def provenance_of(document: Document) -> ProvenanceView:
    """What to show about `document`'s provenance. Reads only what `documents_with_provenance`
    or `documents_load_provenance` loaded: a document loaded otherwise shows no matches or
    parents rather than run queries (or name an artifact) behind the caller's back."""
    matches: Iterable[ArtifactMatch] = getattr(document, "provenance_matches", ())
    parents: Iterable[Derivation] = getattr(document, "provenance_parents", ())
    clearances: Iterable[FlagClearance] = getattr(document, "provenance_clearances", ())
    return ProvenanceView(
        origin=document.origin,
        untrusted=document.origin in UNTRUSTED_ORIGINS,
        verdict=document.provenance,
        matches=[
            MatchView(
                artifact_id=match.artifact_id,
                title=match.artifact.title if getattr(match, "title_visible", False) else None,
                by=match.by,
                share=match.share,
                found=match.found,
                cleared=match.clearance_id is not None,
            )
            for match in matches
        ],
        derived_from=[
            ParentView(
                document_id=row.parent.pk,
                filename=row.parent.filename,
                origin=row.parent.origin,
                transform=row.transform,
                version=row.version,
                deterministic=row.deterministic,
            )
            for row in parents
        ],
        volume=getattr(document, "production_volume", None),
        clearances=[
            ClearanceView(
                id=row.pk,
                cleared_by=str(row.cleared_by),
                cleared_by_id=row.cleared_by_id,
                cleared_at=row.cleared_at,
                reason=row.reason,
            )
            for row in clearances
        ],
    )


def document_verdicts(*, case: Case, document_ids: Collection[int]) -> dict[int, str]:
    """The registry's verdict of each of these documents of `case` (a case the caller got from
    a `_for_user` selector), in one query: for search hits, which carry no verdict."""
    if not document_ids:
        return {}
    return dict(
        Document.objects.filter(case=case, pk__in=list(document_ids)).values_list(
            "pk", "provenance"
        )
    )
