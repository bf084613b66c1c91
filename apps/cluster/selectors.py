"""Reads for the cluster app. Cluster state is not client material: any signed-in user may read
it, but never a backend's API key."""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection
from django.db.models import Avg, Count, F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

from apps.accounts.models import User
from apps.accounts.services import audit_record
from apps.cluster import tokens
from apps.cluster.models import (
    Backend,
    BackendHealth,
    Board,
    CallRecord,
    Deployment,
    DeploymentHealth,
    Gpu,
    GpuSample,
    GpuStatus,
    Host,
)
from apps.operations import selectors as job_selectors
from lexweb.errors import NotFound

# DESIGN.md: on this hardware >= 40 tokens/s decoding is "usable".
USABLE_DECODE_TOKENS_PER_SECOND = 40.0
# The rolling speed is the mean over a deployment's latest successful calls in this window.
SPEED_WINDOW_CALLS = 20
SPEED_WINDOW = timedelta(hours=24)


@dataclass(frozen=True)
class DeploymentSpeed:
    deployment_id: int
    decode_tokens_per_second: float | None
    calls: int

    @property
    def usable(self) -> bool:
        speed = self.decode_tokens_per_second
        return speed is not None and speed >= USABLE_DECODE_TOKENS_PER_SECOND


def deployment_speed_get(*, deployment_id: int) -> DeploymentSpeed:
    """Rolling decode speed: mean tokens/s of the latest SPEED_WINDOW_CALLS successful calls
    of the last SPEED_WINDOW that reported a decode speed (one rule: deployment_speeds_get)."""
    return deployment_speeds_get(deployment_ids=[deployment_id])[deployment_id]


def deployment_served(deployment: Deployment) -> DeploymentHealth | None:
    """The health check's row for the deployment (loaded with `select_related("health")` where
    the caller cares about queries), or None before its first check."""
    try:
        return deployment.health
    except DeploymentHealth.DoesNotExist:
        return None


def deployment_context_tokens(deployment: Deployment) -> int:
    """Tokens one request to `deployment` may hold: the smaller of the configured context of a
    slot and what the server reported at its last health check (llama-server n_ctx of a slot;
    Ollama the num_ctx sent within the model's own context length). The context guard, the
    evidence budget and routing read the context here and nowhere else."""
    configured = deployment.context_per_slot
    served = deployment_served(deployment)
    if served is None or not served.served_context:
        return configured
    return min(configured, served.served_context)


def deployment_token_calibration(*, deployment_id: int) -> tokens.Calibration:
    """How much to scale local token estimates for the deployment (Ollama, which cannot count
    before a call): learnt from its latest completed calls that recorded an estimate beside the
    prompt tokens the backend reported (cluster.tokens, 2). One indexed query."""
    reports = (
        CallRecord.objects.filter(
            deployment_id=deployment_id,
            outcome=CallRecord.Outcome.OK,
            prompt_tokens__gt=0,
            prompt_estimate_tokens__gt=0,
        )
        .order_by("-started_at")
        .values_list("prompt_tokens", "prompt_estimate_tokens")[: tokens.CALIBRATION_CALLS]
    )
    return tokens.calibration_from((reported, estimate or 0) for reported, estimate in reports)


# --- Dashboard ----------------------------------------------------------------------------

GIB = 1024**3


def _gib(value: int) -> float:
    return value / GIB


@dataclass(frozen=True)
class GpuReading:
    """The latest NVML sample of one GPU."""

    sampled_at: datetime
    # None: the card has no such sensor.
    utilisation_pct: int | None
    memory_used_bytes: int
    memory_total_bytes: int
    temperature_c: int | None
    power_w: float | None
    power_limit_w: float | None

    @property
    def memory_used_gib(self) -> float:
        return _gib(self.memory_used_bytes)

    @property
    def memory_total_gib(self) -> float:
        return _gib(self.memory_total_bytes)


