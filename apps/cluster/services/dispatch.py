"""Dispatch: one call to a model, from role to tokens to telemetry.

`chat()` sends one prompt to one deployment:

1. Read the deployment and the backend's registry row (never the backend itself): a disabled
   or misconfigured deployment (its server serves another model) or a backend in cooldown is
   refused at once.
2. Context guard, on the context the slot really has (`selectors.deployment_context_tokens`:
   the smaller of the configured one and what the server reported at its last health check).
   llama-server: count the prompt with its /apply-template and /tokenize (each prompt once:
   cluster.tokens caches counts by text hash) and refuse a prompt that does not fit one slot
   with the requested output. Ollama cannot count before the call: the prompt's local estimate
   is recorded on the call, scaled by what the deployment's earlier calls reported
   (cluster.tokens, 2), and a prompt whose calibrated estimate does not fit is refused (not
   before a first call has calibrated it). Ollama always gets num_ctx = the deployment's
   configured context per slot (Ollama's context is per request, and one request is what a slot
   is), and its counts are checked afterwards against the context it really gives.
3. Admission: wait for one of the backend's slots, by priority.
4. Stream the reply; the caller sees each token as it comes.
5. Fail closed on silent truncation (see `_truncation`).
6. Record a CallRecord, tell the health registry whether the backend worked (and whether it
   answered at all: a refused or dropped connection is a server gone, not a sick one; see
   services.health), and publish the deployment's rolling decode speed.

`chat_for_role()` tries a role's route in order and falls back to the next deployment only
while nothing has been streamed.

No database transaction is open while a backend is talking; the ORM is reached only through
sync_to_async.
"""

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from asgiref.sync import sync_to_async
from django.apps import apps as django_apps
from django.db import transaction
from django.utils import timezone

from apps.cluster import labels, selectors, tokens
from apps.cluster.backends import client_for
from apps.cluster.backends.base import (
    BackendAuthError,
    BackendClient,
    BackendError,
    BackendProtocolError,
    BackendTimeout,
    BackendUnavailable,
    ChatRequest,
    ContextOverflow,
    Finished,
    Message,
    StreamFailed,
    Timeouts,
    Token,
    backend_answered,
)
from apps.cluster.events import DeploymentSpeedEvent, publish_cluster
from apps.cluster.models import (
    Backend,
    BackendHealth,
    CallRecord,
    Deployment,
    DeploymentHealth,
    Role,
    RoleRoute,
)
from apps.cluster.sampling import sampling_to_send
from apps.cluster.services import health
from apps.cluster.services.admission import Priority, admission
from lexweb.errors import DomainError, NotFound
from lexweb.text import one_line

TokenCallback = Callable[[str], Awaitable[None] | None]

ERROR_LENGTH = CallRecord._meta.get_field("error").max_length or 500
# Counting tokens takes no slot and milliseconds even for long prompts; a server that does not
# answer within this is hung, and the call should fail (or fall back) without waiting out the
# client's between-token limit.
COUNT_DEADLINE_SECONDS = 15.0


class PromptTooLongError(ContextOverflow, DomainError):
    """Refused before dispatch: the prompt and the requested output do not fit one slot."""

    code = "prompt_too_long"


class PromptTruncatedError(ContextOverflow, DomainError):
    """The backend read fewer prompt tokens than were sent; its answer was thrown away."""

    code = "prompt_truncated"


class DeploymentUnavailableError(BackendUnavailable, DomainError):
    """Refused before dispatch: disabled, misconfigured, or the backend is cooling down. Routing
    may fall back."""

    code = "unavailable"


@dataclass(frozen=True)
class CallResult:
    text: str
    finish_reason: str
    deployment_id: int
    call_record_id: int
    prompt_tokens: int
    completion_tokens: int
    time_to_first_token_ms: float | None
    duration_ms: float
    prefill_tokens_per_second: float | None
    decode_tokens_per_second: float | None


