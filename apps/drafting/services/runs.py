"""Writes of the drafting pipeline: start a run, cancel it, override its gate, reject it, queue
its stages. The stage bodies (model calls) are in apps/drafting/pipeline/.

1. `run_start` checks the request (a lawyer or staff member of the case, a frozen packet of the
   case, instructions neither empty nor over LEXWEB_RUN_INSTRUCTIONS_MAX_CHARS, every model role
   of the stage graph routed, every model stage fitting its routed window with a draft written
   to the run's limit: pipeline.budget, RunDoesNotFit with the arithmetic), then writes the
   run and *all* its stages (queued) and defers the first stage's job, in one transaction. An
   `Idempotency-Key` already used by the same person answers the run it started (409 if the
   request differs). Each refusal names the request field it is about and a code
   (`RunRequestError`, `PacketNotFound`, `RunDoesNotFit`; `error_field`).
2. A stage's job runs on its board's queue, `board.<board id>` (the board of the role's first
   routable deployment when it is queued); the checks (verifier, validation) run on `cluster`.
   Jobs are deferred by task name ("drafting.run_stage"); this module never imports tasks.
3. When a stage succeeds, its output is stored and the next stage deferred in the same
   transaction (`pipeline.execute`). The last stage ends the run: affidavits and motions wait
   for a lawyer's approval (the verifier's rule), summaries and extractions succeed.
4. Every state change and every batch of tokens is a RunEvent numbered under a lock of the run
   row by the one writer of run events (`events.run_event_append`; token batches through
   `token_events`), published to the group `run.<id>` once it commits.
"""

from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from procrastinate import manager
from procrastinate.contrib.django.django_connector import DjangoConnector

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import selectors as case_selectors
from apps.cases.models import Case, Membership
from apps.cluster.models import BackendHealth, Role, RoleRoute
from apps.cluster.services import dispatch
from apps.drafting import selectors
from apps.drafting.models import DraftVersion, Run, Stage
from apps.drafting.pipeline import budget
from apps.drafting.services.events import run_event_append
from apps.evidence.models import Packet
from apps.operations.services.recovery import RecoveryOutcome, StalledJob
from lexweb.errors import Conflict, DomainError, NotFound, PermissionDenied
from lexweb.jobs import job_defer

STAGE_TASK = "drafting.run_stage"
CHECKS_QUEUE = "cluster"
MAX_IDEMPOTENCY_KEY = 200
MIN_OVERRIDE_REASON = 10
MAX_OVERRIDE_REASON = 5000

N = Stage.Name
# Which cluster role serves each stage ("" for the deterministic checks).
STAGE_ROLES: dict[str, str] = {
    N.GATE: Role.GATE,
    N.DRAFTER: Role.DRAFTER,
    N.REASONER: Role.REASONER,
    N.VERIFIER: "",
    N.ADVERSARY: Role.ADVERSARY,
    N.REVISION: Role.DRAFTER,
    N.VERIFIER_AGAIN: "",
    N.SUMMARIZER: Role.SUMMARIZER,
    N.EXTRACTOR: Role.EXTRACTOR,
    N.VALIDATION: "",
}


class RunFinished(Conflict):
    """The run has already ended; nothing can be cancelled or overridden (409)."""

    code = "run_finished"


class IdempotencyKeyReused(Conflict):
    """The key was used for a different request by the same person (409)."""

    code = "idempotency_key_reused"


# Refusals of `run_start`, each naming the field of the request it is about (`field`: a key of
# RunRequest, "" for the request as a whole) and saying what is wrong (`code`), so that a form
# or an agent can put the message beside the right field without reading its words.


class RunRequestError(DomainError):
    """A run request refused because of one of its fields (400)."""

    code = "invalid"
    field = ""


class UnknownKind(RunRequestError):
    code = "unknown_kind"
    field = "kind"


class InstructionsInvalid(RunRequestError):
    """Empty, too long, not text, or holding a control character."""

    code = "invalid_instructions"
    field = "instructions"


class PacketNotFound(NotFound):
    """No such packet in this case (404, as for another case's packet)."""

    field = "packet_id"


class PacketNotFrozen(RunRequestError):
    code = "packet_not_frozen"
    field = "packet_id"


class PacketEmpty(RunRequestError):
    code = "packet_empty"
    field = "packet_id"


