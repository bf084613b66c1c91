"""What the cluster status endpoint answers: the dashboard's facts, never a backend's API key
or URL."""

from datetime import datetime

from ninja import Schema

from apps.cluster.selectors import DeploymentView


class GpuReadingOut(Schema):
    """null: the card has no such sensor (NVML: not supported)."""

    sampled_at: datetime
    utilisation_pct: int | None
    memory_used_bytes: int
    memory_total_bytes: int
    temperature_c: int | None
    power_w: float | None
    power_limit_w: float | None


class GpuOut(Schema):
    id: int
    index: int
    name: str
    memory_bytes: int
    board_id: int | None
    reading: GpuReadingOut | None


class BoardOut(Schema):
    id: int
    name: str
    host_name: str
    gpus: list[GpuOut]
    measured: bool
    memory_used_bytes: int
    memory_total_bytes: int


class HostOut(Schema):
    id: int
    name: str
    description: str
    agent_status: str
    agent_message: str
    agent_seen_at: datetime | None
    # Seconds since the agent's last report (null: never reported); stale: older than
    # LEXWEB_GPU_AGENT_STALE_INTERVALS agent intervals, so its last state is not to be believed.
    report_age_seconds: float | None
    stale: bool
    boards: list[BoardOut]
    loose_gpus: list[GpuOut]


class BackendOut(Schema):
    id: int
    name: str
    kind: str
    board_id: int
    board_label: str
    slots: int
    enabled: bool
    state: str
    message: str
    checked_at: datetime | None
    slots_total: int
    slots_busy: int


class DeploymentSpeedOut(Schema):
    decode_tokens_per_second: float | None
    calls: int
    usable: bool


class DeploymentOut(Schema):
    id: int
    model_name: str
    enabled: bool
    backend_id: int
    backend_name: str
    board_id: int
    board_label: str
    memory_estimate_bytes: int
    # What NVML measures in use on the deployment's board; None when no GPU of it has reported.
    board_memory_used_bytes: int | None
    board_memory_total_bytes: int | None
    speed: DeploymentSpeedOut
    # The health check's view: "ok", "misconfigured" (the server serves another model, named
    # in served_model) or "unknown"; the context of one request configured, as the server
    # reports it (None: not reported), and the smaller of the two, which is the one used.
    served_state: str
    served_model: str
    served_message: str
    configured_context: int
    served_context: int | None
    context_tokens: int

    @staticmethod
    def resolve_board_memory_used_bytes(obj: DeploymentView) -> int | None:
        return obj.board.memory_used_bytes if obj.board and obj.board.measured else None

    @staticmethod
    def resolve_board_memory_total_bytes(obj: DeploymentView) -> int | None:
        return obj.board.memory_total_bytes if obj.board and obj.board.measured else None


class ClusterStatusOut(Schema):
    hosts: list[HostOut]
    backends: list[BackendOut]
    deployments: list[DeploymentOut]
    usable_decode_tokens_per_second: float
    speed_window_calls: int
    stale_after_seconds: float
