"""The backend health registry: the one place pages, the API and routing learn whether a backend
can serve. Only the periodic check (`backends_health_check_all`) and real calls
(`backend_call_succeeded` / `backend_call_failed`) write it; nothing that answers a request
ever talks to a backend.

Rules (the numbers are module constants):

1. Liveness: every check asks the backend's health endpoint, with a short timeout.
2. Probe: when liveness is fine and neither a real call nor a probe has generated within
   PROBE_EVERY, a one-token chat on its first enabled deployment proves that the backend can
   generate, not only answer HTTP. `last_success_at` means "generated tokens", so a healthy
   `/health` alone never postpones the probe. While the row counts failures, every check
   probes: a backend whose /health is fine but whose generations fail must reach cooldown,
   not flip back to "ok" on its next liveness answer. A busy backend with no failures is not
   probed (the call it is serving will report). `last_probe_at` records the latest probe.
3. FAILURES_FOR_COOLDOWN failures in a row (checks or real calls, whichever come) put the
   backend in cooldown for COOLDOWN: no check and no call goes to it meanwhile. The first check
   after the cooldown decides: a success resets the count, a failure starts another cooldown.
4. "loading" (llama-server's 503 while it reads the model) is its own state, not a failure.

Messages are the backend client's (written to be safe to show) with the API key scrubbed once
more here and no URL or host of the backend (the clients and httpx name the backend by its URL;
the message names it by its `name`), cut to the column's length.
"""

import asyncio
import logging
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal
from urllib.parse import urlsplit

from asgiref.sync import sync_to_async
from django.db import transaction
from django.utils import timezone

from apps.cluster.backends import client_for
from apps.cluster.backends.base import (
    BackendClient,
    BackendError,
    ChatRequest,
    Finished,
    Timeouts,
)
from apps.cluster.events import BackendHealthEvent, publish_cluster
from apps.cluster.models import Backend, BackendHealth, Deployment
from apps.cluster.sampling import sampling_to_send
from apps.cluster.services.admission import Priority, admission
from lexweb.errors import NotFound
from lexweb.text import one_line

logger = logging.getLogger(__name__)

PROBE_EVERY = timedelta(minutes=5)
COOLDOWN = timedelta(minutes=2)
FAILURES_FOR_COOLDOWN = 3
# Liveness must be quick: a dead host should cost the check seconds, not minutes.
LIVENESS_TIMEOUTS = Timeouts(connect=3.0, first_token=5.0, between_tokens=5.0, probe=3.0)
LIVENESS_DEADLINE_SECONDS = 10.0
# A probe may have to wait for a slot or (Ollama) load the model; still bounded.
PROBE_TIMEOUTS = Timeouts(connect=3.0, first_token=60.0, between_tokens=30.0, probe=3.0)
PROBE_DEADLINE_SECONDS = 90.0
PROBE_MESSAGE = "Reply with one word."

# BackendHealth.message's max_length.
MESSAGE_LENGTH = BackendHealth._meta.get_field("message").max_length or 300
# Loaded model names kept in the registry (a backend may list hundreds).
MODELS_KEPT = 50


@dataclass(frozen=True)
class _Target:
    """What a check needs to know before it goes on the network."""

    backend: Backend
    health: BackendHealth
    probe_deployment: Deployment | None


@dataclass(frozen=True)
class _Observation:
    state: Literal["ok", "loading", "down"]
    message: str
    slots_total: int | None = None
    slots_busy: int | None = None
    models_loaded: tuple[str, ...] = ()
    probed: bool = False
    generated: bool = False


# --- Public services ------------------------------------------------------------------------


async def backend_health_check(*, backend_id: int, now: datetime | None = None) -> BackendHealth:
    """Check one backend and write its registry row; return the row.

    A backend in cooldown is not contacted (its row is returned unchanged). Network errors,
    timeouts and 5xx replies become a "down"/"cooldown" row with a message, never an exception.
    Raises NotFound for a missing backend. No transaction is open while the backend is asked.
    """
    now = now or timezone.now()
    target = await sync_to_async(_target_get)(backend_id=backend_id)
    if _cooling_down(target.health, now):
        return target.health
    observation = await _observe(target, now)
    return await sync_to_async(_observation_record)(
        backend_id=backend_id, observation=observation, now=now
    )


async def backends_health_check_all(*, now: datetime | None = None) -> list[BackendHealth]:
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
        *(backend_health_check(backend_id=pk, now=now) for pk in backend_ids),
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


def backend_call_failed(*, backend_id: int, message: str, now: datetime | None = None) -> None:
    """A real call failed on the backend's side (unreachable, timeout, 5xx, broken stream).
    Counts like a failed check. Errors of the request itself (context overflow, unknown model)
    are not the backend's fault and must not be reported here."""
    now = now or timezone.now()
    with transaction.atomic():
        locked = _row_lock(backend_id)
        if locked is None:
            return
        health, backend = locked
        before = _visible(health)
        _count_failure(health, message=_safe_message(message, backend), now=now)
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
    probe_deployment = (
        Deployment.objects.filter(backend=backend, enabled=True).order_by("pk").first()
    )
    return _Target(backend=backend, health=health, probe_deployment=probe_deployment)


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