class RoleUnavailable(RunRequestError):
    """A model role of the stage graph has no enabled, routable deployment now."""

    code = "role_unavailable"


class IdempotencyKeyInvalid(RunRequestError):
    code = "invalid_idempotency_key"
    field = "idempotency_key"


def error_field(exc: DomainError) -> str:
    """The field of the run request a refusal of `run_start` is about ("" for none)."""
    field = getattr(exc, "field", "")
    return field if isinstance(field, str) else ""


@dataclass(frozen=True)
class RunRequest:
    kind: str
    packet_id: int
    instructions: str
    high_stakes: bool = False


def stage_plan(*, kind: str, high_stakes: bool) -> list[str]:
    """The stage names of a run of `kind`, in order. The heavy reasoner runs for motions and for
    anything marked high-stakes."""
    if kind in (Run.Kind.AFFIDAVIT, Run.Kind.MOTION):
        reasoner = [N.REASONER] if kind == Run.Kind.MOTION or high_stakes else []
        return [
            N.GATE,
            N.DRAFTER,
            *reasoner,
            N.VERIFIER,
            N.ADVERSARY,
            N.REVISION,
            N.VERIFIER_AGAIN,
        ]
    if kind == Run.Kind.SUMMARY:
        return [N.SUMMARIZER]
    if kind == Run.Kind.FINANCIAL:
        return [N.EXTRACTOR, N.VALIDATION, N.VERIFIER]
    raise UnknownKind(f"Unknown kind {kind!r:.40}; one of: {', '.join(Run.Kind.values)}.")


# --- Checks ----------------------------------------------------------------------------------


def require_member(*, user: User, case: Case, doing: str, lawyer: bool = False) -> None:
    """Lawyers and staff on the case (lawyers only where `lawyer`); an admin let in by
    break-glass reads but does not run the pipeline."""
    membership = case_selectors.membership_get(user=user, case=case)
    roles = (Membership.Role.LAWYER,) if lawyer else (Membership.Role.LAWYER, Membership.Role.STAFF)
    if membership is None or membership.role not in roles:
        who = "a lawyer" if lawyer else "a lawyer or staff member"
        raise PermissionDenied(f"Only {who} on this case may {doing}.")
    if lawyer and user.role != User.Role.LAWYER:
        raise PermissionDenied(f"Only a lawyer on this case may {doing}.")


def _instructions(text: object) -> str:
    if not isinstance(text, str):
        raise InstructionsInvalid("Instructions must be text.")
    limit = settings.LEXWEB_RUN_INSTRUCTIONS_MAX_CHARS
    if len(text) > limit:
        raise InstructionsInvalid(
            f"The instructions are {len(text):,} characters; the limit is {limit:,}. Say what "
            "the draft must do and put the material itself in the evidence packet."
        )
    for index, char in enumerate(text):
        code = ord(char)
        if (code < 32 and char not in "\t\n\r") or code == 0x7F or 0xD800 <= code <= 0xDFFF:
            raise InstructionsInvalid(
                f"The instructions contain a control character (U+{code:04X}) at character "
                f"{index}; remove it and send them again."
            )
    if not text.strip():
        raise InstructionsInvalid("The instructions are empty: say what the draft must do.")
    return text.strip()


def _frozen_packet(*, case: Case, packet_id: int) -> Packet:
    packet = (
        Packet.objects.filter(pk=packet_id, case=case).first()
        if selectors.id_is_valid(packet_id)
        else None
    )
    if packet is None:
        raise PacketNotFound(f"No packet {packet_id} in this case.")
    if packet.status != Packet.Status.FROZEN:
        raise PacketNotFrozen(
            f"“{packet.title}” version {packet.version} is not frozen: models read only a frozen "
            "packet. Freeze it, then start the run."
        )
    if not packet.frozen_pages.exists():
        raise PacketEmpty(f"“{packet.title}” has no pages: add evidence, freeze it, then start.")
    return packet


def _require_routes(names: list[str]) -> None:
    """Every model role of the graph has an enabled, routable deployment now."""
    for name in names:
        role = STAGE_ROLES[name]
        if role and not dispatch.deployments_for_role(role):
            raise RoleUnavailable(_unavailable_reason(role))


