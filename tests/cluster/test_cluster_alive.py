"""The cluster page that is alive (issue 13, requirement 8): stale agent reports with their age,
health "checked" times published on every check, the last hour's sparklines per GPU and per
deployment, and the admins' page of job queues and workers. Real PostgreSQL throughout; the
health check runs against a real fake backend over HTTP."""

import html
import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.views import redirect_to_login
from django.db import connection
from django.test import Client
from django.utils import timezone
from procrastinate.contrib.django import app as procrastinate_app
from pytest_django.fixtures import Settings

from apps.accounts.models import AuditEvent, User
from apps.cluster import selectors
from apps.cluster.models import (
    Backend,
    Board,
    CallRecord,
    Deployment,
    Gpu,
    GpuSample,
    GpuStatus,
    Host,
)
from apps.cluster.services import gpu as gpu_services
from apps.cluster.services import health
from apps.cluster.services.gpu import bucket_start
from lexweb_dev.fakebackend import FakeBackend
from tests.cluster.dispatch_fixtures import backend_make, cluster_events, deployment_make
from tests.conftest import session_client, token_client

GIB = 1024**3
URL = "/cluster/"
JOBS_URL = "/cluster/jobs/"
_SVG = re.compile(r"<svg\b[^>]*>.*?</svg>", re.DOTALL)


def _page(client: Client, url: str = URL, **query: str) -> str:
    response = client.get(url, query)
    assert response.status_code == 200, response.status_code
    return response.content.decode()


def _host_article(page: str, host: Host) -> str:
    found = re.search(rf'<article[^>]*data-host-id="{host.pk}"[^>]*>(.*?)</article>', page, re.S)
    assert found, f"no article for {host.name}"
    return found.group(0)


def _text(fragment: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", fragment)).split())


def _board_with_gpus(host: Host, count: int = 2) -> tuple[Board, list[Gpu]]:
    board = Board.objects.create(host=host, name="board-a")
    gpus = [
        Gpu.objects.create(
            host=host, index=n, name="Tesla V100-SXM2-32GB", memory_bytes=32 * GIB, board=board
        )
        for n in range(count)
    ]
    return board, gpus


def _sample(
    gpu: Gpu, *, ago: timedelta, utilisation: float, used_gib: float, seconds: int = 60
) -> GpuSample:
    return GpuSample.objects.create(
        gpu=gpu,
        bucket_start=bucket_start(timezone.now() - ago, seconds),
        bucket_seconds=seconds,
        utilisation_avg=utilisation,
        utilisation_max=int(utilisation),
        memory_used_max_bytes=int(used_gib * GIB),
    )


# --- Stale reports --------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_report_older_than_the_stale_intervals_is_stale_with_its_age(
    lawyer: User, settings: Settings
) -> None:
    settings.LEXWEB_GPU_AGENT_INTERVAL_SECONDS = 5
    settings.LEXWEB_GPU_AGENT_STALE_INTERVALS = 3
    now = timezone.now()
    gone = Host.objects.create(
        name="agent-exited",
        agent_status=Host.AgentStatus.NO_NVML,
        agent_message="libnvidia-ml.so.1 not found",
        agent_seen_at=now - timedelta(minutes=3, seconds=20),
    )
    fresh = Host.objects.create(
        name="agent-alive",
        agent_status=Host.AgentStatus.OK,
        agent_seen_at=now - timedelta(seconds=4),
    )
    never = Host.objects.create(name="agent-never")

    dashboard = selectors.dashboard_get()
    page = _page(session_client(lawyer))

    hosts = {host.name: host for host in dashboard.hosts}
    assert dashboard.stale_after_seconds == 15
    assert hosts["agent-exited"].stale and hosts["agent-exited"].report_age_text.startswith("3 min")
    assert not hosts["agent-alive"].stale and not hosts["agent-never"].stale
    assert hosts["agent-never"].report_age_seconds is None
    stale = _text(_host_article(page, gone))
    # Not "retrying" for minutes after the agent exited: stale, with the age and what it said.
    assert "Stale Stale, last report 3 min 2" in stale
    assert "(was: No NVML: libnvidia-ml.so.1 not found)" in stale
    assert "retrying" not in stale
    assert 'data-stale="true"' in _host_article(page, gone)
    alive = _host_article(page, fresh)
    assert 'data-stale="false"' in alive and "The GPU agent on agent-alive reads NVML" in alive
    assert 'data-stale="false"' in _host_article(page, never)
    assert "has not reported yet" in _host_article(page, never)
    assert 'data-stale-after="15"' in page


