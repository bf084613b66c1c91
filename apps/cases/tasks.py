from procrastinate.contrib.django import app

from apps.cases import services
from lexweb.jobs import require_arg


@app.task(name="cases.worker_check", queue="cpu")
def case_worker_check_task(*, case_id: int, requested_by: int, queued_at: str) -> None:
    """Announce this worker on the case's stream. A missing case makes it a no-op."""
    require_arg(case_id, int, "case_id")
    require_arg(requested_by, int, "requested_by")
    require_arg(queued_at, str, "queued_at")
    services.case_worker_check_run(case_id=case_id, requested_by=requested_by, queued_at=queued_at)
