"""The cluster dashboard: the page, its JSON twin and its live stream.

Cluster state is not client material: any signed-in user sees it, nobody else, and a backend's
API key appears nowhere. The page reads registry rows only; events follow over /ws/cluster/.
"""

import asyncio
import html
import re
from datetime import timedelta
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cluster import selectors
from apps.cluster.events import (
    CLUSTER_GROUP,
    AgentStatusEvent,
    BackendHealthEvent,
    DeploymentSpeedEvent,
    GpuSampleEvent,
    publish_cluster,
)
from apps.cluster.models import (
    Backend,
    BackendHealth,
    Board,
    CallRecord,
    Deployment,
    Gpu,
    GpuStatus,
    Host,
)
from tests.conftest import session_client, token_client, ws_connect

GIB = 1024**3
API_KEY = "sk-secret-123"
URL = "/cluster/"
API_URL = "/api/v1/cluster/status"
WS = "/ws/cluster/"
_CSRF_VALUE = re.compile(r'(name="csrfmiddlewaretoken" value=")[^"]*"')


# --- Seed ---------------------------------------------------------------------------------


def _seed() -> dict[str, Any]:
    """A host without NVML, and a host with a two-GPU board serving two models (one fast, one
    slow) plus a backend that was never checked and a GPU never sampled."""
    now = timezone.now()
    dark = Host.objects.create(
        name="gpu-host-1",
        agent_status=Host.AgentStatus.NO_NVML,
        agent_message="libnvidia-ml.so.1 not found",
        agent_seen_at=now,
    )
    host = Host.objects.create(name="tr-pro", agent_status=Host.AgentStatus.OK, agent_seen_at=now)
    board = Board.objects.create(host=host, name="board-a")
    gpus = [
        Gpu.objects.create(
            host=host, index=index, name="Tesla V100-SXM2-32GB", memory_bytes=32 * GIB, board=board
        )
        for index in (4, 5)
    ]
    for gpu, used in zip(gpus, (12, 10), strict=True):
        GpuStatus.objects.create(
            gpu=gpu,
            sampled_at=now,
            utilisation_pct=37,
            memory_used_bytes=used * GIB,
            memory_total_bytes=32 * GIB,
            temperature_c=61,
            power_w=180.4,
            power_limit_w=300,
        )
    loose = Gpu.objects.create(
        host=host, index=0, name="Tesla V100-SXM2-16GB", memory_bytes=16 * GIB
    )
    backend = Backend.objects.create(
        name="llama-board-a",
        kind=Backend.Kind.LLAMA_CPP,
        base_url="http://127.0.0.1:8081",
        board=board,
        slots=4,
        api_key=API_KEY,
    )
    BackendHealth.objects.create(
        backend=backend,
        state=BackendHealth.State.OK,
        message="model loaded",
        checked_at=now,
        slots_total=4,
        slots_busy=1,
    )
    unchecked = Backend.objects.create(
        name="ollama-spare",
        kind=Backend.Kind.OLLAMA,
        base_url="http://127.0.0.1:11434",
        board=board,
        api_key=API_KEY,
    )
    fast = Deployment.objects.create(
        backend=backend, model_name="qwen3.6-35b-a3b", memory_estimate_bytes=40 * GIB
    )
    slow = Deployment.objects.create(backend=backend, model_name="qwen3.6-27b-dense")
    for deployment, speeds in ((fast, (50.0, 52.0)), (slow, (30.0,))):
        for speed in speeds:
            _call(deployment, speed)
    return {
        "dark": dark, "host": host, "board": board, "gpus": gpus, "loose": loose,
        "backend": backend, "unchecked": unchecked, "fast": fast, "slow": slow,
    }  # fmt: skip


def _call(
    deployment: Deployment,
    speed: float | None,
    *,
    ago: timedelta = timedelta(minutes=1),
    outcome: str = CallRecord.Outcome.OK,
) -> CallRecord:
    return CallRecord.objects.create(
        deployment=deployment,
        deployment_label=str(deployment),
        board_label="tr-pro / board-a",
        started_at=timezone.now() - ago,
        outcome=outcome,
        completion_tokens=100,
        decode_tokens_per_second=speed,
    )


