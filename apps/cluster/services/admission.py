"""Admission: never more calls in flight to a backend than it has slots.

llama-server accepts a request beyond its slots but withholds even the response headers until a
slot frees (protocols/llama-server), so an over-committed backend looks like a slow one and
serves in arrival order. Queueing here instead lets an urgent call overtake background work,
and keeps every waiting call visible to us rather than hidden in the server's queue.

Two levels, so that the limit holds for the whole site and priorities still count:
1. In this process, a gate per backend (this module's `admission` object, keyed by backend id)
   queues callers by priority; different backends (different boards) never wait on each other.
2. Across processes (several workers, several hosts), a caller that passed its gate also takes
   one of the backend's `slots` leases: a PostgreSQL session advisory lock per slot, held on a
   connection of its own for the length of the call. A process that dies drops its connection
   and with it its leases, so a crash never leaks a slot. Between processes there is no
   priority, only the bound: a caller waiting for a lease polls every LEASE_POLL_SECONDS.
"""

import asyncio
import heapq
import itertools
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Protocol

import psycopg

from lexweb.db import conninfo

# Advisory lock keys: 'LX' in the top 16 bits, then the backend id (32 bits), then the slot
# number (16 bits), so they cannot meet another user's advisory locks by accident.
_LEASE_NAMESPACE = 0x4C58
LEASE_POLL_SECONDS = 0.2


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


class Lease(Protocol):
    async def release(self) -> None: ...


class Leases(Protocol):
    async def acquire(self, backend_id: int, *, slots: int) -> Lease: ...


def lease_key(backend_id: int, slot: int) -> int:
    if not (0 <= backend_id < 2**32 and 0 <= slot < 2**16):
        raise ValueError(f"no lease key for backend {backend_id} slot {slot}")
    return (_LEASE_NAMESPACE << 48) | (backend_id << 16) | slot


@dataclass
class _PgLease:
    connection: psycopg.AsyncConnection[tuple[object, ...]]

    async def release(self) -> None:
        # Closing the session ends its advisory locks; no unlock round trip needed.
        await self.connection.close()


class PostgresLeases:
    """One lease per backend slot for the whole site: session advisory locks in the database
    lexweb already uses (DATABASES["default"], so tests use the test database)."""

    async def acquire(self, backend_id: int, *, slots: int) -> Lease:
        connection = await psycopg.AsyncConnection.connect(
            conninfo(application_name="lexweb admission"), autocommit=True
        )
        try:
            while True:
                for slot in range(slots):
                    cursor = await connection.execute(
                        "SELECT pg_try_advisory_lock(%s)", [lease_key(backend_id, slot)]
                    )
                    row = await cursor.fetchone()
                    if row is not None and row[0]:
                        return _PgLease(connection)
                await asyncio.sleep(LEASE_POLL_SECONDS)
        except BaseException:
            await connection.close()
            raise


class Admission:
    """Per-backend slot gates for this process, plus site-wide leases when given `leases`.

    A gate's state is guarded by a threading lock and waiters are woken with
    `call_soon_threadsafe`, so calls made from different threads (each with its own event loop,
    as `async_to_sync` in a sync job does) still share one count per backend.

    Without `leases` the bound holds in this process only (tests of the gates use that).
    """

    def __init__(self, *, leases: Leases | None = None) -> None:
        self._leases = leases
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
            lease = await self._leases.acquire(backend_id, slots=slots) if self._leases else None
            try:
                yield
            finally:
                if lease is not None:
                    await lease.release()
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
admission = Admission(leases=PostgresLeases())
