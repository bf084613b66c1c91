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

The registry's matches and a lawyer's clearings are the evidence app's, above this one: they are
loaded and shaped through `evidence_hooks` (registered by the evidence app).

Lists stay at a fixed number of queries: `documents_with_provenance` adds three prefetches and
one annotation, whatever the page size.
"""

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

from django.db.models import (
    F,
    Prefetch,
    QuerySet,
    prefetch_related_objects,
)

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.evidence_hooks import ClearanceView, MatchView, evidence
from apps.documents.models import Derivation, Document, Production

EMAIL_ATTACHMENT = Derivation.EMAIL_ATTACHMENT
UNTRUSTED_ORIGINS = frozenset(str(origin) for origin in Document.UNTRUSTED_ORIGINS)
_ORIGIN_LABELS = dict(Document.Origin.choices)


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


def _lookups(user: User | None) -> "list[Prefetch[str]]":
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
    return [
        *evidence().provenance_lookups(user),
        Prefetch("derived_from", queryset=parents, to_attr="provenance_parents"),
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
    parents: Iterable[Derivation] = getattr(document, "provenance_parents", ())
    return ProvenanceView(
        origin=document.origin,
        untrusted=document.origin in UNTRUSTED_ORIGINS,
        verdict=document.provenance,
        matches=evidence().matches_of(document),
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
        clearances=evidence().clearances_of(document),
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