def _unavailable_reason(role: str) -> str:
    """Why the role has no routable deployment: no route at all (an admin must add one), or
    routes whose backends are not healthy now (each named with its state: wait, or reroute)."""
    label = Role(role).label
    routes = list(
        RoleRoute.objects.filter(
            role=role, deployment__enabled=True, deployment__backend__enabled=True
        )
        .select_related("deployment__backend__health")
        .order_by("position")[:5]
    )
    if not routes:
        return (
            f"No deployment is routed for the {label} role: an admin must route one (Cluster, "
            "deployments and routes), then start again."
        )
    states = []
    for route in routes:
        backend = route.deployment.backend
        health = getattr(backend, "health", None)
        if health is None or health.state in (BackendHealth.State.OK, BackendHealth.State.UNKNOWN):
            why = "its server serves another model"
        else:
            why = health.get_state_display().lower()
            if health.message:
                why = f"{why}: {health.message[:120]}"
        states.append(f"{route.deployment} ({why})")
    return (
        f"The {label} role is routed, but no backend of its routes is healthy now: "
        f"{'; '.join(states)}. Start again once the cluster page shows one healthy (the "
        "health check runs every few seconds), or ask an admin to route a healthy one."
    )


# --- Starting --------------------------------------------------------------------------------


def run_start(
    *, user: User, case_id: int, request: RunRequest, idempotency_key: str = ""
) -> tuple[Run, bool]:
    """Queue a run and all its stages; returns (run, created). With an `idempotency_key` the
    same person already used for the same request, answers that run (created False)."""
    key = (idempotency_key or "").strip()
    if len(key) > MAX_IDEMPOTENCY_KEY:
        raise IdempotencyKeyInvalid(
            f"The Idempotency-Key is over {MAX_IDEMPOTENCY_KEY} characters."
        )
    if key:
        existing = _run_for_key(user=user, case_id=case_id, key=key, request=request)
        if existing is not None:
            return existing, False
    try:
        return _run_create(user=user, case_id=case_id, request=request, key=key), True
    except IntegrityError:
        # The same key, committed meanwhile by a concurrent request.
        existing = _run_for_key(user=user, case_id=case_id, key=key, request=request)
        if existing is None:
            raise
        return existing, False


def _run_for_key(*, user: User, case_id: int, key: str, request: RunRequest) -> Run | None:
    run = Run.objects.filter(created_by=user, idempotency_key=key).first()
    if run is None:
        return None
    same = (
        run.case_id == case_id
        and run.kind == request.kind
        and run.packet_id == request.packet_id
        and run.instructions == str(request.instructions).strip()
        and run.high_stakes == bool(request.high_stakes)
    )
    if not same:
        raise IdempotencyKeyReused(
            "This Idempotency-Key was already used for a different run; use a new key for a "
            "new request."
        )
    return run


@transaction.atomic
def _run_create(*, user: User, case_id: int, request: RunRequest, key: str) -> Run:
    case = selectors.case_for_user(user=user, case_id=case_id)
    require_member(user=user, case=case, doing="start a drafting run")
    names = stage_plan(kind=request.kind, high_stakes=bool(request.high_stakes))
    instructions = _instructions(request.instructions)
    packet = _frozen_packet(case=case, packet_id=request.packet_id)
    _require_routes(names)
    # Refused before anything is written or any GPU time spent: a stage that cannot fit.
    budget.run_plan_check(
        names,
        roles=STAGE_ROLES,
        kind=Run.Kind(request.kind).label.lower(),
        instructions=instructions,
    )
    run = Run.objects.create(
        case=case,
        kind=request.kind,
        packet=packet,
        instructions=instructions,
        high_stakes=bool(request.high_stakes),
        created_by=user,
        idempotency_key=key,
    )
    stages = Stage.objects.bulk_create(
        Stage(run=run, position=position, name=name, role=STAGE_ROLES[name])
        for position, name in enumerate(names, start=1)
    )
    account_services.audit_record(
        actor=user,
        action="run.start",
        case=case,
        target=run,
        detail={"kind": run.kind, "packet": packet.pk, "stages": len(stages)},
    )
    run_event_append(run=run, kind="run.queued", payload=_run_payload(run))
    stage_defer(stage=stages[0])
    return run