@pytest.mark.django_db
def test_the_api_says_which_reports_are_stale_and_how_old(lawyer: User, settings: Settings) -> None:
    settings.LEXWEB_GPU_AGENT_INTERVAL_SECONDS = 5
    settings.LEXWEB_GPU_AGENT_STALE_INTERVALS = 3
    now = timezone.now()
    Host.objects.create(
        name="agent-exited", agent_status="ok", agent_seen_at=now - timedelta(minutes=3)
    )
    Host.objects.create(name="agent-alive", agent_status="ok", agent_seen_at=now)
    Host.objects.create(name="agent-never")

    body = session_client(lawyer).get("/api/v1/cluster/status").json()

    hosts = {host["name"]: host for host in body["hosts"]}
    assert body["stale_after_seconds"] == 15
    assert hosts["agent-exited"]["stale"] is True
    assert 175 <= hosts["agent-exited"]["report_age_seconds"] < 240
    assert hosts["agent-alive"]["stale"] is False
    assert hosts["agent-alive"]["report_age_seconds"] < 60
    assert hosts["agent-never"]["stale"] is False
    assert hosts["agent-never"]["report_age_seconds"] is None


@pytest.mark.django_db
def test_stale_follows_the_settings(lawyer: User, settings: Settings) -> None:
    host = Host.objects.create(
        name="h", agent_status="ok", agent_seen_at=timezone.now() - timedelta(seconds=40)
    )
    settings.LEXWEB_GPU_AGENT_INTERVAL_SECONDS = 10
    settings.LEXWEB_GPU_AGENT_STALE_INTERVALS = 5
    assert not selectors.dashboard_get().hosts[0].stale
    settings.LEXWEB_GPU_AGENT_STALE_INTERVALS = 3
    assert selectors.dashboard_get().hosts[0].stale
    # The agent reports again: no longer stale.
    gpu_services.host_agent_status_set(host=host, status=Host.AgentStatus.OK, message="")
    assert not selectors.dashboard_get().hosts[0].stale


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (59.9, "59 s"),
        (60, "1 min"),
        (200, "3 min 20 s"),
        (3600, "1 h"),
        (7500, "2 h 5 min"),
        (3 * 86400, "3 days"),
        (-5, "0 s"),
    ],
)
def test_age_text(seconds: float, text: str) -> None:
    assert selectors.age_text(max(0.0, seconds)) == text


# --- Health "checked" times ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True, databases="__all__")
@pytest.mark.asyncio
async def test_every_health_check_is_published_with_its_checked_time(
    fake_llama: FakeBackend,
) -> None:
    from asgiref.sync import sync_to_async

    backend = await sync_to_async(backend_make)(base_url=fake_llama.base_url, kind="llama_cpp")
    await sync_to_async(deployment_make)(backend)
    first = await health.backend_health_check(backend_id=backend.pk)
    async with cluster_events() as receive:
        # Nothing changed but the time of the check: the dashboard still hears of it.
        later = timezone.now() + timedelta(seconds=30)
        second = await health.backend_health_check(backend_id=backend.pk, now=later)
        event = await receive()

    assert second.state == first.state and second.message == first.message
    assert event["type"] == "cluster.backend_health"
    assert first.checked_at is not None
    assert event["checked_at"] == later.isoformat() != first.checked_at.isoformat()


