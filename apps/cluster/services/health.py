"""The backend health registry: the one place pages, the API and routing learn whether a backend
can serve, and what its deployments really serve. Only the periodic check
(`backends_health_check_all`) and real calls (`backend_call_succeeded` / `backend_call_failed`)
write it; nothing that answers a request ever talks to a backend.

Rules (the numbers are module constants and settings):

1. Liveness: every check asks every enabled backend's health endpoint, with a short timeout,
   also during a cooldown (so a restarted server is noticed at the next check).
2. Served model and context: for each enabled deployment of a backend that answered, the check
   reads what the server serves and the context one request gets there (`client.served`:
   llama-server /props, /slots, /v1/models; Ollama /api/tags, /api/show, /api/ps with the
   num_ctx calls send) into the deployment's DeploymentHealth row. A deployment whose model the
   server does not serve is `misconfigured`: routing skips it, the dashboard and the admin show
   both names (`served_matches`: the configured name, or the GGUF file's name without its
   folder, `.gguf` and split suffix, since a llama-server started without --alias names its
   model by the file's path). The smaller of the served and the configured context is what the
   context guard and the evidence budget use (selectors.deployment_context_tokens).
3. Probe: when liveness is fine and neither a real call nor a probe has generated within
   PROBE_EVERY, a one-token chat on the backend's first enabled deployment that is not
   misconfigured proves that the backend can generate, not only answer HTTP. `last_success_at`
   means "generated tokens", so a healthy `/health` alone never postpones the probe. While the
   row counts failures, every check probes: a backend whose /health is fine but whose
   generations fail must not flip back to "ok" on its next liveness answer. A busy backend with
   no failures is not probed (the call it is serving will report). `last_probe_at` records the
   latest probe. A probe has PROBE_DEADLINE_SECONDS, so a round of checks ends within one check
   interval; an Ollama model not in memory gets LOAD_DEADLINE_SECONDS (the probe loads it).
4. Leaving routing: LEXWEB_BACKEND_FAILURES_TO_LEAVE (N) failed real calls in a row take a
   backend out of routing; fewer leave it routable (one dropped call never does). A failed check
   (its liveness or its probe) takes it out at once (`down`). The first check that finds it
   answering and generating brings it back.
5. Cooldown: N failures in a row in which the backend answered (an error status, an error event,
   a timeout: a sick server, not a gone one) put it in `cooldown` for COOLDOWN, counted from the
   check schedule: the cooldown ends at a scheduled check time (`next_check_at`), and that
   check decides (a success resets the count, a failure starts another cooldown). A check's
   own time is its scheduled time (`tick`, the periodic job's timestamp), not when a worker
   happened to start the job. During a cooldown the checks ask liveness only (no generation):
   a backend found not answering at all is `down` instead, and one found loading its model is
   `loading` (it was restarted); either way the first good check brings it back. Failures
   without any answer (connection refused or dropped: a server killed or restarting) never
   start a cooldown: N of them make it `down`, and the next good check ends that.
6. "loading" (llama-server's 503 while it reads the model) is its own state, not a failure.

Messages are the backend client's (written to be safe to show) with the API key scrubbed once
more here and no URL or host of the backend (the clients and httpx name the backend by its URL;
the message names it by its `name`), cut to the column's length.
"""

import asyncio
import logging
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Literal

import croniter
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from apps.cluster import labels
from apps.cluster.backends import client_for
from apps.cluster.backends.base import (
    BackendClient,
    BackendError,
    ChatRequest,
    Finished,
    ServedModel,
    Timeouts,
    backend_answered,
)
from apps.cluster.backends.ollama import ollama_tag
from apps.cluster.events import BackendHealthEvent, publish_cluster
from apps.cluster.models import Backend, BackendHealth, Deployment, DeploymentHealth
from apps.cluster.sampling import sampling_to_send
from apps.cluster.services.admission import Priority, admission
from lexweb.errors import DomainError, NotFound
from lexweb.text import one_line

logger = logging.getLogger(__name__)

