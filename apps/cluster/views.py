from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from apps.accounts.models import User
from apps.cases.shortcuts import request_user
from apps.cluster import selectors
from apps.cluster.models import BackendHealth, Host
from lexweb.errors import NotFound


@login_required
@require_safe
# The page is the state the live stream resumes from: a cached copy would show an old one.
@never_cache
def dashboard(request: HttpRequest) -> HttpResponse:
    """The cluster dashboard: boards and their GPUs with the last hour's sparklines, backends,
    deployments with their decode speed against the 40 tok/s line. Takes no parameters (any
    query string is ignored); any signed-in user may see it (cluster state is not client
    material)."""
    board = selectors.dashboard_get()
    history = selectors.dashboard_history_get(
        gpu_ids=selectors.dashboard_gpu_ids(board),
        deployment_ids=[d.id for d in board.deployments],
    )
    user = request_user(request)
    context = {
        "dashboard": board,
        "history": history,
        "is_admin": user.is_active and user.role == User.Role.ADMIN,
        # For the page script, which turns the states in live events into the same words.
        "labels": {
            "agent": dict(Host.AgentStatus.choices),
            "health": dict(BackendHealth.State.choices),
        },
    }
    return render(request, "cluster/dashboard.html", context)


@login_required
@require_safe
@never_cache
def jobs(request: HttpRequest) -> HttpResponse:
    """Admins only (404 for anyone else): the job queues (queued, running, failed for good)
    and the workers with their last heartbeat; audited. `?part=1`: only the figures, for the
    open page to put in place when a worker says the queues changed (not audited again)."""
    part = request.GET.get("part") == "1"
    try:
        overview = selectors.jobs_overview_get(actor=request_user(request), audited=not part)
    except NotFound:
        raise Http404("No such page.") from None
    template = "cluster/_jobs_live.html" if part else "cluster/jobs.html"
    return render(request, template, {"jobs": overview})
