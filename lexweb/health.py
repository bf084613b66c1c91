"""Liveness and readiness probes for the firm's monitoring. Neither needs a session."""

import asyncio
import uuid
from datetime import timedelta
from typing import Literal, TypedDict

from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
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


async def _check_channel_layer() -> Check:
    layer = get_channel_layer()
    if layer is None:
        return {"ok": False, "detail": "no channel layer configured"}
    try:
        channel = await layer.new_channel(prefix="readyz.")
        token = uuid.uuid4().hex
        await layer.send(channel, {"type": "readyz.ping", "token": token})
        message = await asyncio.wait_for(layer.receive(channel), CHANNEL_LAYER_TIMEOUT)
    except Exception as exc:
        return {"ok": False, "detail": f"channel layer round trip failed: {type(exc).__name__}"}
    if message.get("token") != token:
        return {"ok": False, "detail": "channel layer returned another message"}
    return {"ok": True, "detail": "round trip ok"}


async def readiness() -> Readiness:
    database = await sync_to_async(_check_database)()
    worker = (
        await sync_to_async(_check_worker)()
        if database["ok"]
        else {"ok": False, "detail": "database unreachable"}
    )
    layer = await _check_channel_layer()
    checks: dict[str, Check] = {"database": database, "worker": worker, "channel_layer": layer}
    ok = all(check["ok"] for check in checks.values())
    return {"status": "ok" if ok else "unavailable", "checks": checks}


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
async def readyz(request: HttpRequest) -> JsonResponse:
    result = await readiness()
    return JsonResponse(result, status=200 if result["status"] == "ok" else 503)