def stage_queue(stage: Stage) -> str:
    """`board.<id>` of the role's first routable deployment; `cluster` for the checks.

    When none is routable at this moment (a server restarting, a backend out of routing until
    its next health check), the board the stage last ran on, else the board of the role's first
    enabled route: the stage waits there, and its attempt fails with the true reason if nothing
    is back by then (pipeline.execute retries it). Raises only for a role with no enabled route.
    """
    if not stage.role:
        return CHECKS_QUEUE
    deployments = dispatch.deployments_for_role(stage.role)
    if deployments:
        return board_queue(deployments[0].backend.board_id)
    if stage.queue.startswith("board."):
        return stage.queue
    route = (
        RoleRoute.objects.filter(
            role=stage.role, deployment__enabled=True, deployment__backend__enabled=True
        )
        .select_related("deployment__backend")
        .order_by("position")
        .first()
    )
    if route is None:
        raise DomainError(
            f"No deployment is routed for the {Role(stage.role).label} role; the "
            f"{stage.get_name_display()} stage cannot be queued. Ask an admin to route one."
        )
    return board_queue(route.deployment.backend.board_id)


def board_queue(board_id: int) -> str:
    return f"board.{board_id}"


def stage_defer(*, stage: Stage, schedule_in: int = 0) -> None:
    """Queue the stage's job by task name (inside the caller's transaction: the job row commits
    with the stage's), to start `schedule_in` seconds from now (a retry's wait) or at once.
    Call with the run row locked or freshly created."""
    queue = stage_queue(stage)
    # Through Django's connection (lexweb.jobs.job_defer): the job commits with the stage's rows.
    job_id = job_defer(
        STAGE_TASK,
        queue=queue,
        schedule_in={"seconds": schedule_in} if schedule_in > 0 else None,
        stage_id=stage.pk,
    )
    Stage.objects.filter(pk=stage.pk).update(queue=queue, job_id=job_id, status=Stage.Status.QUEUED)
    stage.queue, stage.job_id, stage.status = queue, job_id, Stage.Status.QUEUED


# Jobs of one stage that may end failed before the run is given up (each job is itself up to
# three attempts when the database is lost, apps/drafting/tasks.py).
STRANDED_MAX_JOBS = 3

_STRANDED_SQL = """
SELECT s.id
  FROM drafting_stage AS s
  JOIN drafting_run AS r ON r.id = s.run_id
  JOIN procrastinate_jobs AS j ON j.id = s.job_id
 WHERE s.status IN ('queued', 'running') AND r.status IN ('queued', 'running')
   AND j.status = 'failed'
   AND NOT EXISTS (
       SELECT 1 FROM procrastinate_jobs AS o
        WHERE o.task_name = %s AND o.args ->> 'stage_id' = s.id::text
          AND o.status IN ('todo', 'doing'))
 ORDER BY s.id
"""
_FAILED_JOBS_SQL = (
    "SELECT count(*) FROM procrastinate_jobs "
    "WHERE task_name = %s AND args ->> 'stage_id' = %s AND status = 'failed'"
)
# Whether the database server started (was restarted) after the job first started and before
# it failed: then the job lost its connection, and saying so is true.
_DATABASE_RESTARTED_SQL = """
SELECT min(at) FILTER (WHERE type = 'started') <= pg_postmaster_start_time()
   AND pg_postmaster_start_time() <= max(at) FILTER (WHERE type = 'failed')
  FROM procrastinate_events
 WHERE job_id = %s
"""


@dataclass
class StrandedOutcome:
    requeued: list[int]  # stage ids queued again
    failed: list[int]  # stage ids whose run failed (too many failed jobs)


def stages_stranded_after_recovery(outcome: RecoveryOutcome) -> StrandedOutcome:
    """An after-recovery hook (apps.operations.services.recovery.AFTER_RECOVERY_HOOKS)."""
    return stages_stranded_recover(causes=outcome.causes)


def stages_stranded_recover(*, causes: Mapping[int, str] | None = None) -> StrandedOutcome:
    """Stages of live runs whose job ended failed without recording it, queued again.

    A stage records every failure it can (pipeline.execute); its job ends failed without a
    record when the database was away for every attempt (nothing could be written), or when
    the stalled-job recovery failed it for good after its worker died on each attempt. The run
    would stay queued or running with no job. Each such stage gets a new job; after
    STRANDED_MAX_JOBS failed jobs its run fails instead. The stage's error says what is known
    to be true: `causes` (job id -> cause, from the stalled-job recovery that just failed the
    job), else that the database restarted while the job ran (when it did), else that the job
    recorded no reason and the worker's log has it. Called by the stalled-job recovery
    (operations.recover_stalled); idempotent, and safe beside a stage that starts meanwhile
    (each is re-checked under the run's lock)."""
    with connection.cursor() as cursor:
        cursor.execute(_STRANDED_SQL, [STAGE_TASK])
        stage_ids = [row[0] for row in cursor.fetchall()]
    outcome = StrandedOutcome(requeued=[], failed=[])
    for stage_id in stage_ids:
        _stranded_recover_one(stage_id, outcome, causes or {})
    return outcome