PROBE_EVERY = timedelta(minutes=5)
COOLDOWN = timedelta(minutes=2)
# Liveness must be quick: a dead host should cost the check seconds, not minutes.
LIVENESS_TIMEOUTS = Timeouts(connect=3.0, first_token=5.0, between_tokens=5.0, probe=3.0)
LIVENESS_DEADLINE_SECONDS = 10.0
# A probe may have to wait for a slot; with liveness it still fits one 30 s check interval.
PROBE_TIMEOUTS = Timeouts(connect=3.0, first_token=20.0, between_tokens=10.0, probe=3.0)
PROBE_DEADLINE_SECONDS = 20.0
# Ollama loads a model on its first request: a probe of a model not in memory waits for that.
LOAD_TIMEOUTS = Timeouts(connect=3.0, first_token=80.0, between_tokens=30.0, probe=3.0)
LOAD_DEADLINE_SECONDS = 90.0
PROBE_MESSAGE = "Reply with one word."

# BackendHealth.message's max_length.
MESSAGE_LENGTH = BackendHealth._meta.get_field("message").max_length or 300
SERVED_LENGTH = DeploymentHealth._meta.get_field("served_model").max_length or 300
# The largest context a server may report and be believed (the site file's own bound).
MAX_CONTEXT = 100_000_000
# Loaded model names kept in the registry (a backend may list hundreds).
MODELS_KEPT = 50
# A split GGUF's part suffix ("-00001-of-00003").
_SPLIT_PART = re.compile(r"-\d{5}-of-\d{5}$")


def failures_to_leave() -> int:
    """Failed calls in a row after which a backend leaves routing (a setting, default 3)."""
    return int(settings.LEXWEB_BACKEND_FAILURES_TO_LEAVE)


def next_check_at(moment: datetime) -> datetime:
    """The first scheduled health check at or after `moment` (the cron of
    LEXWEB_CLUSTER_HEALTH_CRON, as the workers' periodic deferrer reads it); `moment` itself
    when there is no schedule."""
    cron = settings.LEXWEB_CLUSTER_HEALTH_CRON
    if not cron:
        return moment
    following = croniter.croniter(cron, start_time=moment.timestamp() - 1e-6).get_next(float)
    return datetime.fromtimestamp(following, tz=UTC)


def tick_from_timestamp(timestamp: int, *, now: datetime | None = None) -> datetime:
    """A periodic job's scheduled time (Unix seconds) as the check's `tick`; never later than
    `now` (a clock ahead must not lengthen a cooldown). DomainError when it is no time at all."""
    now = now or timezone.now()
    try:
        scheduled = datetime.fromtimestamp(timestamp, tz=UTC)
    except (OverflowError, OSError, ValueError):
        raise DomainError(f"Task argument timestamp is not a time: {timestamp!r:.40}.") from None
    return min(scheduled, now)


def served_matches(*, kind: str, configured: str, names: tuple[str, ...]) -> bool:
    """Whether a server that gives `names` for what it serves serves the model configured as
    `configured`. Ollama: the same tag (`llama3` is `llama3:latest`). llama-server: the same
    name, or the same file name without folder, `.gguf` and split-part suffix, case aside
    (without --alias it names its model by the file's path)."""
    if kind == Backend.Kind.OLLAMA:
        return ollama_tag(configured) in {ollama_tag(name) for name in names}
    wanted = configured.strip()
    stem = model_stem(wanted)
    return any(name.strip() == wanted or model_stem(name) == stem for name in names)


def model_stem(name: str) -> str:
    base = re.split(r"[\\/]", name.strip())[-1]
    if base.lower().endswith(".gguf"):
        base = base[: -len(".gguf")]
    return _SPLIT_PART.sub("", base).lower()


@dataclass(frozen=True)
class _Target:
    """What a check needs to know before it goes on the network."""

    backend: Backend
    health: BackendHealth
    deployments: tuple[Deployment, ...]  # enabled, in primary-key order


@dataclass(frozen=True)
class _Served:
    """What a check saw of one deployment."""

    deployment_id: int
    state: Literal["ok", "misconfigured", "unknown"]
    served_model: str = ""
    context: int | None = None
    source: str = ""
    message: str = ""
    loaded: bool = True


@dataclass(frozen=True)
class _Observation:
    state: Literal["ok", "loading", "down"]
    message: str
    slots_total: int | None = None
    slots_busy: int | None = None
    models_loaded: tuple[str, ...] = ()
    probed: bool = False
    generated: bool = False
    # False: no HTTP answer at all (see backend_answered).
    answered: bool = True
    served: tuple[_Served, ...] = ()


# --- Public services ------------------------------------------------------------------------


