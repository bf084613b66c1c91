"""A worker tells open job-queue pages that the queues changed (issue 25 req 3).

Each job a worker takes or finishes changes the queues' counts. The worker marks that here;
at most one `operations.jobs_changed` message per JOBS_PULSE_SECONDS goes to the group
`operations.jobs`, carrying nothing but its type: the page (/cluster/jobs/, admins only) reads
its figures again from the database, which is the truth. A busy worker sends about one message
a second, an idle one none. A failed send is logged, never raised: it must not fail a job.
"""

import asyncio
import logging
import time

from asgiref.sync import sync_to_async
from django.db import DatabaseError

from lexweb.live import publish_on_commit

logger = logging.getLogger(__name__)

JOBS_GROUP = "operations.jobs"
JOBS_CHANGED = "operations.jobs_changed"
JOBS_PULSE_SECONDS = 1.0
# A change is sent this late at the earliest: Procrastinate writes a finished job's status just
# after the job returns, and the page must read the status it ends with.
SETTLE_SECONDS = 0.25


def jobs_changed_send() -> None:
    """Send the message now (sync code: a service that changed jobs by hand)."""
    publish_on_commit(JOBS_GROUP, {"type": JOBS_CHANGED})


class JobsPulse:
    """Coalesces a worker's job changes into at most one message per `interval` seconds: the
    first change after a quiet spell goes out after SETTLE_SECONDS, later ones at the end of
    the interval."""

    def __init__(self, interval: float = JOBS_PULSE_SECONDS) -> None:
        self.interval = interval
        self._last = float("-inf")
        self._pending: asyncio.Task[None] | None = None
        self._sending = False  # the pending task is sending now: a change is not in it
        self._again = False  # a change came while it was sending

    def changed(self) -> None:
        """Call from the worker's event loop when a job started or ended."""
        if self._pending is not None and not self._pending.done():
            # Waiting to send: the message will tell of this change too. Sending already:
            # it may not, so another follows (a change is never left untold).
            self._again = self._again or self._sending
            return
        self._schedule()

    def _schedule(self) -> None:
        delay = max(SETTLE_SECONDS, self._last + self.interval - time.monotonic())
        self._pending = asyncio.get_running_loop().create_task(self._send_after(delay))

    async def _send_after(self, delay: float) -> None:
        await asyncio.sleep(delay)
        self._last = time.monotonic()
        self._sending = True
        try:
            await self._send()
        finally:
            self._sending = False
        if self._again:  # (not after a cancel: the worker is stopping)
            self._again = False
            self._schedule()

    async def _send(self) -> None:
        try:
            await sync_to_async(jobs_changed_send, thread_sensitive=True)()
        except DatabaseError as exc:  # the database is away: the worker says so itself
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            logger.warning("Job-queue pages not told of a change: %s", reason)
        except Exception:
            logger.exception("Telling job-queue pages that the queues changed failed.")