@pytest.fixture
def seeded(db: None) -> dict[str, Any]:
    return _seed()


def _text(fragment: str) -> str:
    """The text of an HTML fragment, whitespace collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _element(page: str, attribute: str, value: int) -> str:
    """The text of the first element carrying `attribute="value"` (a row or an article)."""
    match = re.search(rf'<(\w+)[^>]*\s{attribute}="{value}"[^>]*>(.*?)</\1>', page, re.S)
    assert match, f"no element with {attribute}={value}"
    return _text(match.group(2))


_SPARK_END = re.compile(r'data-end="\d+"')


def _page(client: Client, path: str = URL) -> str:
    response = client.get(path)
    assert response.status_code == 200
    # A sparkline's right edge is "now" to the second; two renders may straddle a second.
    page = _CSRF_VALUE.sub(r'\1<csrf>"', response.content.decode())
    return _SPARK_END.sub('data-end="now"', page)


# --- The page -----------------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["lawyer", "staff", "admin_user"])
def test_any_signed_in_user_sees_gpus_backends_and_deployments(
    seeded: dict[str, Any], persona: str, request: pytest.FixtureRequest
) -> None:
    page = _page(session_client(request.getfixturevalue(persona)))

    dark = _element(page, "data-host-id", seeded["dark"].pk)
    assert "No NVML on gpu-host-1: libnvidia-ml.so.1 not found (retrying)" in dark
    gpu = _element(page, "data-gpu-id", seeded["gpus"][0].pk)
    assert gpu.startswith("4 Tesla V100-SXM2-32GB 37 % 12.0 of 32.0 GiB 61 °C 180 W of 300 W")
    assert "— of 16.0 GiB" in _element(page, "data-gpu-id", seeded["loose"].pk)
    backend = _element(page, "data-backend-id", seeded["backend"].pk)
    assert backend.startswith("llama-board-a llama.cpp llama-server tr-pro / board-a Healthy")
    assert "model loaded 1 of 4" in backend
    unchecked = _element(page, "data-backend-id", seeded["unchecked"].pk)
    assert "Not checked yet" in unchecked and "not yet" in unchecked
    fast = _element(page, "data-deployment-id", seeded["fast"].pk)
    # Estimate, then what NVML measures on the board (12 + 10 of 2 x 32 GiB), then the speed.
    assert "40.0 GiB 22.0 of 64.0 GiB 51.0 tok/s usable 2" in fast
    slow = _element(page, "data-deployment-id", seeded["slow"].pk)
    assert "not estimated 22.0 of 64.0 GiB 30.0 tok/s slow 1" in slow
    assert 'href="/cluster/"' in page  # the main navigation links here


@pytest.mark.django_db
def test_a_sensor_the_card_lacks_shows_as_not_available_not_as_zero(
    lawyer: User, seeded: dict[str, Any]
) -> None:
    GpuStatus.objects.filter(gpu=seeded["gpus"][1]).update(
        utilisation_pct=None, temperature_c=None, power_w=None, power_limit_w=None
    )

    page = _page(session_client(lawyer))
    row = _element(page, "data-gpu-id", seeded["gpus"][1].pk)
    assert row.startswith("5 Tesla V100-SXM2-32GB n/a 10.0 of 32.0 GiB n/a n/a")
    api = token_client(lawyer).get(API_URL).json()
    boards = [board for host in api["hosts"] for board in host["boards"]]
    readings = [g["reading"] for b in boards for g in b["gpus"] if g["index"] == 5]
    assert readings[0]["temperature_c"] is None and readings[0]["power_w"] is None


@pytest.mark.django_db
def test_the_page_is_fine_with_an_empty_cluster(lawyer: User) -> None:
    page = _page(session_client(lawyer))

    assert "No GPU hosts are configured" in page
    assert "No backends are configured" in page
    assert "No models are deployed" in page


@pytest.mark.django_db
def test_anonymous_is_sent_to_sign_in(seeded: dict[str, Any]) -> None:
    response = Client().get(URL)

    assert response.status_code == 302
    assert response["Location"] == redirect_to_login(URL, reverse(settings.LOGIN_URL))["Location"]
    assert b"tr-pro" not in response.content


@pytest.mark.django_db
def test_a_bearer_token_does_not_open_the_page(lawyer: User, seeded: dict[str, Any]) -> None:
    response = token_client(lawyer).get(URL)

    assert response.status_code == 302
    # Sent to sign in like anybody without a session, and shown nothing of the cluster.
    assert response["Location"] == redirect_to_login(URL, reverse(settings.LOGIN_URL))["Location"]
    assert b"tr-pro" not in response.content


@pytest.mark.django_db
def test_no_api_key_on_the_page_or_in_the_api(lawyer: User, seeded: dict[str, Any]) -> None:
    page = session_client(lawyer).get(URL).content.decode()
    api = token_client(lawyer).get(API_URL).content.decode()

    for body in (page, api):
        assert API_KEY not in body
        assert "api_key" not in body
        # Nor the URLs, which may carry credentials.
        assert "127.0.0.1:8081" not in body


@pytest.mark.django_db
def test_hostile_text_from_agents_and_backends_is_escaped(
    lawyer: User, seeded: dict[str, Any]
) -> None:
    script = "<script>alert(1)</script>"
    Host.objects.filter(pk=seeded["dark"].pk).update(agent_message=script)
    BackendHealth.objects.filter(pk=seeded["backend"].pk).update(message=f'"><img src=x>{script}')
    Deployment.objects.filter(pk=seeded["fast"].pk).update(model_name=script)

    page = _page(session_client(lawyer))

    assert script not in page and "<img src=x>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert f"No NVML on gpu-host-1: {script} (retrying)" in _element(
        page, "data-host-id", seeded["dark"].pk
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "query",
    ["?host=../../etc/passwd", "?gpu=%00&gpu=1", "?<script>=1", "?" + "x" * 5000, "?page=-1"],
)
def test_the_page_takes_no_parameters_and_ignores_query_strings(
    lawyer: User, seeded: dict[str, Any], query: str
) -> None:
    client = session_client(lawyer)

    assert _page(client, URL + query) == _page(client)


@pytest.mark.django_db
@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_page_only_answers_get(lawyer: User, seeded: dict[str, Any], method: str) -> None:
    client = session_client(lawyer)
    before = list(GpuStatus.objects.order_by("pk").values_list())

    response = getattr(client, method)(URL, {"utilisation_pct": 0})

    assert response.status_code == 405
    assert list(GpuStatus.objects.order_by("pk").values_list()) == before


@pytest.mark.django_db
def test_the_page_is_not_cached(lawyer: User, seeded: dict[str, Any]) -> None:
    response = session_client(lawyer).get(URL)

    assert "no-store" in response["Cache-Control"]


@pytest.mark.django_db
def test_reload_shows_the_rows_as_they_are_now(lawyer: User, seeded: dict[str, Any]) -> None:
    client = session_client(lawyer)
    gpu, backend, fast = seeded["gpus"][0], seeded["backend"], seeded["fast"]
    assert "37 %" in _element(_page(client), "data-gpu-id", gpu.pk)

    # What the agent, the health job and the dispatcher write (and publish) meanwhile.
    GpuStatus.objects.filter(gpu=gpu).update(
        utilisation_pct=99, memory_used_bytes=30 * GIB, temperature_c=83, power_w=290.0
    )
    Host.objects.filter(pk=seeded["dark"].pk).update(
        agent_status=Host.AgentStatus.OK, agent_message=""
    )
    BackendHealth.objects.filter(pk=backend.pk).update(
        state=BackendHealth.State.DOWN, message="connection refused", slots_busy=0
    )
    _call(fast, 20.0)
    page = _page(client)

    assert "99 % 30.0 of 32.0 GiB 83 °C 290 W" in _element(page, "data-gpu-id", gpu.pk)
    assert "The GPU agent on gpu-host-1 reads NVML" in _element(
        page, "data-host-id", seeded["dark"].pk
    )
    assert "Failing connection refused 0 of 4" in _element(page, "data-backend-id", backend.pk)
    # (50 + 52 + 20) / 3, just over the line; the board now holds 30 + 10 GiB.
    assert "40.0 of 64.0 GiB 40.7 tok/s usable 3" in _element(page, "data-deployment-id", fast.pk)


# --- Queries ------------------------------------------------------------------------------


def _grow_cluster(extra: int) -> None:
    """`extra` more hosts, each with a sampled two-GPU board, a backend and a deployment."""
    now = timezone.now()
    for n in range(extra):
        host = Host.objects.create(name=f"extra-{n}", agent_status=Host.AgentStatus.OK)
        board = Board.objects.create(host=host, name="pair")
        for index in (0, 1):
            gpu = Gpu.objects.create(
                host=host, index=index, name="V100", memory_bytes=32 * GIB, board=board
            )
            GpuStatus.objects.create(gpu=gpu, sampled_at=now, memory_total_bytes=32 * GIB)
        backend = Backend.objects.create(
            name=f"extra-{n}", kind=Backend.Kind.OLLAMA, base_url="http://127.0.0.1:1", board=board
        )
        BackendHealth.objects.create(backend=backend, state=BackendHealth.State.OK)
        _call(Deployment.objects.create(backend=backend, model_name="m"), 45.0)


@pytest.mark.django_db
def test_dashboard_queries_do_not_grow_with_the_cluster(
    lawyer: User, seeded: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    client = session_client(lawyer)
    with CaptureQueriesContext(connection) as small:
        _page(client)
    _grow_cluster(12)

    with django_assert_max_num_queries(6):
        dashboard = selectors.dashboard_get()
    with CaptureQueriesContext(connection) as large:
        page = _page(client)

    assert len(dashboard.hosts) == 14 and len(dashboard.deployments) == 14
    assert "extra-11" in page
    assert len(large) == len(small)


@pytest.mark.django_db
def test_bulk_speeds_match_the_single_deployment_speed(seeded: dict[str, Any]) -> None:
    fast = seeded["fast"]
    # More calls than the window holds, plus ones that must not count.
    for n in range(25):
        _call(fast, 40.0 + n, ago=timedelta(minutes=2 + n))
    _call(fast, 1.0, ago=timedelta(days=2))
    _call(fast, 1.0, outcome=CallRecord.Outcome.ERROR)
    _call(fast, None)
    idle = Deployment.objects.create(backend=seeded["backend"], model_name="idle")

    speeds = selectors.deployment_speeds_get(deployment_ids=[fast.pk, seeded["slow"].pk, idle.pk])

    for deployment in (fast, seeded["slow"], idle):
        single = selectors.deployment_speed_get(deployment_id=deployment.pk)
        assert speeds[deployment.pk] == single
    assert speeds[fast.pk].calls == selectors.SPEED_WINDOW_CALLS
    assert speeds[idle.pk].decode_tokens_per_second is None and not speeds[idle.pk].usable
    assert selectors.deployment_speeds_get(deployment_ids=[]) == {}


# --- The API ------------------------------------------------------------------------------


def _without_ages(body: dict[str, Any]) -> dict[str, Any]:
    hosts = [{**host, "report_age_seconds": None} for host in body["hosts"]]
    return {**body, "hosts": hosts}


@pytest.mark.django_db
def test_api_returns_the_same_facts_to_a_token_or_a_session(
    lawyer: User, staff: User, seeded: dict[str, Any]
) -> None:
    by_token = token_client(lawyer).get(API_URL)
    by_session = session_client(staff).get(API_URL)

    assert by_token.status_code == by_session.status_code == 200
    body = by_token.json()
    # The same facts, but for the ages of the reports, which grow between the two calls.
    assert _without_ages(body) == _without_ages(by_session.json())
    hosts = {host["name"]: host for host in body["hosts"]}
    assert hosts["gpu-host-1"]["agent_status"] == "no_nvml"
    assert hosts["gpu-host-1"]["agent_message"] == "libnvidia-ml.so.1 not found"
    board = hosts["tr-pro"]["boards"][0]
    assert [gpu["index"] for gpu in board["gpus"]] == [4, 5]
    assert board["gpus"][0]["reading"]["utilisation_pct"] == 37
    assert hosts["tr-pro"]["loose_gpus"][0]["reading"] is None
    backends = {b["name"]: b for b in body["backends"]}
    assert backends["llama-board-a"]["state"] == "ok"
    assert (backends["llama-board-a"]["slots_busy"], backends["llama-board-a"]["slots_total"]) == (
        1,
        4,
    )
    assert "api_key" not in backends["llama-board-a"] and "base_url" not in backends["ollama-spare"]
    fast = next(d for d in body["deployments"] if d["id"] == seeded["fast"].pk)
    assert fast["memory_estimate_bytes"] == 40 * GIB
    assert (fast["board_memory_used_bytes"], fast["board_memory_total_bytes"]) == (
        22 * GIB,
        64 * GIB,
    )
    assert fast["speed"] == {"decode_tokens_per_second": 51.0, "calls": 2, "usable": True}
    assert body["usable_decode_tokens_per_second"] == 40.0


@pytest.mark.django_db
def test_api_refuses_anonymous_and_bad_tokens_with_401(seeded: dict[str, Any]) -> None:
    anonymous = Client().get(API_URL)
    bad_token = Client(headers={"authorization": "Bearer lxw_not_a_token"}).get(API_URL)

    for response in (anonymous, bad_token):
        assert response.status_code == 401
        assert response.json()["code"] == "unauthenticated"
        assert "tr-pro" not in response.content.decode()


@pytest.mark.django_db
def test_api_status_is_read_only(lawyer_api: Client, seeded: dict[str, Any]) -> None:
    before = list(GpuStatus.objects.order_by("pk").values_list())

    response = lawyer_api.post(API_URL, "{}", content_type="application/json")

    assert response.status_code == 405
    assert response["Allow"] == "GET"
    assert b"tr-pro" not in response.content and API_KEY.encode() not in response.content
    assert list(GpuStatus.objects.order_by("pk").values_list()) == before


# A token's first use also records when it was last used; then the six registry reads.
API_QUERY_CEILING = 8


@pytest.mark.django_db
def test_api_status_queries_do_not_grow_with_the_number_of_gpus(
    lawyer: User, seeded: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    client = token_client(lawyer)
    with django_assert_max_num_queries(API_QUERY_CEILING):
        small = client.get(API_URL)
    _grow_cluster(12)

    with django_assert_max_num_queries(API_QUERY_CEILING):
        large = client.get(API_URL)

    assert small.status_code == large.status_code == 200
    gpus = [
        gpu for host in large.json()["hosts"] for board in host["boards"] for gpu in board["gpus"]
    ]
    assert len(gpus) == 2 + 12 * 2
    assert len(large.json()["deployments"]) == 14


@pytest.mark.django_db
@pytest.mark.parametrize(
    "authorization",
    ["Bearer", "Bearer ", "Basic abc", "Bearer " + "lxw_" + "x" * 10_240, "Bearer lxw_\x00_x"],
    ids=["bearer-alone", "bearer-blank", "basic", "10-kb-token", "nul"],
)
def test_api_status_refuses_malformed_authorization_with_401(
    seeded: dict[str, Any], authorization: str
) -> None:
    response = Client(headers={"authorization": authorization}).get(API_URL)

    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    assert response["WWW-Authenticate"] == "Bearer"
    assert "tr-pro" not in response.content.decode()


@pytest.mark.django_db
def test_api_status_refuses_an_inactive_users_token_with_401(
    lawyer: User, seeded: dict[str, Any]
) -> None:
    client = token_client(lawyer)
    assert client.get(API_URL).status_code == 200
    User.objects.filter(pk=lawyer.pk).update(is_active=False)

    response = client.get(API_URL)

    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"
    assert "tr-pro" not in response.content.decode()


# --- The live stream ----------------------------------------------------------------------

ws_db = pytest.mark.django_db(transaction=True, databases="__all__")


async def _stream_ready() -> None:
    """Wait until the channel layer listens for this process's consumers.

    Its `listener_task_is_running` event is set once the listener has caught up; the
    consumer's read loop starts it just after connecting. (The layer no longer loses a message
    sent before that, tests/lexweb/test_channel_layer.py; waiting keeps this test about the
    dashboard.)
    """
    layer = get_channel_layer()
    deadline = asyncio.get_running_loop().time() + 10
    while getattr(layer, "listener_task_is_running", None) is None:
        assert asyncio.get_running_loop().time() < deadline, "the layer never started listening"
        await asyncio.sleep(0.02)
    await asyncio.wait_for(layer.listener_task_is_running.wait(), timeout=10)  # type: ignore[union-attr]


def _events(ids: dict[str, int]) -> list[dict[str, object]]:
    now = timezone.now().isoformat()
    gpu: GpuSampleEvent = {
        "type": "cluster.gpu_sample", "gpu_id": ids["gpu"], "host": "tr-pro", "index": 4,
        "sampled_at": now, "utilisation_pct": 88, "memory_used_bytes": 20 * GIB,
        "memory_total_bytes": 32 * GIB, "temperature_c": 70, "power_w": 250.5,
    }  # fmt: skip
    agent: AgentStatusEvent = {
        "type": "cluster.agent_status", "host_id": ids["host"], "host": "gpu-host-1",
        "status": "no_nvml", "message": "driver missing", "at": now,
    }  # fmt: skip
    health: BackendHealthEvent = {
        "type": "cluster.backend_health", "backend_id": ids["backend"], "state": "down",
        "message": "connection refused", "slots_total": 4, "slots_busy": 0, "checked_at": now,
    }  # fmt: skip
    speed: DeploymentSpeedEvent = {
        "type": "cluster.deployment_speed", "deployment_id": ids["deployment"],
        "decode_tokens_per_second": 38.5, "calls": 3, "usable": False,
    }  # fmt: skip
    return [dict(gpu), dict(agent), dict(health), dict(speed)]


@pytest.mark.asyncio
@ws_db
@pytest.mark.slow
async def test_signed_in_users_receive_every_kind_of_cluster_event(
    lawyer: User, staff: User
) -> None:
    seeded = await sync_to_async(_seed)()
    ids = {
        "gpu": seeded["gpus"][0].pk, "host": seeded["dark"].pk,
        "backend": seeded["backend"].pk, "deployment": seeded["fast"].pk,
    }  # fmt: skip
    issued = await sync_to_async(account_services.token_create)(user=staff, name="agent")
    first, first_state = await ws_connect(WS, cookie_user=lawyer)
    # One at a time, as browsers usually connect (sockets that start together are covered in
    # tests/lexweb/test_channel_layer.py).
    await _stream_ready()
    second, second_state = await ws_connect(WS, bearer=issued.secret, origin=None)
    assert first_state == second_state == (True, None)

    events = _events(ids)
    for event in events:
        # Outside any transaction publish_cluster sends at once, as the GPU agent's loop does.
        await sync_to_async(publish_cluster)(event)

    for socket in (first, second):
        received = [await socket.receive_json_from(timeout=10) for _ in events]
        # Relayed exactly: nothing added (no API key, no URL), nothing dropped.
        assert sorted(received, key=str) == sorted(events, key=str)
        assert API_KEY not in repr(received)
    # Nothing came twice: a copy of an event would reach a socket before this sentinel does.
    sentinel = dict(events[1], host_id=-1, message="sentinel")
    await sync_to_async(publish_cluster)(sentinel)  # type: ignore[arg-type]
    for socket in (first, second):
        assert await socket.receive_json_from(timeout=10) == sentinel
        assert await socket.receive_nothing(timeout=0.5)
        await socket.disconnect()


@pytest.mark.asyncio
@ws_db
async def test_group_messages_are_relayed_unchanged() -> None:
    user = await sync_to_async(_user)()
    socket, _ = await ws_connect(WS, cookie_user=user)
    await _stream_ready()
    event = _events({"gpu": 1, "host": 2, "backend": 3, "deployment": 4})[2]

    await get_channel_layer().group_send(CLUSTER_GROUP, event)

    assert await socket.receive_json_from(timeout=10) == event
    await socket.disconnect()


def _user() -> User:
    return User.objects.create_user(email="watcher@firm.test", full_name="W", password="x" * 12)


@pytest.mark.asyncio
@ws_db
async def test_anonymous_bad_token_and_foreign_origin_are_refused() -> None:
    user = await sync_to_async(_user)()

    _, anonymous = await ws_connect(WS)
    _, bad_token = await ws_connect(WS, bearer="lxw_not_a_token", origin=None)
    _, foreign = await ws_connect(WS, cookie_user=user, origin="https://evil.test")

    assert anonymous == bad_token == (False, 4401)
    # Refused by the origin check before the consumer is reached: a plain close, not 4401.
    assert foreign == (False, 1000)


@pytest.mark.asyncio
@ws_db
@pytest.mark.slow
async def test_a_session_cookie_without_an_origin_header_is_refused() -> None:
    # The cookie alone could be ridden by any page that can open a socket without saying where
    # it comes from; only a bearer token is accepted without an Origin.
    user = await sync_to_async(_user)()

    socket, state = await ws_connect(WS, cookie_user=user, origin=None)

    assert state == (False, 1000)
    await get_channel_layer().group_send(
        CLUSTER_GROUP, _events({"gpu": 1, "host": 2, "backend": 3, "deployment": 4})[0]
    )
    assert await socket.receive_nothing(timeout=1)


@pytest.mark.asyncio
@ws_db
async def test_an_inactive_user_is_refused_by_session_or_token() -> None:
    user = await sync_to_async(_user)()
    issued = await sync_to_async(account_services.token_create)(user=user, name="agent")
    await User.objects.filter(pk=user.pk).aupdate(is_active=False)

    _, by_session = await ws_connect(WS, cookie_user=user)
    _, by_token = await ws_connect(WS, bearer=issued.secret, origin=None)

    assert by_session == by_token == (False, 4401)


@pytest.mark.asyncio
@ws_db
@pytest.mark.slow
async def test_a_refused_socket_hears_nothing_later() -> None:
    socket, state = await ws_connect(WS)
    assert state == (False, 4401)

    await get_channel_layer().group_send(
        CLUSTER_GROUP, _events({"gpu": 1, "host": 2, "backend": 3, "deployment": 4})[0]
    )

    assert await socket.receive_nothing(timeout=1)


@pytest.mark.asyncio
@ws_db
@pytest.mark.parametrize(
    "frame",
    [
        {"text_data": '{"type": "cluster.gpu_sample", "gpu_id": 1}'},
        {"text_data": "not json"},
        {"text_data": "x" * 1_000_000},
        {"bytes_data": b"\x00\xff" * 10},
    ],
)
async def test_anything_sent_by_the_client_closes_the_socket(
    frame: dict[str, str | bytes],
) -> None:
    user = await sync_to_async(_user)()
    socket, _ = await ws_connect(WS, cookie_user=user)

    await socket.send_to(**frame)  # type: ignore[arg-type]

    assert await socket.receive_output(timeout=5) == {"type": "websocket.close", "code": 4400}
