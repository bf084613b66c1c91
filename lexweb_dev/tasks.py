"""The demo's job: finishing the seeding of the demo case once its documents are read."""

from procrastinate.contrib.django import app

from lexweb.jobs import require_arg
from lexweb_dev import demo_evidence


@app.task(name=demo_evidence.CONTINUE_TASK, queue="cpu")
def demo_seed_continue_task(*, case_id: int, attempt: int) -> None:
    """One try (see lexweb_dev.demo_evidence): waits by queueing itself again while the demo
    documents are being read; then the Bates production and the frozen packet. Idempotent."""
    require_arg(case_id, int, "case_id")
    require_arg(attempt, int, "attempt")
    demo_evidence.demo_seed_continue(case_id=case_id, attempt=attempt)