@dataclass(frozen=True)
class GpuView:
    id: int
    index: int
    name: str
    memory_bytes: int
    board_id: int | None
    reading: GpuReading | None

    @property
    def memory_gib(self) -> float:
        return _gib(self.memory_bytes)

    @property
    def index_label(self) -> str:
        return str(self.index)


@dataclass(frozen=True)
class BoardView:
    id: int
    name: str
    host_name: str
    gpus: tuple[GpuView, ...]

    @property
    def label(self) -> str:
        return f"{self.host_name} / {self.name}"

    @property
    def measured(self) -> bool:
        return any(gpu.reading is not None for gpu in self.gpus)

    @property
    def memory_used_bytes(self) -> int:
        """What NVML measures in use on the board's GPUs that have reported."""
        return sum(gpu.reading.memory_used_bytes for gpu in self.gpus if gpu.reading)

    @property
    def memory_total_bytes(self) -> int:
        return sum(gpu.reading.memory_total_bytes for gpu in self.gpus if gpu.reading)

    @property
    def memory_used_gib(self) -> float:
        return _gib(self.memory_used_bytes)

    @property
    def memory_total_gib(self) -> float:
        return _gib(self.memory_total_bytes)


@dataclass(frozen=True)
class HostView:
    id: int
    name: str
    description: str
    agent_status: str
    agent_status_label: str
    agent_message: str
    agent_seen_at: datetime | None
    boards: tuple[BoardView, ...]
    # GPUs an admin has not put on a board yet: shown, but no model can be placed on them.
    loose_gpus: tuple[GpuView, ...]
    # Seconds since the agent last reported (None: never), and whether that is longer than
    # LEXWEB_GPU_AGENT_STALE_INTERVALS agent intervals: its last state is then not believed.
    report_age_seconds: float | None = None
    stale: bool = False

    @property
    def report_age_text(self) -> str:
        return age_text(self.report_age_seconds or 0.0)


@dataclass(frozen=True)
class BackendView:
    """A backend as the dashboard shows it. Deliberately without `api_key` and `base_url` (a
    URL may carry credentials in its user-info part)."""

    id: int
    name: str
    kind: str
    kind_label: str
    board_id: int
    board_label: str
    slots: int
    enabled: bool
    state: str
    state_label: str
    message: str
    checked_at: datetime | None
    slots_total: int
    slots_busy: int
    # Failed calls or checks in a row (LEXWEB_BACKEND_FAILURES_TO_LEAVE take it out).
    consecutive_failures: int = 0


@dataclass(frozen=True)
class DeploymentView:
    id: int
    model_name: str
    enabled: bool
    backend_id: int
    backend_name: str
    board_id: int
    board_label: str
    memory_estimate_bytes: int
    board: BoardView | None
    speed: DeploymentSpeed
    # What the health check saw (DeploymentHealth): whether the server serves this model, the
    # names it gave, the context it reports beside the configured one, and the one used.
    served_state: str
    served_state_label: str
    served_model: str
    served_message: str
    configured_context: int
    served_context: int | None
    context_tokens: int

    @property
    def context_differs(self) -> bool:
        return self.served_context is not None and self.served_context != self.configured_context

    @property
    def memory_estimate_gib(self) -> float:
        return _gib(self.memory_estimate_bytes)


@dataclass(frozen=True)
class Dashboard:
    hosts: tuple[HostView, ...]
    backends: tuple[BackendView, ...]
    deployments: tuple[DeploymentView, ...]
    usable_decode_tokens_per_second: float = USABLE_DECODE_TOKENS_PER_SECOND
    speed_window_calls: int = SPEED_WINDOW_CALLS
    stale_after_seconds: float = 0.0


