from ninja import Router

from apps.accounts.types import AuthedRequest
from apps.cluster import selectors
from apps.cluster.schemas import ClusterStatusOut

router = Router(tags=["cluster"])


@router.get("/cluster/status", response=ClusterStatusOut)
def cluster_status(request: AuthedRequest) -> selectors.Dashboard:
    """The cluster as the dashboard shows it: hosts with their GPU agent's state, boards with
    their GPUs' latest samples, backends with their health, deployments with their placement
    estimate, the memory measured on their board and their rolling decode speed.

    Read from the registry only (no backend is called). Any signed-in user or token may read
    it; it carries no API key."""
    return selectors.dashboard_get()