# --- Sparklines -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_gpu_sparklines_are_the_last_hour_of_minute_buckets_bounded(lawyer: User) -> None:
    host = Host.objects.create(name="tr", agent_status="ok", agent_seen_at=timezone.now())
    _, (busy, idle) = _board_with_gpus(host)
    for minute in range(90):
        _sample(busy, ago=timedelta(minutes=minute), utilisation=minute % 100, used_gib=16)
    # Hour buckets and samples older than the hour are not drawn.
    _sample(busy, ago=timedelta(minutes=5), utilisation=99, used_gib=30, seconds=3600)

    history = selectors.dashboard_history_get(gpu_ids=[busy.pk, idle.pk], deployment_ids=[])

    line = history.gpus[busy.pk].utilisation
    assert 59 <= len(line.points) <= selectors.SPARK_GPU_POINTS
    assert all(line.end - 3600 <= at <= line.end + 60 for at, _ in line.points)
    assert [at for at, _ in line.points] == sorted(at for at, _ in line.points)
    assert line.last == 0.0  # the current minute's bucket
    assert {value for _, value in history.gpus[busy.pk].memory.points} == {50.0}
    assert history.gpus[idle.pk].utilisation.points == ()
    # On the 120 x 28 box: x within it, 100 % at the top, 0 % at the bottom.
    coords = [tuple(map(float, p.split(","))) for p in line.svg_points.split()]
    assert all(0 <= x <= 120 and 0 <= y <= 28 for x, y in coords)
    assert coords[-1][1] == 28.0
    assert line.last_xy == coords[-1]

    page = _page(session_client(lawyer))
    row = re.search(rf'<tr data-gpu-id="{busy.pk}".*?</tr>', page, re.S)
    assert row
    svgs = _SVG.findall(row.group(0))
    assert [re.search(r'data-spark="(\w+)"', svg).group(1) for svg in svgs] == [  # type: ignore[union-attr]
        "utilisation",
        "memory",
    ]
    assert all("<polyline" in svg and "style=" not in svg for svg in svgs)
    assert 'aria-label="Utilisation of GPU 0, last hour"' in svgs[0]


@pytest.mark.django_db
def test_decode_speed_sparkline_is_per_call_against_the_usable_line(lawyer: User) -> None:
    host = Host.objects.create(name="tr")
    board, _ = _board_with_gpus(host, 1)
    backend = Backend.objects.create(
        name="b", kind="llama_cpp", base_url="http://127.0.0.1:9", board=board
    )
    fast = Deployment.objects.create(backend=backend, model_name="fast")
    quiet = Deployment.objects.create(backend=backend, model_name="quiet")
    now = timezone.now()
    records = [
        CallRecord(
            deployment=fast,
            deployment_label="fast",
            started_at=now - timedelta(seconds=30 * n),
            outcome=CallRecord.Outcome.OK,
            decode_tokens_per_second=30.0 + n,
        )
        for n in range(100)  # 50 minutes of calls, more than the line keeps
    ]
    records += [
        CallRecord(deployment=fast, deployment_label="fast", started_at=now - timedelta(hours=2),
                   outcome=CallRecord.Outcome.OK, decode_tokens_per_second=500.0),
        CallRecord(deployment=fast, deployment_label="fast", started_at=now,
                   outcome=CallRecord.Outcome.ERROR, decode_tokens_per_second=500.0),
    ]  # fmt: skip
    CallRecord.objects.bulk_create(records)

    history = selectors.dashboard_history_get(gpu_ids=[], deployment_ids=[fast.pk, quiet.pk])

    line = history.speeds[fast.pk]
    assert len(line.points) == selectors.SPARK_SPEED_POINTS
    # The latest calls, oldest first; the old one and the failed one are left out.
    assert [value for _, value in line.points] == [30.0 + n for n in range(59, -1, -1)]
    assert line.reference == selectors.USABLE_DECODE_TOKENS_PER_SECOND == 40.0
    assert line.top == pytest.approx(89.0 * 1.25)
    assert line.reference_y is not None and 0 < line.reference_y < 28
    assert history.speeds[quiet.pk].points == ()
    assert history.speeds[quiet.pk].top == 40.0 * 1.25

    page = _page(session_client(lawyer))
    row = re.search(rf'<tr data-deployment-id="{fast.pk}".*?</tr>', page, re.S)
    assert row and 'data-spark="speed"' in row.group(0)
    assert 'class="spark__ref"' in row.group(0) and 'data-reference="40.0"' in row.group(0)
    quiet_row = re.search(rf'<tr data-deployment-id="{quiet.pk}".*?</tr>', page, re.S)
    assert quiet_row and 'aria-label="No calls to quiet in the last hour"' in quiet_row.group(0)


