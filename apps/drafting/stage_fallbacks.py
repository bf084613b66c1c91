"""Which stages of a run were answered by another model than the one first called, and why.

Every call a stage makes is recorded (cluster CallRecord, linked to the stage): a call to the
role's first deployment that failed (unreachable, timed out, its context too small, its stream
cut) and a later call that answered on another deployment, in the same attempt (dispatch's
fallback) or in a later one (the stage run again), is a fallback. So is a deployment routed
before the one that answered that the health registry had left out when the attempt started
(Stage.passed_over: down, loading, cooling down, serving another model), which no call
reached. The run page says so beside the stage, with each deployment and why. Call records
name no case: they are read here only for stages the caller already read through the case's
access rules.
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
class PassedOver:
    deployment: str
    reason: str


@dataclass(frozen=True)
class Fallback:
    """A stage answered by `answered_by` after `failed` calls to other deployments, or with
    deployments routed before it `passed_over` (left out of routing, never called)."""

    answered_by: str
    failed: tuple[FailedCall, ...]
    passed_over: tuple[PassedOver, ...] = ()

    @property
    def sentence(self) -> str:
        if self.passed_over:
            first_passed = self.passed_over[0]
            head = f"{first_passed.deployment} was left out of routing: {first_passed.reason}"
            more = len(self.passed_over) - 1 + len(self.failed)
        else:
            first = self.failed[0]
            head = f"{first.deployment} failed: {first.error or first.outcome}"
            more = len(self.failed) - 1
        noun = "deployment" if self.passed_over else "failed call"
        others = f" (and {more} more {noun}{'s' if more != 1 else ''})" if more else ""
        return f"Fell back to {self.answered_by}: {head}{others}"


def stage_fallbacks(stages: Sequence[Stage]) -> dict[int, Fallback]:
    """For each stage (already read through its case's access) that fell back: how. One query."""
    by_stage: dict[int, list[CallRecord]] = {}
    passed_over = {s.pk: s.passed_over for s in stages if s.passed_over}
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
        passed = tuple(
            PassedOver(
                deployment=str(item.get("deployment", "")), reason=str(item.get("reason", ""))
            )
            for item in (passed_over.get(stage_id) or [])
            if isinstance(item, dict) and item.get("deployment") != answer.deployment_label
        )
        if failed or passed:
            found[stage_id] = Fallback(
                answered_by=answer.deployment_label, failed=failed, passed_over=passed
            )
    return found