def stage_job_stalled(job: StalledJob) -> None:
    """A stalled-job hook (apps.operations.services.recovery): a running stage whose job's
    worker is gone or silent gets a `stage.stalled` event now, before its job is queued again
    or failed, with the reason and when it last showed progress."""
    if job.task_name != STAGE_TASK:
        return
    stage = (
        Stage.objects.select_for_update()
        .filter(job_id=job.job_id, status=Stage.Status.RUNNING)
        .first()
    )
    if stage is None:
        return
    reason = (
        "its worker stopped (the process ended)"
        if job.worker_gone
        else f"its worker stopped answering ({job.why})"
    )
    payload = stage_payload(stage) | {"reason": reason, "worker_gone": job.worker_gone}
    run_event_append(run=stage.run_id, kind="stage.stalled", payload=payload)


def _stranded_cause(job_id: int | None, causes: Mapping[int, str]) -> str:
    if job_id is not None and job_id in causes:
        return causes[job_id]
    with connection.cursor() as cursor:
        cursor.execute(_DATABASE_RESTARTED_SQL, [job_id])
        row = cursor.fetchone()
    if row is not None and row[0]:
        return "the database restarted while it ran"
    return "it recorded no reason (the worker's log has its error)"


@transaction.atomic
def _stranded_recover_one(
    stage_id: int, outcome: StrandedOutcome, causes: Mapping[int, str]
) -> None:
    stage = Stage.objects.filter(pk=stage_id).only("run_id").first()
    if stage is None:
        return
    run = Run.objects.select_for_update().get(pk=stage.run_id)
    stage = Stage.objects.select_for_update().get(pk=stage_id)
    if run.status not in (Run.Status.QUEUED, Run.Status.RUNNING) or stage.status not in (
        Stage.Status.QUEUED,
        Stage.Status.RUNNING,
    ):
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT status FROM procrastinate_jobs WHERE id = %s FOR UPDATE", [stage.job_id]
        )
        row = cursor.fetchone()
        if row is None or row[0] != "failed":
            return  # its job is back (retried by hand) or was never this one
        cursor.execute(_FAILED_JOBS_SQL, [STAGE_TASK, str(stage.pk)])
        failed_jobs = int(cursor.fetchone()[0])
    cause = _stranded_cause(stage.job_id, causes)
    if failed_jobs >= STRANDED_MAX_JOBS:
        stage.status = Stage.Status.FAILED
        stage.error = (
            f"Its job failed {failed_jobs} times; the last time, {cause}. Start the run again "
            "once the cause is dealt with."
        )
        stage.finished_at = timezone.now()
        stage.save(update_fields=["status", "error", "finished_at"])
        run_event_append(run=run, kind="stage.status", payload=stage_payload(stage))
        stages_close(run=run, status=Stage.Status.SKIPPED)
        run_status_set(
            run=run, status=Run.Status.FAILED, error=f"{stage.get_name_display()}: {stage.error}"
        )
        outcome.failed.append(stage.pk)
        return
    stage.error = f"Its job failed: {cause}; queued again ({failed_jobs})."
    stage.save(update_fields=["error"])
    stage_defer(stage=stage)
    run_event_append(run=run, kind="stage.retrying", payload=stage_payload(stage))
    outcome.requeued.append(stage.pk)


# --- Events ----------------------------------------------------------------------------------


def _run_payload(run: Run) -> dict[str, object]:
    return {"status": run.status, "error": run.error}


def stage_payload(stage: Stage) -> dict[str, object]:
    return {
        "stage_id": stage.pk,
        "position": stage.position,
        "name": stage.name,
        "status": stage.status,
        "attempt": stage.attempt,
        "deployment": stage.deployment_label,
        "board": stage.board_label,
        "error": stage.error,
        "finish_reason": stage.finish_reason,
        "ending": stage.ending,
        "last_progress_at": stage.last_progress_at.isoformat() if stage.last_progress_at else None,
    }