async def backend_health_check(
    *, backend_id: int, now: datetime | None = None, tick: datetime | None = None
) -> BackendHealth:
    """Check one backend, write its registry row and its deployments' rows; return its row.

    `now`: when the check runs (shown as its time); `tick`: the scheduled time of the check,
    from which cooldowns are counted (default: `now`). A backend in cooldown is asked only its
    liveness and what it serves. Network errors, timeouts and 5xx replies become a "down" or
    "cooldown" row with a message, never an exception. Raises NotFound for a missing backend.
    No transaction is open while the backend is asked.
    """
    now = now or timezone.now()
    tick = tick or now
    target = await sync_to_async(_target_get)(backend_id=backend_id)
    observation = await _observe(target, tick)
    return await sync_to_async(_observation_record)(
        backend_id=backend_id, observation=observation, now=now, tick=tick
    )


async def backends_health_check_all(
    *, now: datetime | None = None, tick: datetime | None = None
) -> list[BackendHealth]:
    """Check every enabled backend at once (each board's server answers for itself) and write
    each row as soon as its own check ends, so one slow backend delays nobody else's row.

    A backend deleted meanwhile is skipped. An unexpected error in one check does not stop the
    others; it is raised once all are done, so the job shows it.
    """
    now = now or timezone.now()
    backend_ids = [
        pk async for pk in Backend.objects.filter(enabled=True).values_list("pk", flat=True)
    ]
    results = await asyncio.gather(
        *(backend_health_check(backend_id=pk, now=now, tick=tick) for pk in backend_ids),
        return_exceptions=True,
    )
    rows: list[BackendHealth] = []
    unexpected: list[BaseException] = []
    for result in results:
        if isinstance(result, BackendHealth):
            rows.append(result)
        elif not isinstance(result, NotFound):
            unexpected.append(result)
    if unexpected:
        raise unexpected[0]
    return rows


def backend_call_succeeded(*, backend_id: int, now: datetime | None = None) -> None:
    """A real call generated tokens: the backend is healthy, and no probe is due for a while."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = _row_lock(backend_id)
        if locked is None:
            return
        health, _backend = locked
        before = _visible(health)
        _mark_success(health, message="")
        health.last_success_at = now
        health.save()
        _publish_if_changed(health, before)


def backend_call_failed(
    *, backend_id: int, message: str, answered: bool = True, now: datetime | None = None
) -> None:
    """A real call failed on the backend's side (unreachable, timeout, 5xx, broken stream).
    `answered`: False when no HTTP answer came at all (backend_answered). The backend stays
    routable until LEXWEB_BACKEND_FAILURES_TO_LEAVE of these in a row (rules 4 and 5). Errors
    of the request itself (context overflow, unknown model) are not the backend's fault and
    must not be reported here."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = _row_lock(backend_id)
        if locked is None:
            return
        health, backend = locked
        before = _visible(health)
        _call_failure(health, message=_safe_message(message, backend), answered=answered, now=now)
        health.save()
        _publish_if_changed(health, before)


def health_is_cooling_down(health: BackendHealth | None, *, now: datetime | None = None) -> bool:
    """True while the registry says: send nothing to this backend."""
    return health is not None and _cooling_down(health, now or timezone.now())


# --- Reading before the check ---------------------------------------------------------------


def _target_get(*, backend_id: int) -> _Target:
    backend = Backend.objects.filter(pk=backend_id).first()
    if backend is None:
        raise NotFound(f"No backend {backend_id}.")
    health = BackendHealth.objects.filter(backend=backend).first() or BackendHealth(backend=backend)
    deployments = tuple(Deployment.objects.filter(backend=backend, enabled=True).order_by("pk"))
    return _Target(backend=backend, health=health, deployments=deployments)


def _cooling_down(health: BackendHealth, now: datetime) -> bool:
    return (
        health.state == BackendHealth.State.COOLDOWN
        and health.cooldown_until is not None
        and health.cooldown_until > now
    )


def _probe_due(health: BackendHealth, now: datetime) -> bool:
    if health.consecutive_failures:
        return True
    return health.last_success_at is None or now - health.last_success_at >= PROBE_EVERY


# --- The network part (no transaction, no ORM) ----------------------------------------------