@dataclass
class _Call:
    """One call's telemetry, filled in as it goes."""

    deployment: Deployment
    role: str
    started_at: datetime
    stage_id: int | None = None
    prompt_tokens: int = 0
    # The prompt's local estimate, where the backend cannot count before the call (Ollama).
    prompt_estimate: int | None = None
    completion_tokens: int = 0
    pieces: list[str] = field(default_factory=list)
    dispatched_at: float | None = None  # time.perf_counter()
    first_token_at: float | None = None
    ended_at: float | None = None
    finished: Finished | None = None

    @property
    def backend(self) -> Backend:
        return self.deployment.backend

    def ms_since_dispatch(self, moment: float | None) -> float | None:
        if self.dispatched_at is None or moment is None:
            return None
        return (moment - self.dispatched_at) * 1000


# --- Routing --------------------------------------------------------------------------------


@dataclass(frozen=True)
class PassedOver:
    """A deployment routed for a role before the first one routable now, left out: why."""

    deployment: Deployment
    reason: str


def deployments_for_role(role: str, *, now: datetime | None = None) -> list[Deployment]:
    """The role's enabled deployments in fallback order, without those whose backend the
    registry marks down, loading or cooling down, and without those whose server serves another
    model (misconfigured); those whose backend counts recent failed calls last. Reads rows
    only; never asks a backend.

    A backend not checked yet ("unknown") is kept: a fresh install must work before the first
    health job. A cooldown whose time is over is kept too: the next call or check decides.
    """
    return routing_for_role(role, now=now)[0]


def routing_for_role(
    role: str, *, now: datetime | None = None
) -> tuple[list[Deployment], list[PassedOver]]:
    """`deployments_for_role`, and the deployments routed for the role ahead of the first one
    routable now that the registry left out, each with why ("its backend is down"): what a
    stage answered by a later deployment fell back from without calling it."""
    if role not in Role.values:
        raise DomainError(f"Unknown role {role!r:.40}.")
    now = now or timezone.now()
    routes = (
        RoleRoute.objects.filter(
            role=role, deployment__enabled=True, deployment__backend__enabled=True
        )
        .select_related(
            "deployment__backend__board__host", "deployment__backend__health", "deployment__health"
        )
        .order_by("position")
    )
    routable: list[Deployment] = []
    passed: list[PassedOver] = []
    for route in routes:
        reason = _unroutable_reason(route.deployment, now)
        if reason is None:
            routable.append(route.deployment)
        elif not routable:
            passed.append(PassedOver(route.deployment, reason))
    # A deployment whose backend counts failed calls (still routable: fewer than it takes to
    # leave) comes after those whose backends do not, each group in route order: a stage run
    # again after its stream dropped goes to a healthy fallback first, and back to its own
    # deployment once a call or a check has found that backend working again.
    return sorted(routable, key=_failing), passed


def _failing(deployment: Deployment) -> bool:
    row = _health_of(deployment.backend)
    return row is not None and row.consecutive_failures > 0


def _unroutable_reason(deployment: Deployment, now: datetime) -> str | None:
    """Why the registry leaves `deployment` out of routing now; None when it is routable."""
    if _misconfigured(deployment):
        return "its server serves another model"
    row = _health_of(deployment.backend)
    if row is None:
        return None
    if row.state == BackendHealth.State.DOWN:
        return "its backend is down"
    if row.state == BackendHealth.State.LOADING:
        return "its backend is still loading its model"
    if health.health_is_cooling_down(row, now=now):
        return "its backend is cooling down after failed calls"
    return None


def _health_of(backend: Backend) -> BackendHealth | None:
    """The registry row loaded with `backend` (select_related), or None: never a query."""
    try:
        return backend.health
    except BackendHealth.DoesNotExist:
        return None


def _misconfigured(deployment: Deployment) -> bool:
    served = selectors.deployment_served(deployment)
    return served is not None and served.state == DeploymentHealth.State.MISCONFIGURED


# --- Calls ----------------------------------------------------------------------------------