def run_status_set(*, run: Run, status: str, error: str = "") -> None:
    """Move the run (locked by the caller) to `status`, with an event."""
    run.status = status
    run.error = error.replace("\x00", "")[:4000]
    now = timezone.now()
    fields = ["status", "error"]
    if status == Run.Status.RUNNING and run.started_at is None:
        run.started_at = now
        fields.append("started_at")
    if status in Run.FINISHED or status == Run.Status.STOPPED_BY_GATE:
        run.finished_at = now
        fields.append("finished_at")
    run.save(update_fields=fields)
    run_event_append(run=run, kind="run.status", payload=_run_payload(run))


def stages_close(*, run: Run, status: str) -> None:
    """Mark every queued or running stage of the (locked) run `status`, with events."""
    open_stages = Stage.objects.filter(
        run=run, status__in=(Stage.Status.QUEUED, Stage.Status.RUNNING)
    ).order_by("position")
    for stage in open_stages:
        stage.status = status
        stage.finished_at = timezone.now()
        stage.save(update_fields=["status", "finished_at"])
        run_event_append(run=run, kind="stage.status", payload=stage_payload(stage))


# --- Cancel and override ---------------------------------------------------------------------


def _locked_run(*, case: Case, run_id: int) -> Run:
    run = (
        Run.objects.select_for_update().filter(pk=run_id, case=case).first()
        if selectors.id_is_valid(run_id)
        else None
    )
    if run is None:
        raise NotFound(f"No run {run_id} in this case.")
    return run


@transaction.atomic
def run_cancel(*, user: User, case_id: int, run_id: int) -> Run:
    """Cancel a queued, running or gate-stopped run: its open stages are cancelled, a running
    stage's job sees it within a fraction of a second and closes its backend stream, a queued
    job finds nothing to do. A run that already ended: RunFinished (409). Audited."""
    case = selectors.case_for_user(user=user, case_id=case_id)
    require_member(user=user, case=case, doing="cancel a run")
    run = _locked_run(case=case, run_id=run_id)
    if run.status in Run.FINISHED:
        raise RunFinished(
            f"Run {run.pk} has already ended ({run.get_status_display().lower()}); there is "
            "nothing to cancel."
        )
    run.cancelled_by = user
    run.save(update_fields=["cancelled_by"])
    # A job still waiting in its queue is taken out (a running one sees the run cancelled).
    waiting = Stage.objects.filter(run=run, status=Stage.Status.QUEUED).exclude(job_id=None)
    jobs_here = manager.JobManager(DjangoConnector())
    for job_id in waiting.values_list("job_id", flat=True):
        if job_id is not None:  # excluded above; the column is nullable
            jobs_here.cancel_job_by_id(job_id)
    stages_close(run=run, status=Stage.Status.CANCELLED)
    Stage.objects.filter(run=run, status=Stage.Status.SKIPPED).update(status=Stage.Status.CANCELLED)
    run_status_set(run=run, status=Run.Status.CANCELLED, error=f"Cancelled by {user}.")
    account_services.audit_record(actor=user, action="run.cancel", case=case, target=run)
    return run


def _lawyers_decision(
    *,
    user: User,
    case_id: int,
    run_id: int,
    reason: str,
    status: str,
    doing: str,
    refusal: str,
    why: str,
) -> tuple[Case, Run, str]:
    """What a lawyer's written decision on a run needs (inside the caller's transaction): the
    case, its run locked and in `status` (else Conflict: the state it is in, then `refusal`), the
    reason on one line, MIN_OVERRIDE_REASON to MAX_OVERRIDE_REASON characters long."""
    case = selectors.case_for_user(user=user, case_id=case_id)
    require_member(user=user, case=case, doing=doing, lawyer=True)
    run = _locked_run(case=case, run_id=run_id)
    if run.status != status:
        raise Conflict(f"Run {run.pk} is {run.get_status_display().lower()}, {refusal}.")
    text = " ".join(str(reason or "").split())
    if not MIN_OVERRIDE_REASON <= len(text) <= MAX_OVERRIDE_REASON:
        raise DomainError(
            f"Give a reason of {MIN_OVERRIDE_REASON} to {MAX_OVERRIDE_REASON} characters for {why}."
        )
    return case, run, text


