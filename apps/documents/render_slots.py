"""At most LEXWEB_PAGE_IMAGE_CONCURRENCY page images are drawn at once in a process.

Drawing a page image of a large scan takes a few hundred MB while it runs (eight at once of
one large TIFF page added 1.7 GB to the web process). Each render holds a slot:

1. `render_slot()` takes a slot, waiting up to LEXWEB_PAGE_IMAGE_WAIT_SECONDS for one.
2. None free by then: PageImagesBusyError (an Unavailable: 503 with Retry-After), so requests
   are refused instead of piling up in memory.
3. The slot is given back when the render ends, however it ends.

The slots belong to the process: sync views run in threads (under ASGI too), so a threading
semaphore bounds them; each web process has its own. The renders that take slots are the
ones behind every edge: `extraction.page_png` (page images and thumbnails, for the API and
the pages that show them) and the production stamp preview.
"""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

from lexweb.errors import Unavailable

# What a refused request is told to wait before it asks again.
RETRY_AFTER_SECONDS = 2


class PageImagesBusyError(Unavailable):
    code = "page_images_busy"


class Slots:
    """The semaphore for one limit, with how many slots are taken now and at most so far."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._semaphore = threading.BoundedSemaphore(limit)
        self._count_lock = threading.Lock()
        self.in_use = 0
        self.peak = 0

    def acquire(self, *, timeout: float) -> bool:
        if not self._semaphore.acquire(timeout=timeout):
            return False
        with self._count_lock:
            self.in_use += 1
            self.peak = max(self.peak, self.in_use)
        return True

    def release(self) -> None:
        with self._count_lock:
            self.in_use -= 1
        self._semaphore.release()


_lock = threading.Lock()
_slots: Slots | None = None


def slots() -> Slots:
    """This process's slots; new ones when LEXWEB_PAGE_IMAGE_CONCURRENCY has changed (renders
    already running finish on the slots they took)."""
    global _slots
    with _lock:
        if _slots is None or _slots.limit != settings.LEXWEB_PAGE_IMAGE_CONCURRENCY:
            _slots = Slots(settings.LEXWEB_PAGE_IMAGE_CONCURRENCY)
        return _slots


@contextmanager
def render_slot() -> Iterator[None]:
    """Hold one render slot for the block, or raise PageImagesBusyError after waiting
    LEXWEB_PAGE_IMAGE_WAIT_SECONDS for one."""
    taken = slots()
    if not taken.acquire(timeout=settings.LEXWEB_PAGE_IMAGE_WAIT_SECONDS):
        raise PageImagesBusyError(
            f"The server is drawing {taken.limit} page image{'s' if taken.limit != 1 else ''} "
            f"already; try again in {RETRY_AFTER_SECONDS} seconds.",
            retry_after=RETRY_AFTER_SECONDS,
        )
    try:
        yield
    finally:
        taken.release()
