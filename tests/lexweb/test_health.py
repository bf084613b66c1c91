import subprocess

import pytest
from asgiref.sync import sync_to_async
from channels.layers import channel_layers
from django.test import AsyncClient, Client
from pytest_django.fixtures import Settings as SettingsWrapper

from apps.accounts.models import User
from apps.cases.models import Case
from tests.conftest import ws_connect

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def test_healthz_answers_json_without_touching_anything(client: Client) -> None:
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    cache_control = response["Cache-Control"]  # never cached (the security headers say no-store)
    assert "no-store" in cache_control or cache_control.startswith("max-age=0")


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_probes_accept_only_get(client: Client, method: str) -> None:
    assert getattr(client, method)("/healthz").status_code == 405
    assert getattr(client, method)("/readyz").status_code == 405


@pytest.mark.asyncio
async def test_readyz_is_unavailable_without_a_worker_and_says_why() -> None:
    response = await AsyncClient().get("/readyz")

    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["channel_layer"] == {"ok": True, "detail": "round trip ok"}
    assert body["checks"]["worker"] == {
        "ok": False,
        "detail": "no worker has sent a heartbeat recently",
    }


@pytest.mark.asyncio
@pytest.mark.slow
async def test_readyz_is_ok_once_a_real_worker_has_registered(
    lawyer: User, case: Case, lawyer_api: Client, worker_process: subprocess.Popen[bytes]
) -> None:
    # A job round trip proves the worker has started (it registers before taking jobs).
    member, _ = await ws_connect(f"/ws/cases/{case.pk}/events/", cookie_user=lawyer)
    await sync_to_async(lawyer_api.post)(f"/api/v1/cases/{case.pk}/worker-check")
    await member.receive_json_from(timeout=60)
    await member.disconnect()

    response = await AsyncClient().get("/readyz")

    assert response.status_code == 200, response.json()
    assert response.json()["checks"]["worker"]["detail"] == "1 worker(s) alive"


@pytest.mark.asyncio
async def test_readyz_reports_a_broken_channel_layer(settings: SettingsWrapper) -> None:
    # A Redis layer on a port where nothing listens: the round trip must fail, not hang.
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:9/0"]},
        }
    }
    channel_layers.backends.clear()
    try:
        response = await AsyncClient().get("/readyz")
    finally:
        channel_layers.backends.clear()

    assert response.status_code == 503
    check = response.json()["checks"]["channel_layer"]
    assert check["ok"] is False and "round trip failed" in check["detail"]
