"""What a stage's body is given and what it gives back (a leaf module: the executor and the
output parsers both read these, and they read neither)."""

from dataclasses import dataclass, field

from apps.evidence.models import FrozenPage


@dataclass
class Work:
    """What a stage's body needs, read at claim time."""

    stage_id: int
    run_id: int
    attempt: int
    name: str
    role: str
    kind: str
    instructions: str
    case_id: int
    user_id: int
    packet_id: int
    packet_hash: str
    pages: list[FrozenPage]
    draft_id: int | None
    draft_text: str
    draft_number: int
    earlier: dict[str, dict[str, object]] = field(default_factory=dict)
    # The run's stage names in order, for its token plan (pipeline.budget).
    names: list[str] = field(default_factory=list)


@dataclass
class Outcome:
    """What a body produced, stored by `_succeed`."""

    text: str = ""
    data: dict[str, object] | None = None
    custody: dict[str, object] = field(default_factory=dict)
    verification_id: int | None = None
    # A free-text reply kept though still cut at its limit (pipeline.endings.KEEPS_CUT): its
    # tokens, stored on the version it writes (DraftVersion.truncated_tokens).
    truncated_tokens: int | None = None