async def chat(
    *,
    deployment: Deployment | int,
    messages: list[Message],
    max_tokens: int,
    role: str = "",
    priority: int = Priority.NORMAL,
    json_schema: Mapping[str, object] | None = None,
    on_token: TokenCallback | None = None,
    timeouts: Timeouts | None = None,
    stage_id: int | None = None,
) -> CallResult:
    """Send `messages` to one deployment and return the whole reply (see the module docstring).

    Sampling is the admin's preset for the deployment; callers cannot change it. `priority`:
    lower is served first (admission.Priority). Every outcome is recorded, including refusals
    and cancellation; `stage_id` (a drafting stage's) is stored on the record as its link.
    Raises BackendError subclasses (all with messages safe to show):
    DeploymentUnavailableError, PromptTooLongError, PromptTruncatedError, BackendUnavailable
    and its BackendTimeout, StreamFailed, ...; NotFound for a missing deployment.
    """
    if max_tokens < 1:
        raise DomainError("max_tokens must be at least 1.")
    if role and role not in Role.values:
        raise DomainError(f"Unknown role {role[:40]!r}.")
    deployment_id = deployment if isinstance(deployment, int) else deployment.pk
    call = _Call(
        deployment=await sync_to_async(_deployment_load)(deployment_id=deployment_id),
        role=role,
        started_at=timezone.now(),
        stage_id=stage_id,
    )
    client = client_for(call.backend, timeouts=timeouts or Timeouts())
    try:
        return await _call_run(call, client, messages, max_tokens, priority, json_schema, on_token)
    finally:
        await client.aclose()


async def chat_for_role(
    *,
    role: str,
    messages: list[Message],
    max_tokens: int,
    priority: int = Priority.NORMAL,
    json_schema: Mapping[str, object] | None = None,
    on_token: TokenCallback | None = None,
    timeouts: Timeouts | None = None,
    stage_id: int | None = None,
    routing: Sequence[Deployment] | None = None,
) -> CallResult:
    """`chat()` on the role's first routable deployment, falling back to the next one when a
    deployment is unavailable (unreachable, timed out, cooling down) or its context is too small,
    as long as no token has been streamed: a reply is never stitched from two models.

    `routing`: the role's deployments as the caller read them (`routing_for_role`), so that a
    stage that planned its prompt on them reads the role's routing once; read here when None.
    """
    deployments = (
        list(routing) if routing is not None else await sync_to_async(deployments_for_role)(role)
    )
    label = Role(role).label
    if not deployments:
        raise DeploymentUnavailableError(f"No deployment for the {label} role is available now.")
    streamed = False

    async def relay(text: str) -> None:
        nonlocal streamed
        streamed = True
        if on_token is not None:
            await _deliver(on_token, text)

    failures: list[tuple[Deployment, BackendError]] = []
    for candidate in deployments:
        try:
            return await chat(
                deployment=candidate,
                messages=messages,
                max_tokens=max_tokens,
                role=role,
                priority=priority,
                json_schema=json_schema,
                on_token=relay,
                timeouts=timeouts,
                stage_id=stage_id,
            )
        except (BackendUnavailable, PromptTooLongError) as error:
            if streamed:
                raise
            failures.append((candidate, error))
        except NotFound:
            # Deleted by an admin since the route was read: as good as unavailable.
            removed = f"{candidate} was removed."
            named = labels.deployment_message(removed, deployment=candidate, role=role)
            failures.append((candidate, DeploymentUnavailableError(named)))
    errors = [error for _candidate, error in failures]
    if all(isinstance(error, PromptTooLongError) for error in errors):
        # Too long for every model of the role: the caller must shorten it, not retry later.
        raise errors[-1]
    # Each error names its deployment and role already (chat()).
    reasons = " ".join(str(error) for error in errors)
    message = f"Every deployment for the {label} role failed. {reasons}"
    raise DeploymentUnavailableError(message[:ERROR_LENGTH])


def _deployment_load(*, deployment_id: int) -> Deployment:
    deployment = (
        Deployment.objects.select_related("backend__board__host", "backend__health", "health")
        .filter(pk=deployment_id)
        .first()
    )
    if deployment is None:
        raise NotFound(f"No deployment {deployment_id}.")
    return deployment