async def _observe(target: _Target, tick: datetime) -> _Observation:
    backend = target.backend
    client = client_for(backend, timeouts=LIVENESS_TIMEOUTS)
    try:
        liveness = await _liveness(client, backend)
        if liveness.state != "ok":
            return liveness
        liveness = replace(liveness, served=await _served_all(client, target))
        if _cooling_down(target.health, tick):
            # Rule 5: liveness only until the cooldown's scheduled end.
            return liveness
        served = {s.deployment_id: s for s in liveness.served}
        deployment = next(
            (d for d in target.deployments if served[d.pk].state != "misconfigured"), None
        )
        if deployment is None or not _should_probe(target, liveness, tick):
            return liveness
        return await _probe(deployment, backend, liveness, loaded=served[deployment.pk].loaded)
    finally:
        await client.aclose()


async def _liveness(client: BackendClient, backend: Backend) -> _Observation:
    try:
        async with asyncio.timeout(LIVENESS_DEADLINE_SECONDS):
            report = await client.health()
    except TimeoutError:
        return _Observation(
            state="down",
            message=f"No answer to the health check within {LIVENESS_DEADLINE_SECONDS:.0f} s.",
        )
    except BackendError as error:
        return _Observation(
            state="down",
            message=_safe_message(str(error), backend),
            answered=backend_answered(error),
        )
    return _Observation(
        state=report.state,
        message=_safe_message(report.message, backend),
        slots_total=report.slots_total,
        slots_busy=report.slots_busy,
        models_loaded=report.models_loaded,
        answered=report.answered,
    )


async def _served_all(client: BackendClient, target: _Target) -> tuple[_Served, ...]:
    """What the backend serves for each enabled deployment (rule 2). llama-server serves one
    model whatever a request names, so it is asked once."""
    backend = target.backend
    ollama = backend.kind == Backend.Kind.OLLAMA
    asked: dict[str, ServedModel | str] = {}
    seen: list[_Served] = []
    for deployment in target.deployments:
        key = deployment.model_name if ollama else ""
        if key not in asked:
            asked[key] = await _ask_served(client, backend, deployment, ollama=ollama)
        seen.append(_served_judge(deployment, backend, asked[key]))
    return tuple(seen)


async def _ask_served(
    client: BackendClient, backend: Backend, deployment: Deployment, *, ollama: bool
) -> ServedModel | str:
    """The server's answer, or the message of why it gave none."""
    try:
        async with asyncio.timeout(LIVENESS_DEADLINE_SECONDS):
            return await client.served(
                deployment.model_name, num_ctx=deployment.context_per_slot if ollama else None
            )
    except TimeoutError:
        return (
            f"{backend.name} did not say what it serves within {LIVENESS_DEADLINE_SECONDS:.0f} s."
        )
    except BackendError as error:
        return _safe_message(f"Could not read what {backend.name} serves: {error}", backend)


def _served_judge(deployment: Deployment, backend: Backend, answer: ServedModel | str) -> _Served:
    if isinstance(answer, str):
        return _Served(deployment_id=deployment.pk, state="unknown", message=answer)
    names = tuple(one_line(n, 200) for n in answer.names if n)
    served_model = one_line(", ".join(names), SERVED_LENGTH)
    configured = deployment.model_name
    context, source = answer.context_per_slot, answer.context_source
    if context is None or not 0 < context <= MAX_CONTEXT:
        # Not a context a slot can have (a broken or hostile server): as if it said nothing.
        context, source = None, ""
    if not names:
        state: Literal["ok", "misconfigured", "unknown"] = "unknown"
        message = f"{backend.name} did not name the model it serves."
    elif not served_matches(kind=backend.kind, configured=configured, names=names):
        state = "misconfigured"
        message = _mismatch_message(backend, configured, served_model)
    else:
        state = "ok"
        message = _context_message(deployment.context_per_slot, context, source)
    return _Served(
        deployment_id=deployment.pk,
        state=state,
        served_model=served_model,
        context=context,
        source=source,
        message=one_line(message, MESSAGE_LENGTH),
        loaded=answer.loaded,
    )


def _mismatch_message(backend: Backend, configured: str, served: str) -> str:
    if backend.kind == Backend.Kind.OLLAMA:
        return (
            f"{configured} is not pulled on {backend.name} (it has: {served}); an administrator "
            f"must pull it there (ollama pull {configured}) or correct the deployment."
        )
    return (
        f"{backend.name} serves {served}, not {configured}: correct the deployment's model name, "
        "or start the server with this model (or --alias)."
    )


