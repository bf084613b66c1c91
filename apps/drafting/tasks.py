"""The drafting pipeline's job: one stage of a run. Deferred by name ("drafting.run_stage") on
the stage's board queue (`board.<id>`) or on `cluster` for the checks
(apps/drafting/services/runs.py)."""

from django.db import InterfaceError, OperationalError
from procrastinate import RetryStrategy
from procrastinate.contrib.django import app

from apps.drafting.pipeline import execute
from lexweb.jobs import require_arg

# A database that went away mid-stage is worth another try (the stage starts again from the
# start); every other failure is recorded on the stage by the service.
_RETRY = RetryStrategy(
    max_attempts=3, exponential_wait=5, retry_exceptions={OperationalError, InterfaceError}
)


@app.task(name="drafting.run_stage", queue="cluster", retry=_RETRY)
async def run_stage_task(*, stage_id: int) -> None:
    """Run one stage (see pipeline.execute.stage_run). Idempotent; a no-op for a missing,
    finished or cancelled stage."""
    require_arg(stage_id, int, "stage_id")
    await execute.stage_run(stage_id=stage_id)