def deployment_speeds_get(*, deployment_ids: Iterable[int]) -> dict[int, DeploymentSpeed]:
    """`deployment_speed_get` for many deployments in one query (same window, same mean).

    Every id asked for is in the answer; one without calls has speed None and 0 calls.
    """
    ids = list(deployment_ids)
    speeds = {
        pk: DeploymentSpeed(deployment_id=pk, decode_tokens_per_second=None, calls=0) for pk in ids
    }
    if not ids:
        return speeds
    ranked = (
        CallRecord.objects.filter(
            deployment_id__in=ids,
            outcome=CallRecord.Outcome.OK,
            decode_tokens_per_second__isnull=False,
            started_at__gte=timezone.now() - SPEED_WINDOW,
        )
        .annotate(
            rank=Window(
                RowNumber(),
                partition_by=F("deployment_id"),
                order_by=[F("started_at").desc(), F("pk").desc()],
            )
        )
        .filter(rank__lte=SPEED_WINDOW_CALLS)
        .values("pk")
    )
    figures = (
        CallRecord.objects.filter(pk__in=ranked)
        .values("deployment_id")
        .annotate(speed=Avg("decode_tokens_per_second"), calls=Count("pk"))
        .order_by()
    )
    for row in figures:
        speeds[row["deployment_id"]] = DeploymentSpeed(
            deployment_id=row["deployment_id"],
            decode_tokens_per_second=row["speed"],
            calls=row["calls"],
        )
    return speeds


def dashboard_get() -> Dashboard:
    """Everything the cluster dashboard shows, read from the registry rows only (no backend is
    called). Six queries, whatever the number of hosts, GPUs, backends or deployments.

    Any signed-in user may see it: cluster state is not client material. No API key is read.
    """
    hosts, boards = _hosts_and_boards()
    backend_rows = (
        Backend.objects.select_related("health", "board__host").defer("api_key").order_by("name")
    )
    backends = tuple(_backend_view(backend) for backend in backend_rows)
    deployment_rows = list(
        Deployment.objects.select_related("backend__board__host", "health")
        .defer("backend__api_key")
        .order_by("backend__name", "model_name")
    )
    speeds = deployment_speeds_get(deployment_ids=[d.pk for d in deployment_rows])
    deployments = tuple(
        _deployment_view(d, boards.get(d.backend.board_id), speeds[d.pk]) for d in deployment_rows
    )
    return Dashboard(
        hosts=hosts,
        backends=backends,
        deployments=deployments,
        stale_after_seconds=stale_after_seconds(),
    )


def _hosts_and_boards() -> tuple[tuple[HostView, ...], dict[int, BoardView]]:
    """Hosts with their boards and GPUs (three queries), and the boards by id."""
    board_gpus: dict[int, list[GpuView]] = defaultdict(list)
    loose_gpus: dict[int, list[GpuView]] = defaultdict(list)
    for gpu in Gpu.objects.select_related("status").order_by("host_id", "index"):
        view = _gpu_view(gpu)
        if gpu.board_id is None:
            loose_gpus[gpu.host_id].append(view)
        else:
            board_gpus[gpu.board_id].append(view)
    host_boards: dict[int, list[BoardView]] = defaultdict(list)
    boards: dict[int, BoardView] = {}
    for board in Board.objects.select_related("host").order_by("host__name", "name"):
        board_view = BoardView(
            id=board.pk,
            name=board.name,
            host_name=board.host.name,
            gpus=tuple(board_gpus[board.pk]),
        )
        boards[board.pk] = board_view
        host_boards[board.host_id].append(board_view)
    now = timezone.now()
    stale_after = stale_after_seconds()
    hosts = tuple(
        HostView(
            id=host.pk,
            name=host.name,
            description=host.description,
            agent_status=host.agent_status,
            agent_status_label=host.get_agent_status_display(),
            agent_message=host.agent_message,
            agent_seen_at=host.agent_seen_at,
            boards=tuple(host_boards[host.pk]),
            loose_gpus=tuple(loose_gpus[host.pk]),
            report_age_seconds=_age(host.agent_seen_at, now),
            stale=host_is_stale(host.agent_seen_at, now=now, after=stale_after),
        )
        for host in Host.objects.order_by("name")
    )
    return hosts, boards