@pytest.mark.django_db
def test_history_queries_do_not_grow_with_the_cluster(
    django_assert_max_num_queries: Any,
) -> None:
    host = Host.objects.create(name="tr")
    _, gpus = _board_with_gpus(host, 12)
    for gpu in gpus:
        for minute in range(10):
            _sample(gpu, ago=timedelta(minutes=minute), utilisation=10, used_gib=1)
    with django_assert_max_num_queries(2):
        history = selectors.dashboard_history_get(
            gpu_ids=[g.pk for g in gpus], deployment_ids=[1, 2, 3]
        )
    assert all(len(h.utilisation.points) == 10 for h in history.gpus.values())


@pytest.mark.django_db
def test_dashboard_ignores_hostile_query_parameters(lawyer: User) -> None:
    host = Host.objects.create(name="tr", agent_status="ok", agent_seen_at=timezone.now())
    _board_with_gpus(host, 1)
    client = session_client(lawyer)
    plain = _page(client)
    hostile = {
        "points": "99999999",
        "window": "-1",
        "gpu": "<script>alert(1)</script>",
        "host": "' OR 1=1 --",
        "x" * 200: "y" * 5000,
    }

    page = _page(client, **hostile)

    assert "<script>alert(1)</script>" not in page and "OR 1=1" not in page
    # The same page (apart from the per-request CSRF token, and the agent's report age in
    # whole seconds, which moves on when the two requests straddle a second).
    strip = re.compile(r'(csrfmiddlewaretoken" value="|data-end="|data-report-age=")[^"]*"')
    assert strip.sub("", page) == strip.sub("", plain)


@pytest.mark.django_db
def test_stale_and_sparklines_survive_odd_rows(lawyer: User) -> None:
    """A GPU whose card reports no memory total, a sample in the future, a host seen in the
    future (clock skew): the page still renders, nothing divides by zero."""
    host = Host.objects.create(
        name="skewed", agent_status="ok", agent_seen_at=timezone.now() + timedelta(minutes=5)
    )
    board = Board.objects.create(host=host, name="b")
    gpu = Gpu.objects.create(host=host, index=0, name="odd", memory_bytes=1, board=board)
    GpuStatus.objects.create(gpu=gpu, sampled_at=timezone.now(), memory_total_bytes=0)
    _sample(gpu, ago=timedelta(minutes=-3), utilisation=250, used_gib=5)

    page = _page(session_client(lawyer))
    dashboard = selectors.dashboard_get()

    assert not dashboard.hosts[0].stale and dashboard.hosts[0].report_age_seconds == 0.0
    assert 'data-gpu-id="' in page
    line = selectors.dashboard_history_get(gpu_ids=[gpu.pk], deployment_ids=[]).gpus[gpu.pk]
    coords = [tuple(map(float, p.split(","))) for p in line.utilisation.svg_points.split()]
    assert all(0 <= x <= 120 and 0 <= y <= 28 for x, y in coords)


# --- Job queues and workers -----------------------------------------------------------------


def _worker(heartbeat_ago: timedelta) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO procrastinate_workers (last_heartbeat) "
            "VALUES (NOW() - make_interval(secs => %s)) RETURNING id",
            [heartbeat_ago.total_seconds()],
        )
        return int(cursor.fetchone()[0])


def _jobs(queue: str, count: int, *, status: str = "todo", worker: int | None = None) -> None:
    task = procrastinate_app.configure_task("tests.cluster.jobs_page", queue=queue)
    ids = [task.defer() for _ in range(count)]
    if status != "todo":
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE procrastinate_jobs SET status = %s, worker_id = %s WHERE id = ANY(%s)",
                [status, worker, ids],
            )


@pytest.fixture
def job_rows(db: None) -> dict[str, int]:
    alive = _worker(timedelta(seconds=3))
    silent = _worker(timedelta(minutes=10))
    _jobs("cpu", 3)
    _jobs("cpu", 2, status="doing", worker=alive)
    _jobs("cluster", 1, status="doing", worker=alive)
    _jobs("cluster", 4, status="failed")
    _jobs("board.7", 1, status="doing", worker=silent)
    _jobs("cpu", 5, status="succeeded")
    return {"alive": alive, "silent": silent}


