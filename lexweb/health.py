"""Liveness and readiness probes for the firm's monitoring. Neither needs a session.

`/readyz` answers `status` "ok", "degraded" or "unavailable":
- unavailable (HTTP 503): the database, every worker or the channel layer is down; the product
  cannot do its work.
- degraded (HTTP 200): it can, but the job system is not keeping up: a job stuck past the
  stalled timeout (its worker died; recovery will queue it again), or a periodic job late (the
  machine slept, the deferrer stopped, a queue nobody works). Pages still work, so a load
  balancer keeps this instance; monitoring should alert on any status but "ok".
- ok (HTTP 200): everything above is fine.
Each check is `{"ok", "detail", ...}`; `jobs`, `queues` and `periodic` add their figures.
"""

import asyncio
import uuid
from datetime import timedelta
from typing import Any, Literal, TypedDict

from asgiref.sync import async_to_sync
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.utils.module_loading import import_string
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from procrastinate.contrib.django.models import ProcrastinateWorker

from apps.operations import selectors as job_selectors

CHANNEL_LAYER_TIMEOUT = 3.0


class Check(TypedDict):
    ok: bool
    detail: str


class Readiness(TypedDict):
    status: Literal["ok", "degraded", "unavailable"]
    checks: dict[str, Any]


# A failing one of these makes the product unavailable; of the others, degraded.
ESSENTIAL = ("database", "worker", "channel_layer")


def _check_database() -> Check:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as exc:
        return {"ok": False, "detail": f"database unreachable: {type(exc).__name__}"}
    return {"ok": True, "detail": "reachable"}


def _check_worker() -> Check:
    since = timezone.now() - timedelta(seconds=settings.LEXWEB_WORKER_STALE_SECONDS)
    try:
        alive = ProcrastinateWorker.objects.filter(last_heartbeat__gte=since).count()
    except Exception as exc:
        return {"ok": False, "detail": f"cannot read worker heartbeats: {type(exc).__name__}"}
    if alive == 0:
        return {"ok": False, "detail": "no worker has sent a heartbeat recently"}
    return {"ok": True, "detail": f"{alive} worker(s) alive"}


def _check_channel_layer() -> Check:
    """A real send and receive, on a private layer instance in its own event loop.

    Private, so that the probe shares no queue and no listener with this process's consumers
    (and, being on its own loop, never touches the loop they run on).
    """
    return async_to_sync(_round_trip)()


async def _round_trip() -> Check:
    config: dict[str, Any] | None = settings.CHANNEL_LAYERS.get("default")
    if not config:
        return {"ok": False, "detail": "no channel layer configured"}
    layer = import_string(config["BACKEND"])(**config.get("CONFIG", {}))
    try:
        channel = await layer.new_channel(prefix="readyz.")
        token = uuid.uuid4().hex
        await layer.send(channel, {"type": "readyz.ping", "token": token})
        message = await asyncio.wait_for(layer.receive(channel), CHANNEL_LAYER_TIMEOUT)
    except Exception as exc:
        return {"ok": False, "detail": f"channel layer round trip failed: {type(exc).__name__}"}
    finally:
        close = getattr(layer, "close_pools", None)  # channels_redis keeps connection pools
        if close is not None:
            await close()
    if message.get("token") != token:
        return {"ok": False, "detail": "channel layer returned another message"}
    return {"ok": True, "detail": "round trip ok"}


def _check_jobs() -> dict[str, Any]:
    seconds = settings.LEXWEB_JOB_STALLED_SECONDS
    stuck = job_selectors.jobs_stuck(stalled_seconds=seconds)
    listed = [
        {"id": j.id, "task": j.task, "queue": j.queue, "worker_id": j.worker_id}
        for j in stuck[: job_selectors.STUCK_LISTED]
    ]
    if not stuck:
        detail = "no job stuck"
    else:
        detail = f"{len(stuck)} job(s) running with no live worker for {seconds} s: " + ", ".join(
            f"{j['task']}[{j['id']}]" for j in listed
        )
    return {"ok": not stuck, "detail": detail, "stalled_seconds": seconds, "stuck": listed}


def _check_queues() -> dict[str, Any]:
    states = job_selectors.queues_state()
    queues = {
        q.name: {
            "queued": q.queued,
            "running": q.running,
            "oldest_queued_seconds": (
                None if q.oldest_queued_seconds is None else round(q.oldest_queued_seconds, 1)
            ),
        }
        for q in states
    }
    detail = "; ".join(
        f"{name}: {q['queued']} queued"
        + (f", oldest {_age(q['oldest_queued_seconds'])}" if q["queued"] else "")
        + f", {q['running']} running"
        for name, q in queues.items()
    )
    return {"ok": True, "detail": detail, "queues": queues}


def _check_periodic() -> dict[str, Any]:
    states = job_selectors.periodic_state()
    jobs = [
        {
            "task": p.task,
            "periodic_id": p.periodic_id,
            "cron": p.cron,
            "interval_seconds": p.interval_seconds,
            "last_run": p.last_run.isoformat() if p.last_run else None,
            "last_status": p.last_status,
            "due": p.due.isoformat() if p.due else None,
            "late_seconds": p.late_seconds,
            "ok": p.ok,
        }
        for p in states
    ]
    late = [p for p in states if not p.ok]
    if late:
        detail = "; ".join(
            f"{p.task} is {_age(p.late_seconds)} late (due every {_age(p.interval_seconds)})"
            for p in late
        )
    elif states:
        detail = f"{len(states)} periodic job(s) on time"
    else:
        detail = "no periodic job scheduled"
    return {"ok": not late, "detail": detail, "jobs": jobs}


def _age(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _guarded(check: Any) -> dict[str, Any]:
    try:
        result: dict[str, Any] = check()
    except Exception as exc:
        return {"ok": False, "detail": f"cannot read the job tables: {type(exc).__name__}"}
    return result


def readiness() -> Readiness:
    database = _check_database()
    down: Check = {"ok": False, "detail": "database unreachable"}
    worker = _check_worker() if database["ok"] else down
    layer = _check_channel_layer()
    checks: dict[str, Any] = {"database": database, "worker": worker, "channel_layer": layer}
    for name, check in (
        ("jobs", _check_jobs),
        ("queues", _check_queues),
        ("periodic", _check_periodic),
    ):
        checks[name] = _guarded(check) if database["ok"] else down
    if not all(checks[name]["ok"] for name in ESSENTIAL):
        status: Literal["ok", "degraded", "unavailable"] = "unavailable"
    elif not all(check["ok"] for check in checks.values()):
        status = "degraded"
    else:
        status = "ok"
    return {"status": status, "checks": checks}


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    result = readiness()
    return JsonResponse(result, status=503 if result["status"] == "unavailable" else 200)