@transaction.atomic
def run_gate_override(*, user: User, case_id: int, run_id: int, reason: str) -> Run:
    """A lawyer of the case goes on past a gate that said "no" or "insufficient", with a written
    reason (kept on the run, audited); the next stage is queued."""
    case, run, text = _lawyers_decision(
        user=user,
        case_id=case_id,
        run_id=run_id,
        reason=reason,
        status=Run.Status.STOPPED_BY_GATE,
        doing="override the gate",
        refusal="not stopped by the gate: there is nothing to override",
        why="going on against the gate",
    )
    run.gate_override_by, run.gate_override_reason = user, text
    run.gate_override_at = timezone.now()
    run.finished_at = None
    run.save(
        update_fields=[
            "gate_override_by",
            "gate_override_reason",
            "gate_override_at",
            "finished_at",
        ]
    )
    skipped = Stage.objects.filter(run=run, status=Stage.Status.SKIPPED).order_by("position")
    following = list(skipped)
    Stage.objects.filter(pk__in=[s.pk for s in following]).update(status=Stage.Status.QUEUED)
    account_services.audit_record(
        actor=user, action="run.gate_override", case=case, target=run, detail={"reason": text}
    )
    run_event_append(run=run, kind="run.gate_override", payload={"by": str(user), "reason": text})
    run_status_set(run=run, status=Run.Status.RUNNING)
    if following:
        stage_defer(stage=following[0])
    return run


# --- Approval --------------------------------------------------------------------------------


def runs_close_on_approval(*, version: DraftVersion, user: User) -> list[Run]:
    """A lawyer approved `version` (apps.drafting.services.approval.version_approve, inside its
    transaction): every run of its draft that waits for approval and whose final version (the
    one its last writing stage stored) is this version or an earlier one of the same draft
    succeeds, with a run event. Approving an older version than the run's final one closes
    nothing; a run that failed or was cancelled stays as it is. Returns the runs closed."""
    closed = []
    waiting = Run.objects.select_for_update().filter(
        draft_id=version.draft_id, status=Run.Status.WAITING_FOR_APPROVAL
    )
    for run in waiting.order_by("pk"):
        final = (
            Stage.objects.filter(run=run, version__isnull=False)
            .select_related("version")
            .order_by("-position")
            .first()
        )
        if final is None or final.version is None or version.number < final.version.number:
            continue
        run_event_append(
            run=run,
            kind="run.approved",
            payload={"version": version.number, "by": str(user)},
        )
        run_status_set(run=run, status=Run.Status.SUCCEEDED)
        account_services.audit_record(
            actor=user,
            action="run.approved",
            case=run.case,
            target=run,
            detail={"draft": version.draft_id, "version": version.number},
        )
        closed.append(run)
    return closed


@transaction.atomic
def run_reject(*, user: User, case_id: int, run_id: int, reason: str) -> Run:
    """A lawyer of the case decides that a run waiting for approval will not do, with a
    written reason: the run ends `rejected` (an event, audited), and the versions it wrote stay
    in the draft, marked rejected with the same reason, so none of them is approved later.
    A run in any other state: Conflict (409)."""
    case, run, text = _lawyers_decision(
        user=user,
        case_id=case_id,
        run_id=run_id,
        reason=reason,
        status=Run.Status.WAITING_FOR_APPROVAL,
        doing="reject a run",
        refusal="not waiting for approval: there is nothing to reject",
        why="rejecting the run",
    )
    now = timezone.now()
    run.rejected_by, run.rejection_reason, run.rejected_at = user, text, now
    run.save(update_fields=["rejected_by", "rejection_reason", "rejected_at"])
    written = Stage.objects.filter(run=run, version__isnull=False).values_list("version_id")
    versions = DraftVersion.objects.filter(pk__in=written, approved_at__isnull=True)
    numbers = sorted(versions.values_list("number", flat=True))
    versions.update(rejected_by=user, rejected_at=now, rejection_reason=text)
    account_services.audit_record(
        actor=user,
        action="run.rejected",
        case=case,
        target=run,
        detail={"reason": text, "versions": ",".join(map(str, numbers))},
    )
    run_event_append(
        run=run, kind="run.rejected", payload={"by": str(user), "reason": text, "versions": numbers}
    )
    run_status_set(run=run, status=Run.Status.REJECTED, error=f"Rejected by {user}: {text}")
    return run
