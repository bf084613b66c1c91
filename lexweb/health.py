"""Liveness and readiness probes for the firm's monitoring. Neither needs a session."""

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

CHANNEL_LAYER_TIMEOUT = 3.0


class Check(TypedDict):
    ok: bool
    detail: str


class Readiness(TypedDict):
    status: Literal["ok", "unavailable"]
    checks: dict[str, Check]


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


def readiness() -> Readiness:
    database = _check_database()
    worker = _check_worker() if database["ok"] else {"ok": False, "detail": "database unreachable"}
    layer = _check_channel_layer()
    checks: dict[str, Check] = {"database": database, "worker": worker, "channel_layer": layer}
    ok = all(check["ok"] for check in checks.values())
    return {"status": "ok" if ok else "unavailable", "checks": checks}


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    result = readiness()
    return JsonResponse(result, status=200 if result["status"] == "ok" else 503)