def _gpu_view(gpu: Gpu) -> GpuView:
    # A GPU the agent has never sampled has no status row; the reverse accessor then raises.
    status: GpuStatus | None = getattr(gpu, "status", None)
    reading = (
        GpuReading(
            sampled_at=status.sampled_at,
            utilisation_pct=status.utilisation_pct,
            memory_used_bytes=status.memory_used_bytes,
            memory_total_bytes=status.memory_total_bytes,
            temperature_c=status.temperature_c,
            power_w=status.power_w,
            power_limit_w=status.power_limit_w,
        )
        if status is not None
        else None
    )
    return GpuView(
        id=gpu.pk,
        index=gpu.index,
        name=gpu.name,
        memory_bytes=gpu.memory_bytes,
        board_id=gpu.board_id,
        reading=reading,
    )


def _deployment_view(
    d: Deployment, board: BoardView | None, speed: DeploymentSpeed
) -> DeploymentView:
    served = deployment_served(d)
    state = served.state if served else DeploymentHealth.State.UNKNOWN
    return DeploymentView(
        id=d.pk,
        model_name=d.model_name,
        enabled=d.enabled,
        backend_id=d.backend_id,
        backend_name=d.backend.name,
        board_id=d.backend.board_id,
        board_label=str(d.backend.board),
        memory_estimate_bytes=d.memory_estimate_bytes,
        board=board,
        speed=speed,
        served_state=state,
        served_state_label=DeploymentHealth.State(state).label,
        served_model=served.served_model if served else "",
        served_message=served.message if served else "",
        configured_context=d.context_per_slot,
        served_context=served.served_context if served else None,
        context_tokens=deployment_context_tokens(d),
    )


def _backend_view(backend: Backend) -> BackendView:
    # The health job creates the row on its first check; until then the backend is unchecked.
    health: BackendHealth | None = getattr(backend, "health", None)
    state = health.state if health else BackendHealth.State.UNKNOWN
    return BackendView(
        id=backend.pk,
        name=backend.name,
        kind=backend.kind,
        kind_label=backend.get_kind_display(),
        board_id=backend.board_id,
        board_label=str(backend.board),
        slots=backend.slots,
        enabled=backend.enabled,
        state=state,
        state_label=BackendHealth.State(state).label,
        message=health.message if health else "",
        checked_at=health.checked_at if health else None,
        slots_total=health.slots_total if health else 0,
        slots_busy=health.slots_busy if health else 0,
        consecutive_failures=health.consecutive_failures if health else 0,
    )


# --- Stale agent reports --------------------------------------------------------------------


def stale_after_seconds() -> float:
    """How old a GPU agent's last report may be before the dashboard stops believing it."""
    return float(
        settings.LEXWEB_GPU_AGENT_INTERVAL_SECONDS * settings.LEXWEB_GPU_AGENT_STALE_INTERVALS
    )


def host_is_stale(seen_at: datetime | None, *, now: datetime, after: float) -> bool:
    """A host that reported once, longer than `after` seconds ago. A host never heard from is
    not stale: it "has not reported yet"."""
    age = _age(seen_at, now)
    return age is not None and age > after


def _age(seen_at: datetime | None, now: datetime) -> float | None:
    return None if seen_at is None else max(0.0, (now - seen_at).total_seconds())


def age_text(seconds: float) -> str:
    """ "12 s", "3 min 20 s", "2 h 5 min", "3 days" (static/lexweb/cluster.js says the same)."""
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    if whole < 2 * 86400:
        hours, rest = divmod(whole, 3600)
        minutes = rest // 60
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    return f"{whole // 86400} days"


# --- Sparklines -----------------------------------------------------------------------------

SPARK_WINDOW = timedelta(hours=1)
# One point per 60 s history bucket: at most this many per GPU line.
SPARK_GPU_POINTS = 60
# The latest successful calls of the window, at most this many per deployment.
SPARK_SPEED_POINTS = 60
SPARK_WIDTH = 120
SPARK_HEIGHT = 28


