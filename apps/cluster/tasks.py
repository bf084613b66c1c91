from django.conf import settings
from procrastinate.contrib.django import app

from apps.cluster.services import health
from lexweb.jobs import require_arg

# How often the worker checks every backend (settings.LEXWEB_CLUSTER_HEALTH_CRON: a cron whose
# sixth field is seconds, "* * * * * */30" by default). Empty: no schedule; the task can still
# be deferred by hand. Every worker defers the periodic job; tests/conftest.py's `run_jobs`
# runs its worker without the schedule, so that only the jobs a test queued show up.
HEALTH_CHECK_CRON: str = settings.LEXWEB_CLUSTER_HEALTH_CRON
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

    `timestamp` is the check's scheduled time: cooldowns are counted from it, not from when a
    worker happened to start the job. Async, so the checks of different boards wait on their
    backends side by side; the service reaches the ORM only through sync_to_async. Idempotent.
    """
    require_arg(timestamp, int, "timestamp")
    await health.backends_health_check_all(tick=health.tick_from_timestamp(timestamp))


if HEALTH_CHECK_CRON:
    # The stubs want `timestamp` positional; procrastinate passes it as a keyword, as declared.
    app.periodic(cron=HEALTH_CHECK_CRON, periodic_id=HEALTH_CHECK_PERIODIC_ID)(
        backends_health_check_task  # type: ignore[arg-type]
    )
