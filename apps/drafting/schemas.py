"""Request and response shapes of the drafts API (apps/drafting/api.py)."""

from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

from ninja import Schema
from pydantic import ConfigDict, Field, field_validator

from apps.accounts.schemas import UserOut
from apps.drafting.models import Draft, DraftVersion, Run, Stage
from apps.drafting.services.runs import RunRequest
from lexweb.api_schemas import StrictIn, status_type

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

    json_types = False  # form fields are strings: "5" is the packet id 5
    title: str = Field(min_length=1, max_length=200)
    kind: Draft.Kind = Draft.Kind.OTHER
    packet_id: int = Field(ge=1, le=2**63 - 1)


class VersionOut(Schema):
    """A version without its text. `written_by`: "person" (pasted or uploaded: firm work
    product) or "model" (registered as a generated artifact). `truncated`: the version is a
    model's reply cut at its limit after `truncated_tokens` tokens (its end is missing): it is
    verified like any version but never approved or exported (409 `version_truncated`)."""

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
    rejected_by: UserOut | None
    rejected_at: datetime | None
    rejection_reason: str
    truncated: bool
    truncated_tokens: int | None

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


# --- Runs ------------------------------------------------------------------------------------


class RunIn(StrictIn):
    """A drafting run over a frozen packet of the case. `instructions` are checked by the
    service (empty, over LEXWEB_RUN_INSTRUCTIONS_MAX_CHARS, control characters)."""

    model_config = ConfigDict(extra="forbid", str_max_length=_TEXT_CEILING)

    kind: Run.Kind
    packet_id: int = Field(ge=1, le=2**63 - 1)
    instructions: str
    high_stakes: bool = False

    def run_request(self) -> RunRequest:
        """What runs.run_start is given, for every edge that starts a run (REST, MCP)."""
        return RunRequest(
            kind=self.kind,
            packet_id=self.packet_id,
            instructions=self.instructions,
            high_stakes=self.high_stakes,
        )


class GateOverrideIn(StrictIn):
    reason: str = Field(max_length=5000)


class RunRejectIn(StrictIn):
    reason: str = Field(max_length=5000)


if TYPE_CHECKING:
    RunStatus: TypeAlias = str
    StageStatus: TypeAlias = str
else:
    RunStatus = status_type(
        Run.Status,
        terminal=["succeeded", "failed", "cancelled", "rejected"],
        about=(
            "The run's state. waiting_for_approval and stopped_by_gate wait for a lawyer "
            "(approve or reject; override the gate)."
        ),
    )
    StageStatus = status_type(
        Stage.Status,
        terminal=["succeeded", "failed", "cancelled", "skipped"],
        about="The stage's state; a stage that runs again goes back to queued, then running.",
    )


class PassedOverOut(Schema):
    """A deployment routed for the stage's role ahead of the one its attempt used, left out by
    the health registry when the attempt started (never called)."""

    deployment: str
    reason: str


class StageOut(Schema):
    """One stage and its chain of custody (the prompt itself is in `prompt_text`)."""

    id: int
    position: int
    name: str
    role: str
    status: StageStatus
    queue: str
    job_id: int | None
    attempt: int
    error: str
    output_text: str
    output_json: dict[str, object] | list[object] | None
    version: int | None = None  # the number of the draft version the stage wrote
    verification_id: int | None
    prompt_text: str
    prompt_sha256: str
    template_name: str
    template_version: str
    deployment_id: int | None
    deployment_label: str
    model_name: str
    model_file_sha256: str
    board_label: str
    gpu_uuids: list[str]
    sampling: dict[str, object]
    seed: int | None
    packet_content_hash: str
    pages_sent: list[str]
    # How the excerpts were chosen and counted: budget_tokens, margin_tokens, used_tokens,
    # selection, counted_by (tokenizer or estimate), tokenizer, fallback_reason, pages_*.
    evidence_budget: dict[str, object]
    passed_over: list[PassedOverOut]
    prompt_tokens: int
    completion_tokens: int
    # How the model's reply ended, as its backend said: "stop", "length" (cut at max_tokens;
    # never a silent success: a writing stage's version is then marked truncated, its
    # output_json {"truncated": {"tokens", "not_continued"}}; a summary fails; pipeline.endings),
    # Ollama's other done_reasons;
    # "" before a reply ended. `continuations`: calls that continued a cut reply (their tokens
    # are in completion_tokens). `ending`: the same in words, as the run page shows it.
    finish_reason: str
    continuations: int
    ending: str
    time_to_first_token_ms: float | None
    tokens_per_second: float | None
    duration_ms: float | None
    call_record_id: int | None
    started_at: datetime | None
    finished_at: datetime | None
    # Its start, each stored batch of tokens (at most a second apart), its end; see
    # `stage.stalled` in the events reference.
    last_progress_at: datetime | None

    @staticmethod
    def resolve_version(stage: Stage) -> int | None:
        return stage.version.number if stage.version_id and stage.version else None


class RunOut(Schema):
    id: int
    case_id: int
    kind: str
    packet_id: int
    instructions: str
    high_stakes: bool
    status: RunStatus
    error: str
    draft_id: int | None
    created_by: UserOut
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    gate_override_reason: str
    gate_override_at: datetime | None
    rejected_by: UserOut | None
    rejected_at: datetime | None
    rejection_reason: str
    last_event: int = Field(alias="event_seq")


class RunDetailOut(RunOut):
    stages: list[StageOut]

    @staticmethod
    def resolve_stages(run: Run) -> list[Stage]:
        return list(run.stages.all())


class RunEventOut(Schema):
    seq: int
    kind: str
    payload: dict[str, object]
    created_at: datetime


class RunEventPageOut(Schema):
    """A page of a run's events, as every list of the API: `count` is how many events are
    stored after `after` now; `next` the next page while more are already stored, null when
    this page holds the last of them (ask again with `after` = the last `seq`, and `wait` to
    long-poll)."""

    items: list[RunEventOut]
    count: int
    next: str | None


# --- Diffs and exports -----------------------------------------------------------------------


class DiffOpOut(Schema):
    """One stretch of the diff: `equal`, `insert` (only in the newer version) or `delete` (only
    in the older one). A long unchanged stretch keeps its ends; `elided_words` words of its
    middle are left out, where the text shows "…"."""

    op: str
    text: str
    elided_words: int


class VersionDiffOut(Schema):
    """What changed from version `against` to version `number`, word by word. The word counts
    cover both whole versions; `exact` is false when the diff hit its time limit (coarser, still
    correct), `truncated` true when the operations were cut at the size limit."""

    draft_id: int
    number: int
    against: int
    inserted_words: int
    deleted_words: int
    unchanged_words: int
    exact: bool
    truncated: bool
    ops: list[DiffOpOut]


class ExportIn(StrictIn):
    format: Literal["docx", "pdf"]