@dataclass(frozen=True)
class Sparkline:
    """A line over the last SPARK_WINDOW ending at `end`: (unix seconds, value) points, drawn
    on 0..`top` (a fixed top: 100 for percentages; for speeds the highest of the points and
    the reference line, with room above). `reference`: a dashed line (the 40 tok/s mark)."""

    end: float
    points: tuple[tuple[float, float], ...]
    top: float
    reference: float | None = None

    def _xy(self, at: float, value: float) -> tuple[float, float]:
        window = SPARK_WINDOW.total_seconds()
        x = (at - (self.end - window)) / window * SPARK_WIDTH
        y = SPARK_HEIGHT - min(max(value, 0.0), self.top) / self.top * SPARK_HEIGHT
        return round(min(max(x, 0.0), SPARK_WIDTH), 1), round(y, 1)

    @property
    def svg_points(self) -> str:
        return " ".join("{},{}".format(*self._xy(at, value)) for at, value in self.points)

    @property
    def reference_y(self) -> float | None:
        return None if self.reference is None else self._xy(self.end, self.reference)[1]

    @property
    def data(self) -> str:
        """The points for static/lexweb/cluster.js, which keeps the line going live."""
        return " ".join(f"{at:.0f}:{value:.1f}" for at, value in self.points)

    @property
    def last(self) -> float | None:
        return self.points[-1][1] if self.points else None

    @property
    def last_xy(self) -> tuple[float, float] | None:
        """Where the newest point is drawn (a dot: one point alone makes no line)."""
        return self._xy(*self.points[-1]) if self.points else None


@dataclass(frozen=True)
class GpuHistory:
    utilisation: Sparkline
    memory: Sparkline  # percent of the card's memory in use (the bucket's peak)


@dataclass(frozen=True)
class DashboardHistory:
    gpus: dict[int, GpuHistory]
    speeds: dict[int, Sparkline]


def dashboard_history_get(
    *, gpu_ids: Iterable[int], deployment_ids: Iterable[int]
) -> DashboardHistory:
    """The dashboard's sparklines for the last hour, in two queries: per GPU its 60 s history
    buckets (utilisation average, memory peak as a share of the card), per deployment the
    decode speed of its latest SPARK_SPEED_POINTS successful calls, against the 40 tok/s line.
    Every id asked for is in the answer (an empty line when nothing was recorded)."""
    now = timezone.now()
    end = now.timestamp()
    since = now - SPARK_WINDOW
    gpu_list, deployment_list = list(gpu_ids), list(deployment_ids)
    utilisation: dict[int, list[tuple[float, float]]] = {pk: [] for pk in gpu_list}
    memory: dict[int, list[tuple[float, float]]] = {pk: [] for pk in gpu_list}
    if gpu_list:
        rows = (
            GpuSample.objects.filter(
                gpu_id__in=gpu_list, bucket_seconds=60, bucket_start__gte=since
            )
            .annotate(total=F("gpu__memory_bytes"))
            .order_by("gpu_id", "bucket_start")
            .values_list(
                "gpu_id", "bucket_start", "utilisation_avg", "memory_used_max_bytes", "total"
            )
        )
        for gpu_id, start, util, used, total in rows:
            at = start.timestamp() + 30  # the middle of the bucket
            utilisation[gpu_id].append((at, float(util)))
            memory[gpu_id].append((at, 100.0 * used / total if total else 0.0))
    speeds: dict[int, list[tuple[float, float]]] = {pk: [] for pk in deployment_list}
    if deployment_list:
        ranked = (
            CallRecord.objects.filter(
                deployment_id__in=deployment_list,
                outcome=CallRecord.Outcome.OK,
                decode_tokens_per_second__isnull=False,
                started_at__gte=since,
            )
            .annotate(
                rank=Window(
                    RowNumber(),
                    partition_by=F("deployment_id"),
                    order_by=[F("started_at").desc(), F("pk").desc()],
                )
            )
            .filter(rank__lte=SPARK_SPEED_POINTS)
            .values_list("deployment_id", "started_at", "decode_tokens_per_second")
        )
        for deployment_id, started, speed in sorted(ranked, key=lambda r: (r[0], r[1])):
            speeds[deployment_id].append((started.timestamp(), float(speed or 0.0)))
    usable = USABLE_DECODE_TOKENS_PER_SECOND
    return DashboardHistory(
        gpus={
            pk: GpuHistory(
                utilisation=Sparkline(
                    end=end, points=tuple(utilisation[pk][-SPARK_GPU_POINTS:]), top=100.0
                ),
                memory=Sparkline(end=end, points=tuple(memory[pk][-SPARK_GPU_POINTS:]), top=100.0),
            )
            for pk in gpu_list
        },
        speeds={
            pk: Sparkline(
                end=end,
                points=tuple(points),
                top=max([usable, *(value for _, value in points)]) * 1.25,
                reference=usable,
            )
            for pk, points in speeds.items()
        },
    )


