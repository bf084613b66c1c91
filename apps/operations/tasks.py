"""Periodic jobs that keep the job system and the file store honest. Each calls one service."""

from django.conf import settings
from procrastinate.contrib.django import app

from apps.operations.services import recovery, sweeper
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
    """Queue again the jobs whose worker died or went silent, then let the apps act on the
    outcome (AFTER_RECOVERY_HOOKS: drafting's stages whose job failed without recording why,
    apps/drafting/services/runs.py, with the cause where the recovery knows it). Idempotent."""
    require_arg(timestamp, int, "timestamp")
    outcome = recovery.jobs_recover_stalled()
    for hook in recovery.AFTER_RECOVERY_HOOKS:
        hook(outcome)


if RECOVER_STALLED_CRON:
    app.periodic(cron=RECOVER_STALLED_CRON, periodic_id="recover_stalled")(
        jobs_recover_stalled_task  # type: ignore[arg-type]
    )


# --- Orphaned files (sweeper) --------------------------------------------------------------
# Also on `cluster` (never behind a long OCR job). One at a time (`lock`; the service also
# holds an advisory lock, so the run at worker start and this job never overlap) and at most
# one waiting (`queueing_lock`), so ticks missed while the machine slept queue one run.
SWEEP_CRON: str = settings.LEXWEB_SWEEP_CRON


@app.task(
    name="operations.sweep",
    queue="cluster",
    lock="operations.sweep",
    queueing_lock="operations.sweep",
)
def files_sweep_task(*, timestamp: int) -> None:
    """Remove orphaned stored files and dead processes' temporaries, then the apps' own
    housekeeping (SWEEP_HOOKS: the API's stored Idempotency-Key answers older than 24 hours).
    Idempotent."""
    require_arg(timestamp, int, "timestamp")
    sweeper.files_sweep()
    for hook in sweeper.SWEEP_HOOKS:
        hook()


if SWEEP_CRON:
    app.periodic(cron=SWEEP_CRON, periodic_id="sweep")(files_sweep_task)  # type: ignore[arg-type]
