"""Admission: never more calls in flight to a backend than it has slots.

llama-server accepts a request beyond its slots but withholds even the response headers until a
slot frees (protocols/llama-server), so an over-committed backend looks like a slow one and
serves in arrival order. Queueing here instead lets an urgent call overtake background work,
and keeps every waiting call visible to us rather than hidden in the server's queue.

Scope: one process. Each gate lives in this module's `admission` object, keyed by backend id;
different backends (different boards) never wait on each other. Two worker processes each
admit up to `slots` calls; see `Admission` for what that means.
"""

import asyncio
import heapq
import itertools
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import IntEnum


class Priority(IntEnum):
    """Lower numbers are served first; equal priorities are served first come, first served."""

    INTERACTIVE = 0  # a person is watching tokens arrive
    NORMAL = 10  # a pipeline stage
    BACKGROUND = 20  # health probes, batch work


@dataclass(order=True)
class _Waiter:
    priority: int
    sequence: int
    future: asyncio.Future[None] = field(compare=False)
    granted: bool = field(default=False, compare=False)


@dataclass
class _Gate:
    in_flight: int = 0
    waiters: list[_Waiter] = field(default_factory=list)


@dataclass(frozen=True)
class GateState:
    in_flight: int
    waiting: int


def _wake(future: asyncio.Future[None]) -> None:
    # The waiter may have been cancelled between the grant and this callback; its own
    # cancellation handler then sees `granted` and gives the slot back.
    if not future.done():
        future.set_result(None)


class Admission:
    """Per-backend slot gates for this process.

    A gate's state is guarded by a threading lock and waiters are woken with
    `call_soon_threadsafe`, so calls made from different threads (each with its own event loop,
    as `async_to_sync` in a sync job does) still share one count per backend.

    Not across processes: with N workers a backend may see up to N x slots requests. llama-server
    then queues the excess itself (in arrival order, priorities lost); nothing fails.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._gates: dict[int, _Gate] = {}
        self._sequence = itertools.count()

    @asynccontextmanager
    async def slot(
        self, backend_id: int, *, slots: int, priority: int = Priority.NORMAL
    ) -> AsyncIterator[None]:
        """Hold one of the backend's `slots` for the duration of the block.

        Waiters are served by `priority` (lower first), then in arrival order. A waiter that is
        cancelled leaves the queue; a holder that is cancelled (or raises) frees its slot.
        `slots` is read on every call, so an admin's change applies to the next grant.
        """
        slots = max(1, slots)
        await self._acquire(backend_id, slots=slots, priority=priority)
        try:
            yield
        finally:
            self._release(backend_id, slots=slots)

    def state(self, backend_id: int) -> GateState:
        with self._lock:
            gate = self._gates.get(backend_id)
            if gate is None:
                return GateState(in_flight=0, waiting=0)
            return GateState(in_flight=gate.in_flight, waiting=len(gate.waiters))

    async def _acquire(self, backend_id: int, *, slots: int, priority: int) -> None:
        loop = asyncio.get_running_loop()
        with self._lock:
            gate = self._gates.setdefault(backend_id, _Gate())
            waiter = _Waiter(priority, next(self._sequence), loop.create_future())
            heapq.heappush(gate.waiters, waiter)
            self._grant(gate, slots=slots)
        try:
            await waiter.future
        except BaseException:
            self._abandon(backend_id, waiter, slots=slots)
            raise

    def _abandon(self, backend_id: int, waiter: _Waiter, *, slots: int) -> None:
        """A waiter was cancelled: leave the queue, or hand back a slot granted meanwhile."""
        with self._lock:
            gate = self._gates[backend_id]
            if waiter.granted:
                gate.in_flight -= 1
            else:
                gate.waiters.remove(waiter)
                heapq.heapify(gate.waiters)
            self._grant(gate, slots=slots)
            self._forget_if_idle(backend_id, gate)

    def _release(self, backend_id: int, *, slots: int) -> None:
        with self._lock:
            gate = self._gates[backend_id]
            gate.in_flight -= 1
            self._grant(gate, slots=slots)
            self._forget_if_idle(backend_id, gate)

    def _grant(self, gate: _Gate, *, slots: int) -> None:
        """Hand free slots to the best waiters. Call with the lock held."""
        while gate.waiters and gate.in_flight < slots:
            waiter = heapq.heappop(gate.waiters)
            waiter.granted = True
            gate.in_flight += 1
            waiter.future.get_loop().call_soon_threadsafe(_wake, waiter.future)

    def _forget_if_idle(self, backend_id: int, gate: _Gate) -> None:
        # A gate with nothing in flight carries no state; dropping it keeps the dict from
        # growing with deleted backends and from pinning futures of a closed event loop.
        if gate.in_flight == 0 and not gate.waiters:
            del self._gates[backend_id]


# The process's one admission controller (dispatch uses it; tests may build their own).
admission = Admission()
