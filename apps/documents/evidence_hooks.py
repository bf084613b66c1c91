"""What the documents app asks of the evidence app above it, without importing it
(docs/architecture/modules.md, "The order of the apps").

The evidence app keeps the generated-artifact registry (what lexweb wrote, the matches that flag
a document, a lawyer's clearing of a wrong flag) and the packets. Documents need a little of
each: an upload is checked against the registry, a model's output is registered before it is
stored, a production volume carries its originals' matches, the list, the viewer and the API
show a document's matches and clearings, the review list adds documents to a packet and
filters by "in a packet", a document in a packet is not withdrawn, and a production may take a
packet's documents. The evidence app registers how here when Django starts
(`apps.evidence.apps.EvidenceConfig.ready`); nothing is assumed when none is registered: every
call raises EvidenceHooksMissing, so a process that did not load the evidence app neither
stores an upload unchecked nor shows a document without its flags.

`MatchView` and `ClearanceView` are what the registry's answers look like to this app (the
shape `provenance_selectors.ProvenanceView` shows).
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from django.db.models import Exists, Prefetch

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.models import Document

# What a person reads instead of a title they may not see.
HIDDEN_ARTIFACT = "a document lexweb generated"


@dataclass(frozen=True)
class MatchView:
    """One registry match of a document. `title` is None when the user may not see the
    artifact's case."""

    artifact_id: int
    title: str | None
    by: str  # "bytes" | "text"
    share: float  # of the artifact found in the document, 0..1
    # "intake", or a late flag ("packet_add", "freeze"), and its label in words
    found: str = "intake"
    found_label: str = "At intake"
    # A lawyer cleared it: it no longer flags the document.
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
        if self.by == "bytes":
            return f"Same bytes as {what}{which}."
        late = ""
        if self.found != "intake":
            late = f" Found late, {self.found_label.lower()}."
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
class PacketChoice:
    id: int
    title: str
    item_count: int


class EvidenceHooks(Protocol):
    # The generated-artifact registry.
    def check_bytes(self, document: Document) -> None:
        """At upload, in its transaction: flag `document` if its bytes are an artifact's."""
        ...

    def check_text(self, document: Document) -> None:
        """When its last page is read, in the commit that makes it READY: flag it (or clear it)
        by its text."""
        ...

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
        """Register what a model wrote before it is stored as a document."""
        ...

    def matches_copy(self, *, volume: Document, originals: Sequence[Document]) -> None:
        """A production volume carries its originals' matches (the best share of each)."""
        ...

    # What the list, the viewer and the API show.
    def provenance_lookups(self, user: User | None) -> "list[Prefetch[str]]":
        """Prefetches loading a document's matches (to_attr "provenance_matches") and
        clearings ("provenance_clearances"), each match saying whether `user` may see its
        artifact's title."""
        ...

    def matches_of(self, document: Document) -> list[MatchView]:
        """The matches `provenance_lookups` loaded on `document` (none when not loaded)."""
        ...

    def clearances_of(self, document: Document) -> list[ClearanceView]:
        """The clearings `provenance_lookups` loaded on `document`, oldest first."""
        ...

    def flag_clear(self, *, user: User, case_id: int, document_id: int, reason: str) -> Document:
        """A lawyer clears the registry's flag on a document with a written reason; the
        document (NotFound, LawyerRequired, ReasonInvalid and Conflicts as the evidence app's
        service says)."""
        ...

    # Packets.
    def in_packet(self) -> Exists:
        """True for a document (OuterRef("pk")) that some packet holds."""
        ...

    def packet_holding(
        self, *, document_ids: Sequence[int], frozen: bool
    ) -> tuple[int, str] | None:
        """(document id, packet title) of the first of these documents (by id) that a frozen
        (or an editable) packet holds, or None."""
        ...

    def packet_menu(
        self, *, user: User, case_id: int, limit: int, editable: bool
    ) -> list[PacketChoice]:
        """The case's packets as its packet list orders them (only the editable ones when
        `editable`), at most `limit`; audited as a read of the list."""
        ...

    def packet_choices(self, *, user: User, case_id: int, limit: int) -> list[tuple[int, str]]:
        """(id, title) of the case's editable packets, to check a submitted choice against;
        nothing is shown, so nothing is audited."""
        ...

    def packet_document_ids(self, *, user: User, case_id: int, packet_id: int) -> list[int]:
        """The ids of a packet's documents in packet order (NotFound); audited as a view."""
        ...

    def packet_add(
        self, *, user: User, case_id: int, packet_id: int, document_ids: Sequence[int], reason: str
    ) -> int:
        """Add the documents to the packet by the packet's own rules (all or none); how many
        items were added."""
        ...


class EvidenceHooksMissing(RuntimeError):
    pass


_registered: EvidenceHooks | None = None


def register(hooks: EvidenceHooks) -> None:
    """Called once by the evidence app when Django starts; a second call replaces the first."""
    global _registered
    _registered = hooks


def evidence() -> EvidenceHooks:
    """The evidence app's hooks (see the module), or EvidenceHooksMissing."""
    if _registered is None:
        raise EvidenceHooksMissing(
            "no app has registered the generated-artifact registry and packets: apps.evidence "
            "must be installed and ready"
        )
    return _registered