def _context_message(configured: int, served: int | None, source: str) -> str:
    if served is None or served == configured:
        return ""
    return (
        f"The server gives one request {served} tokens ({source}); {configured} are configured. "
        f"The smaller, {min(served, configured)}, is used."
    )


def _should_probe(target: _Target, liveness: _Observation, now: datetime) -> bool:
    if liveness.state != "ok" or not _probe_due(target.health, now):
        return False
    # A busy backend is generating for someone; that call will report for it, unless the row
    # already counts failures, which only a generation may clear.
    idle = not liveness.slots_busy and admission.state(target.backend.pk).in_flight == 0
    return idle or target.health.consecutive_failures > 0


async def _probe(
    deployment: Deployment, backend: Backend, liveness: _Observation, *, loaded: bool
) -> _Observation:
    """One token from `deployment`, through admission like a call."""
    request = ChatRequest(
        model=deployment.model_name,
        messages=[{"role": "user", "content": PROBE_MESSAGE}],
        max_tokens=1,
        sampling=sampling_to_send(deployment.sampling),
        # Ollama reloads a model whose num_ctx changes: probe with the one real calls use.
        num_ctx=deployment.context_per_slot if backend.kind == Backend.Kind.OLLAMA else None,
    )
    deadline, timeouts = (
        (PROBE_DEADLINE_SECONDS, PROBE_TIMEOUTS)
        if loaded
        else (LOAD_DEADLINE_SECONDS, LOAD_TIMEOUTS)
    )
    client = client_for(backend, timeouts=timeouts)
    try:
        async with (
            asyncio.timeout(deadline),
            admission.slot(backend.pk, slots=backend.slots, priority=Priority.BACKGROUND),
            client.stream_chat(request) as stream,
        ):
            finished = [event async for event in stream if isinstance(event, Finished)]
    except TimeoutError:
        message = f"The one-token probe of {deployment.model_name} timed out ({deadline:.0f} s)."
        return _probe_failed(liveness, message, answered=True)
    except BackendError as error:
        message = f"The one-token probe of {deployment.model_name} failed: {error}"
        return _probe_failed(
            liveness, _safe_message(message, backend), answered=backend_answered(error)
        )
    finally:
        await client.aclose()
    if not finished:
        message = f"The probe of {deployment.model_name} did not finish."
        return _probe_failed(liveness, message, answered=True)
    return replace(liveness, state="ok", message="", probed=True, generated=True)


def _probe_failed(liveness: _Observation, message: str, *, answered: bool) -> _Observation:
    return replace(liveness, state="down", message=message, probed=True, answered=answered)


# --- Writing the rows (short transactions) --------------------------------------------------


def _observation_record(
    *, backend_id: int, observation: _Observation, now: datetime, tick: datetime
) -> BackendHealth:
    with transaction.atomic():
        locked = _row_lock(backend_id)
        if locked is None:
            raise NotFound(f"No backend {backend_id}.")
        health, backend = locked
        before = _visible(health)
        health.checked_at = now
        if observation.slots_total is not None:
            health.slots_total = observation.slots_total
        elif not health.slots_total:
            health.slots_total = backend.slots
        health.slots_busy = observation.slots_busy or 0
        health.models_loaded = [
            name
            for name in (one_line(n, 200) for n in observation.models_loaded[:MODELS_KEPT])
            if name
        ]
        if observation.probed:
            health.last_probe_at = now
        _state_record(health, observation, now=now, tick=tick)
        health.save()
        _served_record(observation.served, now=now)
        _publish_if_changed(health, before)
        return health


def _state_record(
    health: BackendHealth, observation: _Observation, *, now: datetime, tick: datetime
) -> None:
    cooling = _cooling_down(health, tick)
    if observation.state == "ok":
        # During a cooldown only liveness was asked: an answer is not yet a recovery.
        if not cooling:
            _mark_success(health, message=observation.message)
            if observation.generated:
                health.last_success_at = now
    elif observation.state == "loading":
        # It answered; it is just not ready (a restarted server). Not a failure, and not
        # routable either.
        health.state = BackendHealth.State.LOADING
        health.message = (observation.message or "Loading model.")[:MESSAGE_LENGTH]
        health.consecutive_failures = 0
        health.cooldown_until = None
    elif not (cooling and observation.answered):
        _check_failure(
            health, message=observation.message, answered=observation.answered, tick=tick
        )


