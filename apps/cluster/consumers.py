from apps.accounts.access import CLOSE_ACCESS_ENDED, AccessWatchedConsumer
from apps.accounts.models import User
from apps.cluster.events import (
    CLUSTER_GROUP,
    AgentStatusEvent,
    BackendHealthEvent,
    DeploymentSpeedEvent,
    GpuSampleEvent,
)
from apps.operations.jobs_pulse import JOBS_GROUP

# Close codes (4000-4999 are the application's): static/lexweb/cluster.js reads them.
# Cluster state is not client material, so there is nothing to hide by answering 4404 as the
# case stream does: not being signed in is simply said.
# Also when access ends while connected (token revoked or expired, account deactivated,
# signed out), with the reason.
CLOSE_UNAUTHENTICATED = CLOSE_ACCESS_ENDED  # 4401
CLOSE_BAD_INPUT = 4400  # the stream is one-way


class ClusterStatusConsumer(AccessWatchedConsumer):
    """One-way stream of the cluster's state (GPU samples, agent state, backend health,
    deployment speed) for any signed-in user. Events carry no API key: none is ever published."""

    joined = False
    jobs = False

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        await self.channel_layer.group_add(CLUSTER_GROUP, self.channel_name)
        # Admins' pages also hear that the job queues changed (the jobs page is theirs alone).
        self.jobs = getattr(user, "role", "") == User.Role.ADMIN
        if self.jobs:
            await self.channel_layer.group_add(JOBS_GROUP, self.channel_name)
        self.joined = True
        if not await self.access_begin():
            return
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.joined:
            await self.channel_layer.group_discard(CLUSTER_GROUP, self.channel_name)
            if self.jobs:
                await self.channel_layer.group_discard(JOBS_GROUP, self.channel_name)
            self.joined = False
        await self.access_finish()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Anything sent by the client, well-formed or not, is refused the same way.
        await self.close(code=CLOSE_BAD_INPUT)

    async def cluster_gpu_sample(self, event: GpuSampleEvent) -> None:
        await self.send_json(event)

    async def cluster_agent_status(self, event: AgentStatusEvent) -> None:
        await self.send_json(event)

    async def cluster_backend_health(self, event: BackendHealthEvent) -> None:
        await self.send_json(event)

    async def cluster_deployment_speed(self, event: DeploymentSpeedEvent) -> None:
        await self.send_json(event)

    async def operations_jobs_changed(self, event: dict[str, str]) -> None:
        await self.send_json({"type": event["type"]})
