"""Which stages of a run were answered by another model than the one first called, and why.

Every call a stage makes is recorded (cluster CallRecord, linked to the stage): a call to the
role's first deployment that failed (unreachable, timed out, its context too small, its stream
cut) and a later call that answered on another deployment, in the same attempt (dispatch's
fallback) or in a later one (the stage run again), is a fallback. The run page says so beside
the stage, with each failed call's deployment and error. Call records name no case: they are
read here only for stages the caller already read through the case's access rules.
"""

from collections.abc import Sequence
from dataclasses import dataclass

from apps.cluster.models import CallRecord
from apps.drafting.models import Stage


@dataclass(frozen=True)
class FailedCall:
    deployment: str
    error: str
    outcome: str


@dataclass(frozen=True)
class Fallback:
    """A stage answered by `answered_by` after `failed` calls to other deployments."""

    answered_by: str
    failed: tuple[FailedCall, ...]

    @property
    def sentence(self) -> str:
        first = self.failed[0]
        why = first.error or first.outcome
        more = len(self.failed) - 1
        others = f" (and {more} more failed call{'s' if more != 1 else ''})" if more else ""
        return f"Fell back to {self.answered_by}: {first.deployment} failed: {why}{others}"


def stage_fallbacks(stages: Sequence[Stage]) -> dict[int, Fallback]:
    """For each stage (already read through its case's access) that fell back: how. One query."""
    by_stage: dict[int, list[CallRecord]] = {}
    records = (
        CallRecord.objects.filter(stage_id__in=[s.pk for s in stages])
        .only("stage_id", "deployment_label", "outcome", "error", "started_at")
        .order_by("started_at", "pk")
    )
    for record in records:
        if record.stage_id is not None:
            by_stage.setdefault(record.stage_id, []).append(record)
    found: dict[int, Fallback] = {}
    for stage_id, calls in by_stage.items():
        answered = [c for c in calls if c.outcome == CallRecord.Outcome.OK]
        if not answered:
            continue
        answer = answered[-1]
        failed = tuple(
            FailedCall(
                deployment=c.deployment_label,
                error=c.error,
                outcome=c.get_outcome_display(),
            )
            for c in calls
            if c.started_at <= answer.started_at
            and c.outcome in (CallRecord.Outcome.ERROR, CallRecord.Outcome.REFUSED)
            and c.deployment_label != answer.deployment_label
        )
        if failed:
            found[stage_id] = Fallback(answered_by=answer.deployment_label, failed=failed)
    return found
