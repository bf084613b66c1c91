from django.conf import settings
from procrastinate.contrib.django import app

from apps.cluster.services import health
from lexweb.jobs import require_arg

# How often the worker checks every backend: a procrastinate cron whose sixth field is seconds
# ("* * * * * */30": every 30 s). Empty: no schedule (the task can still be deferred by hand).
# Off until settings define it, because every worker, including the one tests/conftest.py's
# `run_jobs` starts, defers periodic jobs and those rows would show up in other tests' queues.
HEALTH_CHECK_CRON: str = getattr(settings, "LEXWEB_CLUSTER_HEALTH_CRON", "")
HEALTH_CHECK_PERIODIC_ID = "health"


@app.task(
    name="cluster.health_check",
    queue="cluster",
    # One run at a time, and at most one more waiting: a check that outlasts its period (a
    # hanging backend) must not pile up copies behind it. Every worker defers the periodic
    # job; the database keeps one per scheduled time.
    lock="cluster.health_check",
    queueing_lock="cluster.health_check",
)
async def backends_health_check_task(*, timestamp: int) -> None:
    """Check every enabled backend and write the health registry.

    Async, so the checks of different boards wait on their backends side by side; the service
    reaches the ORM only through sync_to_async. Idempotent.
    """
    require_arg(timestamp, int, "timestamp")
    await health.backends_health_check_all()


if HEALTH_CHECK_CRON:
    # The stubs want `timestamp` positional; procrastinate passes it as a keyword, as declared.
    app.periodic(cron=HEALTH_CHECK_CRON, periodic_id=HEALTH_CHECK_PERIODIC_ID)(
        backends_health_check_task  # type: ignore[arg-type]
    )
