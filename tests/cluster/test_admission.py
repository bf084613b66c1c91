"""Admission gates: slots per backend, priority order, cancellation, independence of backends.

These exercise the controller alone (no network, no database); tests/cluster/test_dispatch.py
shows the same limits as seen by a real fake backend over HTTP.
"""

import asyncio
import threading
from collections.abc import Callable

import pytest

from apps.cluster.services.admission import Admission, Priority

pytestmark = pytest.mark.asyncio


async def _until(condition: Callable[[], bool], *, limit: int = 1000) -> None:
    """Let other tasks run until `condition()` holds (a bounded number of loop turns)."""
    for _ in range(limit):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never became true")


async def test_five_calls_with_two_slots_never_have_more_than_two_in_flight() -> None:
    admission = Admission()
    release = asyncio.Event()
    in_flight = 0
    peak = 0

    async def call() -> None:
        nonlocal in_flight, peak
        async with admission.slot(1, slots=2):
            in_flight += 1
            peak = max(peak, in_flight)
            await release.wait()
            in_flight -= 1

    tasks = [asyncio.create_task(call()) for _ in range(5)]
    await _until(lambda: admission.state(1).waiting == 3 and in_flight == 2)
    assert admission.state(1).in_flight == 2
    release.set()
    await asyncio.gather(*tasks)

    assert peak == 2
    assert admission.state(1).in_flight == admission.state(1).waiting == 0


async def test_waiters_are_served_by_priority_then_in_arrival_order() -> None:
    admission = Admission()
    served: list[str] = []
    holder_may_go = asyncio.Event()

    async def holder() -> None:
        async with admission.slot(1, slots=1):
            await holder_may_go.wait()

    async def waiter(name: str, priority: int) -> None:
        async with admission.slot(1, slots=1, priority=priority):
            served.append(name)

    first = asyncio.create_task(holder())
    await _until(lambda: admission.state(1).in_flight == 1)
    queued = [
        ("batch", Priority.BACKGROUND),
        ("person-1", Priority.INTERACTIVE),
        ("stage", Priority.NORMAL),
        ("person-2", Priority.INTERACTIVE),
    ]
    tasks = []
    for count, (name, priority) in enumerate(queued, start=1):
        tasks.append(asyncio.create_task(waiter(name, priority)))
        await _until(lambda count=count: admission.state(1).waiting == count)
    holder_may_go.set()
    await asyncio.gather(first, *tasks)

    assert served == ["person-1", "person-2", "stage", "batch"]


async def test_different_backends_do_not_wait_for_each_other() -> None:
    admission = Admission()
    both_inside = asyncio.Barrier(2)

    async def call(backend_id: int) -> None:
        async with admission.slot(backend_id, slots=1):
            # Each holds its backend's only slot; both get here only if they run at once.
            await asyncio.wait_for(both_inside.wait(), timeout=5)

    await asyncio.gather(call(1), call(2))


async def test_a_cancelled_waiter_leaves_the_queue_and_the_next_one_is_served() -> None:
    admission = Admission()
    holder_may_go = asyncio.Event()
    served: list[str] = []

    async def holder() -> None:
        async with admission.slot(7, slots=1):
            await holder_may_go.wait()

    async def waiter(name: str) -> None:
        async with admission.slot(7, slots=1):
            served.append(name)

    first = asyncio.create_task(holder())
    await _until(lambda: admission.state(7).in_flight == 1)
    doomed = asyncio.create_task(waiter("doomed"))
    await _until(lambda: admission.state(7).waiting == 1)
    patient = asyncio.create_task(waiter("patient"))
    await _until(lambda: admission.state(7).waiting == 2)

    doomed.cancel()
    with pytest.raises(asyncio.CancelledError):
        await doomed
    assert admission.state(7).waiting == 1
    holder_may_go.set()
    await asyncio.gather(first, patient)

    assert served == ["patient"]
    assert admission.state(7).in_flight == 0


async def test_a_cancelled_holder_frees_its_slot() -> None:
    admission = Admission()
    entered = asyncio.Event()

    async def stuck_holder() -> None:
        async with admission.slot(3, slots=1):
            entered.set()
            await asyncio.Event().wait()

    stuck = asyncio.create_task(stuck_holder())
    await entered.wait()
    stuck.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stuck

    async with asyncio.timeout(5), admission.slot(3, slots=1):
        assert admission.state(3).in_flight == 1
    assert admission.state(3).in_flight == 0


async def test_a_waiter_cancelled_just_after_its_grant_hands_the_slot_on() -> None:
    admission = Admission()
    holder_may_go = asyncio.Event()
    served: list[str] = []

    async def holder() -> None:
        async with admission.slot(4, slots=1):
            await holder_may_go.wait()

    async def waiter(name: str) -> None:
        async with admission.slot(4, slots=1):
            served.append(name)

    first = asyncio.create_task(holder())
    await _until(lambda: admission.state(4).in_flight == 1)
    granted_then_cancelled = asyncio.create_task(waiter("granted-then-cancelled"))
    await _until(lambda: admission.state(4).waiting == 1)
    second = asyncio.create_task(waiter("second"))
    await _until(lambda: admission.state(4).waiting == 2)

    # Free the slot, and cancel the waiter it goes to before that waiter can resume.
    holder_may_go.set()
    await first
    assert admission.state(4).waiting == 1  # the grant was made...
    granted_then_cancelled.cancel()  # ...and the grantee is cancelled before it runs
    with pytest.raises(asyncio.CancelledError):
        await granted_then_cancelled
    await asyncio.wait_for(second, timeout=5)

    assert served == ["second"]
    assert admission.state(4).in_flight == 0


async def test_calls_from_another_thread_and_event_loop_share_the_count() -> None:
    admission = Admission()
    thread_holds = threading.Event()
    thread_may_go = threading.Event()

    async def hold_in_thread() -> None:
        async with admission.slot(5, slots=1):
            thread_holds.set()
            await asyncio.to_thread(thread_may_go.wait, 10)

    thread = threading.Thread(target=asyncio.run, args=(hold_in_thread(),))
    thread.start()
    await asyncio.to_thread(thread_holds.wait, 10)

    entered = asyncio.Event()

    async def here() -> None:
        async with admission.slot(5, slots=1):
            entered.set()

    task = asyncio.create_task(here())
    await _until(lambda: admission.state(5).waiting == 1)
    assert not entered.is_set()
    thread_may_go.set()
    await asyncio.wait_for(task, timeout=10)
    await asyncio.to_thread(thread.join, 10)

    assert entered.is_set()
    assert admission.state(5).in_flight == 0


async def test_a_lowered_slot_count_applies_to_the_next_grant() -> None:
    admission = Admission()
    release = asyncio.Event()
    in_flight = 0
    peak_after_change = 0

    async def call(slots: int, record: bool) -> None:
        nonlocal in_flight, peak_after_change
        async with admission.slot(6, slots=slots):
            in_flight += 1
            if record:
                peak_after_change = max(peak_after_change, in_flight)
            await release.wait()
            in_flight -= 1

    early = [asyncio.create_task(call(2, False)) for _ in range(2)]
    await _until(lambda: admission.state(6).in_flight == 2)
    late = [asyncio.create_task(call(1, True)) for _ in range(2)]
    await _until(lambda: admission.state(6).waiting == 2)
    release.set()
    await asyncio.gather(*early, *late)

    # With one slot the late callers ran one at a time, though two slots had been in use.
    assert peak_after_change == 1