def dashboard_gpu_ids(dashboard: Dashboard) -> list[int]:
    return [
        gpu.id
        for host in dashboard.hosts
        for gpus in (*(board.gpus for board in host.boards), host.loose_gpus)
        for gpu in gpus
    ]


# --- Job queues and workers (admins) --------------------------------------------------------

WORKERS_LISTED = 100


@dataclass(frozen=True)
class QueueRow:
    name: str
    queued: int
    running: int
    failed: int


@dataclass(frozen=True)
class WorkerRow:
    id: int
    last_heartbeat: datetime
    heartbeat_age_seconds: float
    alive: bool  # heard from within LEXWEB_JOB_STALLED_SECONDS
    running: int  # jobs it is running now
    queues: tuple[str, ...]  # the queues of those jobs

    @property
    def heartbeat_age_text(self) -> str:
        return age_text(self.heartbeat_age_seconds)


@dataclass(frozen=True)
class JobsOverview:
    queues: tuple[QueueRow, ...]
    workers: tuple[WorkerRow, ...]
    workers_total: int
    stalled_seconds: int


_WORKERS_SQL = """
SELECT worker.id, worker.last_heartbeat, count(job.id),
       coalesce(array_agg(DISTINCT job.queue_name) FILTER (WHERE job.id IS NOT NULL), '{}')
  FROM procrastinate_workers worker
  LEFT JOIN procrastinate_jobs job ON job.worker_id = worker.id AND job.status = 'doing'
 GROUP BY worker.id, worker.last_heartbeat
 ORDER BY worker.last_heartbeat DESC, worker.id DESC
 LIMIT %s
"""


def jobs_overview_get(*, actor: User, audited: bool = True) -> JobsOverview:
    """Admins only (NotFound for anyone else, as for a page that does not exist): per queue the
    jobs queued, running and failed for good; each worker's last heartbeat and what it runs
    (the WORKERS_LISTED most recently heard). Counts and ids only, no job's arguments (they
    name cases). Audited as one read (cluster.jobs_view), except the figures an open page reads
    again as the queues change (`audited=False`): its opening was audited."""
    if not actor.is_active or actor.role != User.Role.ADMIN:
        raise NotFound("No such page.")
    now = timezone.now()
    stalled = int(settings.LEXWEB_JOB_STALLED_SECONDS)
    queues = tuple(
        QueueRow(
            name=state.name,
            queued=state.queued,
            running=state.running,
            failed=state.counts.get("failed", 0),
        )
        for state in job_selectors.queues_state(all_statuses=True)
    )
    with connection.cursor() as cursor:
        cursor.execute(_WORKERS_SQL, [WORKERS_LISTED])
        rows = cursor.fetchall()
        cursor.execute("SELECT count(*) FROM procrastinate_workers")
        total = int(cursor.fetchone()[0])
    workers = tuple(
        WorkerRow(
            id=pk,
            last_heartbeat=heartbeat,
            heartbeat_age_seconds=(age := max(0.0, (now - heartbeat).total_seconds())),
            alive=age <= stalled,
            running=running,
            queues=tuple(sorted(names)),
        )
        for pk, heartbeat, running, names in rows
    )
    if audited:
        audit_record(
            actor=actor,
            action="cluster.jobs_view",
            detail={"queues": len(queues), "workers": total},
        )
    return JobsOverview(
        queues=queues, workers=workers, workers_total=total, stalled_seconds=stalled
    )
