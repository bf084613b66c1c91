from django.conf import settings
from django.db import InterfaceError, OperationalError
from procrastinate import RetryStrategy
from procrastinate.contrib.django import app

from apps.verification import services
from lexweb.jobs import require_arg

# A database that went away mid-run is worth another try (the run starts again and replaces
# its findings); anything else fails the run with its message.
_RETRY = RetryStrategy(
    max_attempts=3, exponential_wait=10, retry_exceptions={OperationalError, InterfaceError}
)


@app.task(name="verification.verify", queue="cpu", retry=_RETRY)
def verification_run_task(*, verification_id: int) -> None:
    """Check a draft version's claims against its packet's frozen pages (see
    services.verification_run). Idempotent; a no-op for a missing, done or failed run."""
    require_arg(verification_id, int, "verification_id")
    services.verification_run(verification_id=verification_id)


# On `cluster`, as the other housekeeping (never behind a long OCR job on `cpu`); at most one
# waiting. Runs on recovery's schedule (LEXWEB_JOB_RECOVERY_CRON; empty: never).
FAIL_STALE_CRON: str = settings.LEXWEB_JOB_RECOVERY_CRON


@app.task(
    name="verification.fail_stale",
    queue="cluster",
    queueing_lock="verification.fail_stale",
)
def verifications_fail_stale_task(*, timestamp: int) -> None:
    """Fail the verifications whose job is gone for good, so they can be asked again."""
    require_arg(timestamp, int, "timestamp")
    services.verifications_fail_stale()


if FAIL_STALE_CRON:
    app.periodic(cron=FAIL_STALE_CRON, periodic_id="verification_fail_stale")(
        verifications_fail_stale_task  # type: ignore[arg-type]
    )


@app.task(name="verification.index_prepare", queue="cpu", retry=_RETRY)
def packet_index_prepare_task(*, packet_id: int) -> None:
    """Build and keep the verifier's index of a frozen packet (deferred when it is frozen; see
    index_cache.packet_index_prepare). Idempotent; a no-op for a missing or editable packet or
    one whose index is stored."""
    require_arg(packet_id, int, "packet_id")
    # Imported here, as services._run imports the verifier: a verifier module that fails to
    # import fails this job, not the loading of every task.
    from apps.verification import index_cache

    index_cache.packet_index_prepare(packet_id=packet_id)