def _served_record(served: tuple[_Served, ...], *, now: datetime) -> None:
    """The deployments' rows; a deployment removed during the check is skipped."""
    alive = set(
        Deployment.objects.filter(pk__in=[s.deployment_id for s in served]).values_list(
            "pk", flat=True
        )
    )
    for seen in served:
        if seen.deployment_id not in alive:
            continue
        DeploymentHealth.objects.update_or_create(
            deployment_id=seen.deployment_id,
            defaults={
                "state": seen.state,
                "served_model": seen.served_model,
                "served_context": seen.context,
                "context_source": seen.source,
                "message": seen.message,
                "checked_at": now,
            },
        )


def _row_lock(backend_id: int) -> tuple[BackendHealth, Backend] | None:
    """The registry row, locked for this transaction (created on first use); None when the
    backend is gone."""
    backend = Backend.objects.filter(pk=backend_id).first()
    if backend is None:
        return None
    health, _created = BackendHealth.objects.select_for_update().get_or_create(backend=backend)
    return health, backend


def _mark_success(health: BackendHealth, *, message: str) -> None:
    health.state = BackendHealth.State.OK
    health.message = message[:MESSAGE_LENGTH]
    health.consecutive_failures = 0
    health.cooldown_until = None


def _check_failure(health: BackendHealth, *, message: str, answered: bool, tick: datetime) -> None:
    """A failed check takes the backend out of routing at once (rule 4); the N-th failure in a
    row with an answer starts a cooldown (rule 5)."""
    health.consecutive_failures += 1
    message = message or "The backend failed."
    if answered and health.consecutive_failures >= failures_to_leave():
        _cooldown_start(health, message=message, start=tick)
        return
    health.state = BackendHealth.State.DOWN
    health.cooldown_until = None
    health.message = message[:MESSAGE_LENGTH]


def _call_failure(health: BackendHealth, *, message: str, answered: bool, now: datetime) -> None:
    """A failed real call: counted; the N-th in a row takes the backend out (rules 4 and 5)."""
    health.consecutive_failures += 1
    message = message or "The backend failed."
    failures, limit = health.consecutive_failures, failures_to_leave()
    if failures < limit:
        # Still routable, in whatever state it was; the message says why calls fail (the
        # dashboard shows the count beside it).
        health.message = message[:MESSAGE_LENGTH]
    elif answered:
        _cooldown_start(health, message=message, start=now)
    else:
        health.state = BackendHealth.State.DOWN
        health.cooldown_until = None
        suffix = f" ({failures} failures in a row; out of routing until a check finds it back.)"
        health.message = message[: MESSAGE_LENGTH - len(suffix)] + suffix


def _cooldown_start(health: BackendHealth, *, message: str, start: datetime) -> None:
    health.state = BackendHealth.State.COOLDOWN
    health.cooldown_until = next_check_at(start + COOLDOWN)
    until = health.cooldown_until.astimezone(timezone.get_current_timezone())
    suffix = (
        f" ({health.consecutive_failures} failures in a row; no calls until {until:%H:%M:%S %Z}.)"
    )
    health.message = message[: MESSAGE_LENGTH - len(suffix)] + suffix


def _safe_message(message: str, backend: Backend) -> str:
    """The message as the registry stores it (dashboard, API, events): on one line, and
    without the backend's URL, host or API key (cluster.labels, the one rule for every
    message about a backend); the backend is named by its `name`."""
    return labels.public_backend_message(message, backend, limit=MESSAGE_LENGTH)


def _visible(health: BackendHealth) -> tuple[object, ...]:
    # The dashboard shows when each backend was last checked, so every check is published.
    return (health.state, health.message, health.slots_total, health.slots_busy, health.checked_at)


def _publish_if_changed(health: BackendHealth, before: tuple[object, ...]) -> None:
    if _visible(health) == before:
        return
    checked_at = health.checked_at or timezone.now()
    event: BackendHealthEvent = {
        "type": "cluster.backend_health",
        "backend_id": health.backend_id,
        "state": health.state,
        "message": health.message,
        "slots_total": health.slots_total,
        "slots_busy": health.slots_busy,
        "checked_at": checked_at.isoformat(),
    }
    publish_cluster(event)