async def _call_run(
    call: _Call,
    client: BackendClient,
    messages: list[Message],
    max_tokens: int,
    priority: int,
    json_schema: Mapping[str, object] | None,
    on_token: TokenCallback | None,
) -> CallResult:
    """Steps 1-6 for one call, recording whatever happens."""
    try:
        _refuse_unavailable(call.deployment)
        counted = await _context_guard(call, client, messages, max_tokens)
        request = _request_build(call.deployment, messages, max_tokens, json_schema)
        async with admission.slot(call.backend.pk, slots=call.backend.slots, priority=priority):
            finished = await _stream(call, client, request, on_token)
        # Ollama's window is the num_ctx sent, within the model's own context length.
        window = (
            None
            if request.num_ctx is None
            else selectors.deployment_context_tokens(call.deployment)
        )
        _truncation(call, finished, counted=counted, num_ctx=window)
    except asyncio.CancelledError:
        # Shielded: the caller's cancellation must not also cancel writing down that it happened.
        await asyncio.shield(
            _finish(call, CallRecord.Outcome.CANCELLED, "Cancelled by the caller.")
        )
        raise
    except BackendError as error:
        outcome, fault = _classify(error, call)
        # The raw message (the backend's address in it) is the call record's, for admins; the
        # caller's, shown to lawyers, names the deployment and role instead (cluster.labels).
        await _finish(
            call, outcome, str(error), backend_fault=fault, answered=backend_answered(error)
        )
        labels.error_relabel(error, deployment=call.deployment, role=call.role)
        raise
    except Exception as error:
        # A bug, not a backend's answer: recorded without its text, which may hold anything.
        await _finish(call, CallRecord.Outcome.ERROR, f"Internal error ({type(error).__name__}).")
        raise
    record_id = await _finish(call, CallRecord.Outcome.OK, "")
    return _result(call, finished, record_id)


def _refuse_unavailable(deployment: Deployment) -> None:
    backend = deployment.backend
    if not deployment.enabled or not backend.enabled:
        raise DeploymentUnavailableError(f"{deployment} is disabled.")
    if _misconfigured(deployment):
        served = selectors.deployment_served(deployment)
        raise DeploymentUnavailableError(
            f"{deployment} is misconfigured: {served.message if served else ''}"[:ERROR_LENGTH]
        )
    row = _health_of(backend)
    if row is not None and row.cooldown_until is not None and health.health_is_cooling_down(row):
        until = row.cooldown_until.astimezone(timezone.get_current_timezone())
        raise DeploymentUnavailableError(
            f"{backend.name} is cooling down after repeated failures until "
            f"{until:%H:%M:%S %Z}: {row.message}"[:ERROR_LENGTH]
        )


async def _context_guard(
    call: _Call, client: BackendClient, messages: list[Message], max_tokens: int
) -> int | None:
    """The prompt's token count where the backend can give one (None for Ollama); raises
    PromptTooLongError when prompt + max_tokens cannot fit one slot. llama-server counts with
    its tokenizer (cached by text: cluster.tokens); Ollama's prompt is estimated, and refused
    here only once the deployment's estimates are calibrated from earlier calls."""
    context = selectors.deployment_context_tokens(call.deployment)
    if max_tokens >= context:
        raise PromptTooLongError(
            f"The reply may take {max_tokens} tokens; the model's slot holds only {context}.",
            prompt_tokens=None,
            context=context,
        )
    tokenizer = tokens.tokenizer_of(
        call.backend.pk, call.backend.base_url, call.deployment.model_name
    )
    try:
        async with asyncio.timeout(COUNT_DEADLINE_SECONDS):
            counted = await tokens.count_messages(client, tokenizer, messages)
    except TimeoutError:
        raise BackendTimeout(
            f"{call.backend.name} did not count the prompt's tokens within "
            f"{COUNT_DEADLINE_SECONDS:.0f} s."
        ) from None
    if counted is None:
        await _estimate_guard(call, messages, max_tokens, context)
        return None
    call.prompt_tokens = counted
    if counted + max_tokens > context:
        raise PromptTooLongError(
            f"The prompt is {counted} tokens and the reply may take {max_tokens}; "
            f"the model's slot holds {context} tokens.",
            prompt_tokens=counted,
            context=context,
        )
    return counted