async def _observe(target: _Target, now: datetime) -> _Observation:
    backend = target.backend
    client = client_for(backend, timeouts=LIVENESS_TIMEOUTS)
    try:
        liveness = await _liveness(client, backend)
        deployment = target.probe_deployment
        if deployment is None or not _should_probe(target, liveness, now):
            return liveness
        return await _probe(deployment, backend, liveness)
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
        return _Observation(state="down", message=_safe_message(str(error), backend))
    return _Observation(
        state=report.state,
        message=_safe_message(report.message, backend),
        slots_total=report.slots_total,
        slots_busy=report.slots_busy,
        models_loaded=report.models_loaded,
    )


def _should_probe(target: _Target, liveness: _Observation, now: datetime) -> bool:
    if liveness.state != "ok" or not _probe_due(target.health, now):
        return False
    # A busy backend is generating for someone; that call will report for it, unless the row
    # already counts failures, which only a generation may clear.
    idle = not liveness.slots_busy and admission.state(target.backend.pk).in_flight == 0
    return idle or target.health.consecutive_failures > 0


async def _probe(deployment: Deployment, backend: Backend, liveness: _Observation) -> _Observation:
    """One token from the backend's first enabled deployment, through admission like a call."""
    request = ChatRequest(
        model=deployment.model_name,
        messages=[{"role": "user", "content": PROBE_MESSAGE}],
        max_tokens=1,
        sampling=sampling_to_send(deployment.sampling),
        # Ollama reloads a model whose num_ctx changes: probe with the one real calls use.
        num_ctx=deployment.context_per_slot if backend.kind == Backend.Kind.OLLAMA else None,
    )
    client = client_for(backend, timeouts=PROBE_TIMEOUTS)
    try:
        async with (
            asyncio.timeout(PROBE_DEADLINE_SECONDS),
            admission.slot(backend.pk, slots=backend.slots, priority=Priority.BACKGROUND),
            client.stream_chat(request) as stream,
        ):
            finished = [event async for event in stream if isinstance(event, Finished)]
    except TimeoutError:
        message = f"The one-token probe of {deployment.model_name} timed out."
        return _probe_failed(liveness, message)
    except BackendError as error:
        message = f"The one-token probe of {deployment.model_name} failed: {error}"
        return _probe_failed(liveness, _safe_message(message, backend))
    finally:
        await client.aclose()
    if not finished:
        return _probe_failed(liveness, f"The probe of {deployment.model_name} did not finish.")
    return _Observation(
        state="ok",
        message="",
        slots_total=liveness.slots_total,
        slots_busy=liveness.slots_busy,
        models_loaded=liveness.models_loaded,
        probed=True,
        generated=True,
    )


def _probe_failed(liveness: _Observation, message: str) -> _Observation:
    return _Observation(
        state="down",
        message=message,
        slots_total=liveness.slots_total,
        slots_busy=liveness.slots_busy,
        models_loaded=liveness.models_loaded,
        probed=True,
    )


# --- Writing the row (short transactions) ---------------------------------------------------


def _observation_record(
    *, backend_id: int, observation: _Observation, now: datetime
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
        if observation.state == "ok":
            _mark_success(health, message=observation.message)
            if observation.generated:
                health.last_success_at = now
        elif observation.state == "loading":
            # It answered; it is just not ready. Not a failure, and not routable either.
            health.state = BackendHealth.State.LOADING
            health.message = observation.message or "Loading model."
            health.consecutive_failures = 0
            health.cooldown_until = None
        else:
            _count_failure(health, message=observation.message, now=now)
        health.save()
        _publish_if_changed(health, before)
        return health


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


def _count_failure(health: BackendHealth, *, message: str, now: datetime) -> None:
    health.consecutive_failures += 1
    message = message or "The backend failed."
    if health.consecutive_failures >= FAILURES_FOR_COOLDOWN:
        health.state = BackendHealth.State.COOLDOWN
        health.cooldown_until = now + COOLDOWN
        until = health.cooldown_until.astimezone(timezone.get_current_timezone())
        suffix = (
            f" ({health.consecutive_failures} failures in a row; "
            f"no calls until {until:%H:%M:%S %Z}.)"
        )
        health.message = message[: MESSAGE_LENGTH - len(suffix)] + suffix
    else:
        health.state = BackendHealth.State.DOWN
        health.cooldown_until = None
        health.message = message[:MESSAGE_LENGTH]


# Any URL at all ("scheme://..."): a proxy's error page may name other addresses too.
_ANY_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>()\[\]]*")


def _safe_message(message: str, backend: Backend) -> str:
    """The message as the registry stores it (dashboard, API, events): on one line, and
    without the backend's URL, host or API key. The clients name the backend by its URL, and
    httpx errors often quote it; the message names the backend instead."""
    # The clients never put the key in a message; this keeps it so if one ever echoes a
    # request back (a proxy's error page, say).
    if backend.api_key:
        message = message.replace(backend.api_key, "[API key]")
    label = f"backend {backend.name}"
    urls = {backend.base_url, backend.base_url.rstrip("/"), backend.address}
    for url in sorted(urls, key=len, reverse=True):
        if url:
            message = message.replace(url, label)
    message = _ANY_URL.sub("[URL]", message)
    host = urlsplit(backend.base_url).hostname or ""
    if len(host) >= 2:
        # The host (with its port) on its own, as in "Connect call failed ('10.0.0.5', 8080)".
        message = re.sub(
            rf"(?<![\w.-]){re.escape(host)}(?::\d+)?(?![\w-])", "[host]", message, flags=re.I
        )
    return one_line(message, MESSAGE_LENGTH)


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
