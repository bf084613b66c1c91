from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from apps.cluster import selectors
from apps.cluster.models import BackendHealth, Host


@login_required
@require_safe
# The page is the state the live stream resumes from: a cached copy would show an old one.
@never_cache
def dashboard(request: HttpRequest) -> HttpResponse:
    """The cluster dashboard: boards and their GPUs, backends, deployments. Takes no
    parameters; any signed-in user may see it (cluster state is not client material)."""
    context = {
        "dashboard": selectors.dashboard_get(),
        # For the page script, which turns the states in live events into the same words.
        "labels": {
            "agent": dict(Host.AgentStatus.choices),
            "health": dict(BackendHealth.State.choices),
        },
    }
    return render(request, "cluster/dashboard.html", context)