async def _estimate_guard(
    call: _Call, messages: list[Message], max_tokens: int, context: int
) -> None:
    """A backend without a tokenizer (Ollama): the prompt's estimate is recorded (it calibrates
    later estimates), and a prompt whose calibrated estimate cannot fit is refused. Before the
    deployment has a call to calibrate from, nothing is refused: the estimate alone is a guess,
    and Ollama's own count is checked after the call (`_truncation`)."""
    call.prompt_estimate = tokens.estimate_message_tokens(messages)
    calibration = await sync_to_async(selectors.deployment_token_calibration)(
        deployment_id=call.deployment.pk
    )
    expected = calibration.tokens(call.prompt_estimate)
    if calibration.calibrated and expected + max_tokens > context:
        raise PromptTooLongError(
            f"The prompt is about {expected} tokens ({calibration.describe()}) and the reply "
            f"may take {max_tokens}; the model's slot holds {context} tokens.",
            prompt_tokens=None,
            context=context,
        )


def _request_build(
    deployment: Deployment,
    messages: list[Message],
    max_tokens: int,
    json_schema: Mapping[str, object] | None,
) -> ChatRequest:
    sampling = sampling_to_send(deployment.sampling)
    ollama = deployment.backend.kind == Backend.Kind.OLLAMA
    return ChatRequest(
        model=deployment.model_name,
        messages=messages,
        max_tokens=max_tokens,
        sampling=sampling,
        json_schema=json_schema,
        num_ctx=deployment.context_per_slot if ollama else None,
    )


async def _stream(
    call: _Call, client: BackendClient, request: ChatRequest, on_token: TokenCallback | None
) -> Finished:
    call.dispatched_at = time.perf_counter()
    try:
        async with client.stream_chat(request) as stream:
            async for event in stream:
                if isinstance(event, Token):
                    if call.first_token_at is None:
                        call.first_token_at = time.perf_counter()
                    call.pieces.append(event.text)
                    if on_token is not None:
                        await _deliver(on_token, event.text)
                elif isinstance(event, Finished):
                    call.finished = event
    finally:
        call.ended_at = time.perf_counter()
    if call.finished is None:
        raise BackendProtocolError(f"{call.backend.name} ended the reply without its summary.")
    return call.finished


async def _deliver(on_token: TokenCallback, text: str) -> None:
    result = on_token(text)
    if inspect.isawaitable(result):
        await result


def _truncation(
    call: _Call, finished: Finished, *, counted: int | None, num_ctx: int | None
) -> None:
    """Fail closed when the backend may have read less of the prompt than was sent.

    - Either kind: it reports fewer prompt tokens than /tokenize counted before the call.
    - Ollama (`num_ctx`: the window it gives, the num_ctx sent within the model's own context
      length): it reports no prompt count at all (nothing rules a cut out);
      prompt_eval_count >= num_ctx (Ollama cuts an over-long prompt to exactly num_ctx, so a
      full window cannot be told from a cut one); or prompt + reply > num_ctx (Ollama shifts the
      window during generation, dropping prompt tokens).
    llama-server refuses an over-long prompt with a 400 instead of cutting it, and the guard has
    already made room for the reply, so a missing count there is accepted.
    """
    reported = finished.prompt_tokens
    completion = finished.completion_tokens or len(call.pieces)
    if reported is not None:
        call.prompt_tokens = reported
    call.completion_tokens = completion
    problem = None
    if counted is not None and reported is not None and reported < counted:
        problem = f"the backend read {reported} of the prompt's {counted} tokens"
    elif num_ctx is not None and reported is None:
        problem = "Ollama did not say how many prompt tokens it read"
    elif num_ctx is not None and reported is not None and reported >= num_ctx:
        problem = f"the prompt filled the whole {num_ctx}-token context"
    elif num_ctx is not None and reported is not None and reported + completion > num_ctx:
        problem = (
            f"the prompt ({reported} tokens) and the reply ({completion}) overflowed "
            f"the {num_ctx}-token context"
        )
    if problem is not None:
        raise PromptTruncatedError(
            f"The reply was discarded because the prompt may have been cut: {problem}. "
            "Shorten the prompt or ask for a shorter reply.",
            prompt_tokens=reported,
            context=num_ctx or selectors.deployment_context_tokens(call.deployment),
        )


def _classify(error: BackendError, call: _Call) -> tuple[str, bool]:
    """The CallRecord outcome for `error`, and whether it counts against the backend's health."""
    if isinstance(error, PromptTooLongError | DeploymentUnavailableError):
        return CallRecord.Outcome.REFUSED, False
    if isinstance(error, PromptTruncatedError):
        return CallRecord.Outcome.TRUNCATED, False
    backend_fault = isinstance(
        error, BackendUnavailable | StreamFailed | BackendProtocolError | BackendAuthError
    )
    return CallRecord.Outcome.ERROR, backend_fault