@pytest.mark.django_db
def test_admin_sees_queues_and_workers_with_their_heartbeat(
    admin_user: User, job_rows: dict[str, int]
) -> None:
    page = _page(session_client(admin_user), JOBS_URL)

    def row(attribute: str, value: object) -> str:
        found = re.search(rf'<tr {attribute}="{value}">.*?</tr>', page, re.S)
        assert found, (attribute, value)
        return _text(found.group(0))

    assert row("data-queue", "cpu") == "cpu 3 2 0"
    assert row("data-queue", "cluster") == "cluster 0 1 4"
    assert row("data-queue", "board.7") == "board.7 0 1 0"
    alive = row("data-worker-id", job_rows["alive"])
    assert "(3 s ago)" in alive or "(4 s ago)" in alive
    assert alive.endswith("alive 3 cluster, cpu")
    silent = row("data-worker-id", job_rows["silent"])
    assert "(10 min ago)" in silent and silent.endswith("silent 1 board.7")
    # Counts and ids only: no job's arguments.
    assert "tests.cluster.jobs_page" not in page
    [event] = AuditEvent.objects.filter(action="cluster.jobs_view")
    assert (event.action, event.actor_id, event.case_id) == (
        "cluster.jobs_view",
        admin_user.pk,
        None,
    )
    assert event.detail == {"queues": 3, "workers": 2}
    # The dashboard links to it for admins.
    assert f'href="{JOBS_URL}"' in _page(session_client(admin_user))


@pytest.mark.django_db
def test_workers_listed_are_bounded(admin_user: User, settings: Settings) -> None:
    for n in range(selectors.WORKERS_LISTED + 5):
        _worker(timedelta(seconds=n))

    overview = selectors.jobs_overview_get(actor=admin_user)

    assert len(overview.workers) == selectors.WORKERS_LISTED
    assert overview.workers_total == selectors.WORKERS_LISTED + 5
    ages = [w.heartbeat_age_seconds for w in overview.workers]
    assert ages == sorted(ages)


@pytest.mark.django_db
@pytest.mark.parametrize("persona", ["lawyer", "staff"])
def test_jobs_page_is_404_for_anyone_but_an_admin_and_not_audited(
    persona: str, request: pytest.FixtureRequest, job_rows: dict[str, int]
) -> None:
    user = request.getfixturevalue(persona)
    client = session_client(user)

    response = client.get(JOBS_URL)
    dashboard = _page(client)

    assert response.status_code == 404
    assert b"board.7" not in response.content
    # A bearer token opens no page at all (pages are for signed-in browsers).
    assert token_client(user).get(JOBS_URL).status_code == 302
    assert not AuditEvent.objects.filter(action="cluster.jobs_view").exists()
    assert f'href="{JOBS_URL}"' not in dashboard


@pytest.mark.django_db
def test_jobs_page_sends_anonymous_to_sign_in_and_refuses_writes(
    admin_user: User, job_rows: dict[str, int]
) -> None:
    anonymous = Client().get(JOBS_URL)
    assert anonymous.status_code == 302
    assert anonymous["Location"] == redirect_to_login(JOBS_URL).url

    client = session_client(admin_user)
    for method in ("post", "put", "delete"):
        response = getattr(client, method)(JOBS_URL, {"queue": "cpu"})
        assert response.status_code == 405, method
    assert not AuditEvent.objects.filter(action="cluster.jobs_view").exists()


@pytest.mark.django_db
def test_jobs_page_ignores_hostile_query_parameters(
    admin_user: User, job_rows: dict[str, int]
) -> None:
    client = session_client(admin_user)
    page = _page(
        client,
        JOBS_URL,
        queue="<img src=x onerror=alert(1)>",
        limit="-1",
        worker="1; DROP TABLE procrastinate_jobs",
    )
    assert "<img src=x" not in page and "DROP TABLE" not in page
    assert 'data-queue="cpu"' in page


@pytest.mark.django_db
def test_an_inactive_admin_gets_nothing(admin_user: User, job_rows: dict[str, int]) -> None:
    admin_user.is_active = False
    admin_user.save(update_fields=["is_active"])
    from lexweb.errors import NotFound

    with pytest.raises(NotFound):
        selectors.jobs_overview_get(actor=admin_user)
    assert not AuditEvent.objects.filter(action="cluster.jobs_view").exists()
