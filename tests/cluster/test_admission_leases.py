"""Site-wide admission: the slot bound holds across processes (each with its own gates) through
PostgreSQL advisory locks, and a process that dies gives its slots back."""

import asyncio
import signal
import subprocess
import sys
from collections import defaultdict
from datetime import datetime

import pytest
from asgiref.sync import sync_to_async
from django.db import connection

from apps.cluster.services.admission import Admission, PostgresLeases, lease_key
from tests.conftest import BASE_DIR, database_url_for_tests
from tests.running import read_until

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

BACKEND = 7


def _lease_tries() -> list[tuple[int, datetime]]:
    """(connection pid, start of its latest statement) for every admission connection whose
    latest statement was a try for a lease. A connection that polls again moves its start."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid, query_start FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = 'lexweb admission' "
            "AND query LIKE 'SELECT pg_try_advisory_lock%%'"
        )
        return [(pid, started) for pid, started in cursor.fetchall()]


async def _until_refused_and_polling(*, callers: int, tries: int) -> None:
    """Wait until `callers` admission connections have each been seen trying for a lease
    `tries` times or more (one statement per slot tried; each moves the statement's start).

    A caller stops trying once it has a lease, and one pass over the slots tries each slot
    once, so a caller seen making more tries than there are slots was refused a whole pass
    and is polling: no fixed sleep stands in for "it had its chance"."""
    seen: dict[int, set[datetime]] = defaultdict(set)
    async with asyncio.timeout(30):
        while sum(len(starts) >= tries for starts in seen.values()) < callers:
            for pid, started in await sync_to_async(_lease_tries)():
                seen[pid].add(started)
            await asyncio.sleep(0.02)


async def test_two_processes_gates_together_never_exceed_the_backends_slots() -> None:
    # Two Admission objects stand for two worker processes: separate gates, one database.
    workers = [Admission(leases=PostgresLeases()), Admission(leases=PostgresLeases())]
    in_flight = 0
    peak = 0
    done = 0
    release = asyncio.Event()

    async def call(worker: Admission) -> None:
        nonlocal in_flight, peak, done
        async with worker.slot(BACKEND, slots=2):
            in_flight += 1
            peak = max(peak, in_flight)
            await release.wait()
            in_flight -= 1
        done += 1

    calls = asyncio.gather(*(call(workers[n % 2]) for n in range(8)))
    # Each gate lets two through, four in all: two hold the leases, and the other two are
    # refused a whole pass over the two slots and poll again while the first two stay inside.
    await _until_refused_and_polling(callers=2, tries=3)
    assert workers[0].state(BACKEND).in_flight == workers[1].state(BACKEND).in_flight == 2
    assert in_flight == 2
    release.set()
    await asyncio.wait_for(calls, timeout=30)

    assert (peak, done) == (2, 8)
    # Each process alone would have let two in: four at once without the leases.
    assert workers[0].state(BACKEND).in_flight == workers[1].state(BACKEND).in_flight == 0


async def test_a_cancelled_holder_gives_its_lease_back_at_once() -> None:
    worker = Admission(leases=PostgresLeases())
    entered = asyncio.Event()

    async def hold() -> None:
        async with worker.slot(BACKEND, slots=1):
            entered.set()
            await asyncio.Event().wait()

    holder = asyncio.create_task(hold())
    await entered.wait()
    holder.cancel()
    with pytest.raises(asyncio.CancelledError):
        await holder

    other = Admission(leases=PostgresLeases())
    async with asyncio.timeout(5), other.slot(BACKEND, slots=1):
        pass


HOLD_A_LEASE = f"""
import asyncio
from apps.cluster.services.admission import PostgresLeases
async def main():
    lease = await PostgresLeases().acquire({BACKEND}, slots=1)
    print("holding", flush=True)
    await asyncio.Event().wait()
    await lease.release()
asyncio.run(main())
"""


@pytest.mark.slow
async def test_a_killed_process_releases_its_slot() -> None:
    process = subprocess.Popen(
        [sys.executable, str(BASE_DIR / "manage.py"), "shell", "-c", HOLD_A_LEASE],
        cwd=BASE_DIR,
        env={
            "DATABASE_URL": database_url_for_tests(),
            "PATH": "/usr/bin:/bin",
            "PYTHONUNBUFFERED": "1",
            "LEXWEB_CLUSTER_HEALTH_CRON": "",
        },
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        await asyncio.to_thread(read_until, process, "holding", timeout=60)
        worker = Admission(leases=PostgresLeases())
        waiting = asyncio.create_task(_enter_and_leave(worker))
        # Its first try and three polls after it: the other process holds the only slot.
        await _until_refused_and_polling(callers=1, tries=4)
        assert not waiting.done()

        process.send_signal(signal.SIGKILL)
        await asyncio.to_thread(process.wait, 20)

        await asyncio.wait_for(waiting, timeout=10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


async def _enter_and_leave(worker: Admission) -> None:
    async with worker.slot(BACKEND, slots=1):
        pass


@pytest.mark.parametrize(("backend_id", "slot"), [(-1, 0), (2**32, 0), (1, 2**16), (1, -1)])
async def test_impossible_lease_keys_are_refused(backend_id: int, slot: int) -> None:
    with pytest.raises(ValueError, match="no lease key"):
        lease_key(backend_id, slot)


async def test_lease_keys_are_distinct_per_backend_and_slot() -> None:
    keys = {lease_key(b, s) for b in (1, 2, 2**32 - 1) for s in (0, 1, 2**16 - 1)}
    assert len(keys) == 9
    assert all(0 < key < 2**63 for key in keys)