# --- Recording ------------------------------------------------------------------------------


async def _finish(
    call: _Call, outcome: str, error: str, *, backend_fault: bool = False, answered: bool = True
) -> int:
    if call.ended_at is None and call.dispatched_at is not None:
        call.ended_at = time.perf_counter()
    if not call.completion_tokens:
        call.completion_tokens = len(call.pieces)
    return await sync_to_async(_call_record)(
        call=call, outcome=outcome, error=error, backend_fault=backend_fault, answered=answered
    )


def _call_record(
    *, call: _Call, outcome: str, error: str, backend_fault: bool, answered: bool = True
) -> int:
    """Write the call's row and its effect on the registry; publish the new rolling speed."""
    deployment, backend = call.deployment, call.backend
    finished = call.finished
    with transaction.atomic():
        # Locked so an admin cannot delete the deployment under the new row; if it went during
        # the call, the row keeps its labels and the registry and speed are left alone.
        alive = Deployment.objects.select_for_update().filter(pk=deployment.pk).exists()
        # A stage removed during the call (its run deleted) leaves the record unlinked.
        stages = django_apps.get_model("drafting", "Stage")._default_manager
        linked = call.stage_id is not None and stages.filter(pk=call.stage_id).exists()
        record = CallRecord.objects.create(
            deployment=deployment if alive else None,
            deployment_label=str(deployment)[:300],
            board_label=str(backend.board)[:200],
            role=call.role,
            started_at=call.started_at,
            outcome=outcome,
            error=one_line(error, ERROR_LENGTH),
            prompt_tokens=call.prompt_tokens,
            prompt_estimate_tokens=call.prompt_estimate,
            completion_tokens=call.completion_tokens,
            finish_reason=finished.finish_reason[:32] if finished else "",
            time_to_first_token_ms=call.ms_since_dispatch(call.first_token_at),
            duration_ms=call.ms_since_dispatch(call.ended_at) or 0.0,
            prefill_tokens_per_second=finished.prefill_tokens_per_second if finished else None,
            decode_tokens_per_second=_decode_speed(call),
            stage_id=call.stage_id if linked else None,
        )
        if not alive:
            return record.pk
        # The backend generated (even if we threw the answer away for truncation): it works.
        if outcome in (CallRecord.Outcome.OK, CallRecord.Outcome.TRUNCATED):
            health.backend_call_succeeded(backend_id=backend.pk)
        elif backend_fault:
            health.backend_call_failed(backend_id=backend.pk, message=error, answered=answered)
        speed = selectors.deployment_speed_get(deployment_id=deployment.pk)
        event: DeploymentSpeedEvent = {
            "type": "cluster.deployment_speed",
            "deployment_id": deployment.pk,
            "decode_tokens_per_second": speed.decode_tokens_per_second,
            "calls": speed.calls,
            "usable": speed.usable,
        }
        publish_cluster(event)
    return record.pk


def _decode_speed(call: _Call) -> float | None:
    """The backend's own figure (llama.cpp timings, Ollama eval_count/eval_duration); failing
    that, the client's: tokens after the first over the time since the first."""
    if call.finished is not None and call.finished.decode_tokens_per_second:
        return call.finished.decode_tokens_per_second
    if call.first_token_at is None or call.ended_at is None or call.completion_tokens < 2:
        return None
    span = call.ended_at - call.first_token_at
    return (call.completion_tokens - 1) / span if span > 0 else None


def _result(call: _Call, finished: Finished, record_id: int) -> CallResult:
    return CallResult(
        text="".join(call.pieces),
        finish_reason=finished.finish_reason,
        deployment_id=call.deployment.pk,
        call_record_id=record_id,
        prompt_tokens=call.prompt_tokens,
        completion_tokens=call.completion_tokens,
        time_to_first_token_ms=call.ms_since_dispatch(call.first_token_at),
        duration_ms=call.ms_since_dispatch(call.ended_at) or 0.0,
        prefill_tokens_per_second=finished.prefill_tokens_per_second,
        decode_tokens_per_second=_decode_speed(call),
    )
