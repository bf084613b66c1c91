"""Periodic jobs that keep the job system and the file store honest. Each calls one service."""

from django.conf import settings
from procrastinate.contrib.django import app

from apps.operations.services import recovery
from lexweb.jobs import require_arg

# --- Stalled jobs (recovery) ---------------------------------------------------------------
# On the `cluster` queue: its worker runs many jobs at once, so recovery never waits behind a
# long OCR job on `cpu`. At most one waiting (queueing lock); no `lock`, so a recovery job that
# died itself cannot block the next one (concurrent runs are safe, see the service).
RECOVER_STALLED_CRON: str = settings.LEXWEB_JOB_RECOVERY_CRON


@app.task(
    name="operations.recover_stalled",
    queue="cluster",
    queueing_lock="operations.recover_stalled",
)
def jobs_recover_stalled_task(*, timestamp: int) -> None:
    """Queue again the jobs whose worker died or went silent. Idempotent."""
    require_arg(timestamp, int, "timestamp")
    recovery.jobs_recover_stalled()


if RECOVER_STALLED_CRON:
    app.periodic(cron=RECOVER_STALLED_CRON, periodic_id="recover_stalled")(
        jobs_recover_stalled_task  # type: ignore[arg-type]
    )

