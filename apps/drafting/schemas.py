"""Request and response shapes of the drafts API (apps/drafting/api.py)."""

from datetime import datetime
from typing import Literal

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator

from apps.accounts.schemas import UserOut
from apps.api.schemas import StrictIn
from apps.drafting.models import Draft, DraftVersion

# Pasted text is limited by the service (LEXWEB_MAX_DRAFT_BYTES) and, before that, by the
# request body limit; this only keeps pydantic's own ceiling out of the way.
_TEXT_CEILING = 64 * 1024 * 1024


class VersionIn(StrictIn):
    """Pasted text of a version: Markdown (the default) or plain text."""

    model_config = ConfigDict(extra="forbid", str_max_length=_TEXT_CEILING)

    text: str
    media_type: Literal["markdown", "plain"] = "markdown"


class DraftIn(VersionIn):
    """A new draft: its title, kind, the frozen packet it is checked against, and version 1."""

    title: str = Field(min_length=1, max_length=200)
    kind: Draft.Kind = Draft.Kind.OTHER
    packet_id: int = Field(ge=1, le=2**63 - 1)

    @field_validator("title")
    @classmethod
    def _title(cls, value: str) -> str:
        value = " ".join(value.split())
        if not value:
            raise ValueError("give the draft a title")
        return value


class DraftFormIn(StrictIn):
    """The fields of a multipart create (the text comes as the `file` part)."""

    title: str = Field(min_length=1, max_length=200)
    kind: Draft.Kind = Draft.Kind.OTHER
    packet_id: int = Field(ge=1, le=2**63 - 1)


class VersionOut(Schema):
    """A version without its text. `written_by`: "person" (pasted or uploaded: firm work
    product) or "model" (registered as a generated artifact)."""

    number: int
    media_type: str
    filename: str
    sha256: str
    size: int
    characters: int
    written_by: str
    created_by: UserOut
    created_at: datetime
    approved: bool
    approved_by: UserOut | None
    approved_at: datetime | None

    @staticmethod
    def resolve_approved(obj: DraftVersion) -> bool:
        return obj.approved_at is not None

    @staticmethod
    def resolve_characters(obj: DraftVersion) -> int:
        # Deferred in lists (the text stays out of them); a fresh version has it loaded.
        count = getattr(obj, "characters", None)
        return int(count) if count is not None else len(obj.text)


class VersionDetailOut(VersionOut):
    """A version with its text: the claims' offsets are offsets into it."""

    text: str


class DraftOut(Schema):
    id: int
    case_id: int
    title: str
    kind: str
    packet_id: int
    packet_title: str
    packet_version: int
    version_count: int
    created_by: UserOut
    created_at: datetime

    @staticmethod
    def resolve_packet_title(obj: Draft) -> str:
        return obj.packet.title

    @staticmethod
    def resolve_packet_version(obj: Draft) -> int:
        return obj.packet.version

    @staticmethod
    def resolve_version_count(obj: Draft) -> int:
        count = getattr(obj, "version_count", None)
        return obj.versions.count() if count is None else int(count)


class DraftDetailOut(DraftOut):
    versions: list[VersionOut]

    @staticmethod
    def resolve_versions(obj: Draft) -> list[DraftVersion]:
        return sorted(obj.versions.all(), key=lambda version: version.number)
