"""Payloads sent to the cluster dashboard's channel group, and the one way to send them.

Cluster state is not client material: every signed-in user may watch it. One group,
`cluster.status`, carries GPU samples, agent state, backend health and deployment speed.
"""

from collections.abc import Mapping
from typing import Literal, TypedDict

from lexweb.live import publish_on_commit

CLUSTER_GROUP = "cluster.status"


class GpuSampleEvent(TypedDict):
    type: Literal["cluster.gpu_sample"]
    gpu_id: int
    host: str
    index: int
    sampled_at: str
    # None: the card has no such sensor (NVML: not supported).
    utilisation_pct: int | None
    memory_used_bytes: int
    memory_total_bytes: int
    temperature_c: int | None
    power_w: float | None


class AgentStatusEvent(TypedDict):
    type: Literal["cluster.agent_status"]
    host_id: int
    host: str
    status: str  # Host.AgentStatus
    message: str
    at: str


class BackendHealthEvent(TypedDict):
    type: Literal["cluster.backend_health"]
    backend_id: int
    state: str  # BackendHealth.State
    message: str
    slots_total: int
    slots_busy: int
    checked_at: str


class DeploymentSpeedEvent(TypedDict):
    type: Literal["cluster.deployment_speed"]
    deployment_id: int
    decode_tokens_per_second: float | None
    calls: int
    usable: bool


ClusterEvent = GpuSampleEvent | AgentStatusEvent | BackendHealthEvent | DeploymentSpeedEvent


def publish_cluster(event: Mapping[str, object]) -> None:
    """Send `event` to the dashboard group once the current transaction commits (at once when
    none is open). A channel layer that is down is logged, not raised: the rows are the truth
    and the dashboard reloads them on reconnect."""
    publish_on_commit(CLUSTER_GROUP, event)
