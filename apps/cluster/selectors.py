"""Reads for the cluster app. Cluster state is not client material: any signed-in user may read
it, but never a backend's API key."""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Avg, Count, F, Window
from django.db.models.functions import RowNumber
from django.utils import timezone

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
        Deployment.objects.select_related("backend__board__host")
        .defer("backend__api_key")
        .order_by("backend__name", "model_name")
    )
    speeds = deployment_speeds_get(deployment_ids=[d.pk for d in deployment_rows])
    deployments = tuple(
        DeploymentView(
            id=d.pk,
            model_name=d.model_name,
            enabled=d.enabled,
            backend_id=d.backend_id,
            backend_name=d.backend.name,
            board_id=d.backend.board_id,
            board_label=str(d.backend.board),
            memory_estimate_bytes=d.memory_estimate_bytes,
            board=boards.get(d.backend.board_id),
            speed=speeds[d.pk],
        )
        for d in deployment_rows
    )
    return Dashboard(hosts=hosts, backends=backends, deployments=deployments)


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
    )
