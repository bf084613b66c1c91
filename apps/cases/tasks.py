from procrastinate.contrib.django import app

from apps.cases import services
from lexweb.errors import DomainError


def _require(value: object, kind: type, name: str) -> None:
    # Job arguments are JSON from the database: a hand-queued or stale job may carry anything.
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DomainError(f"Task argument {name} must be {kind.__name__}, not {value!r:.40}.")


@app.task(name="cases.worker_check", queue="cpu")
def case_worker_check_task(*, case_id: int, requested_by: int, queued_at: str) -> None:
    """Announce this worker on the case's stream. A missing case makes it a no-op."""
    _require(case_id, int, "case_id")
    _require(requested_by, int, "requested_by")
    _require(queued_at, str, "queued_at")
    services.case_worker_check_run(case_id=case_id, requested_by=requested_by, queued_at=queued_at)
