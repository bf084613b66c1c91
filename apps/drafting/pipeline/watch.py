"""Whether each running stage of this process is still its run's: one query for all of them.

A stage's body runs only while its run is running and the stage is still the attempt that
claimed it (a cancel, or a newer attempt after a worker was thought dead, ends it). Each
stage used to ask on its own every WATCH_SECONDS; with 20 stages in a worker that was 100
queries a second on the thread Django's sync code shares with the stages' other calls, and the
stages' token writes queued behind them (bench/bench_run_relay.py). Now the stages of one event
loop register here and one query every WATCH_SECONDS answers for all of them. A stage that is no
longer its run's hears it on its future (result None); a check that fails (the database went
away) sets the error on every waiting stage's future, as its own check did before.
"""

import asyncio
import weakref

from asgiref.sync import sync_to_async

from apps.drafting.models import Run, Stage

WATCH_SECONDS = 0.2
Key = tuple[int, int]  # (stage id, attempt)


class _Watch:
    """The watched stages of one event loop and the task that checks them."""

    def __init__(self) -> None:
        self.stages: dict[Key, asyncio.Future[None]] = {}
        self.task: asyncio.Task[None] | None = None

    def add(self, key: Key) -> "asyncio.Future[None]":
        loop = asyncio.get_running_loop()
        lost: asyncio.Future[None] = loop.create_future()
        self.stages[key] = lost
        if self.task is None or self.task.done():
            self.task = loop.create_task(self._run())
        return lost

    def remove(self, key: Key, lost: "asyncio.Future[None]") -> None:
        if self.stages.get(key) is lost:
            del self.stages[key]
        if not lost.done():
            lost.cancel()

    async def _run(self) -> None:
        # Ends when no stage is watched; the next stage starts it again.
        while self.stages:
            await asyncio.sleep(WATCH_SECONDS)
            keys = list(self.stages)
            if not keys:
                return
            try:
                live = await sync_to_async(stages_still_ours)(keys)
            except Exception as exc:
                for key in keys:
                    self._settle(key, exc)
                continue
            for key in keys:
                if key not in live:
                    self._settle(key, None)

    def _settle(self, key: Key, error: Exception | None) -> None:
        lost = self.stages.pop(key, None)
        if lost is None or lost.done():
            return
        if error is None:
            lost.set_result(None)
        else:
            lost.set_exception(error)


def stages_still_ours(keys: list[Key]) -> set[Key]:
    """Of (stage id, attempt) pairs, those whose stage is running that attempt in a running
    run."""
    ids = sorted({stage_id for stage_id, _attempt in keys})
    rows = Stage.objects.filter(
        pk__in=ids, status=Stage.Status.RUNNING, run__status=Run.Status.RUNNING
    ).values_list("pk", "attempt")
    return {(pk, attempt) for pk, attempt in rows}


_watches: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Watch]" = (
    weakref.WeakKeyDictionary()
)


def watch(key: Key) -> "tuple[asyncio.Future[None], _Watch]":
    """Watch the stage attempt `key` on this event loop: the future is done (None) once it is no
    longer its run's, or fails with the check's error. Pass both to `unwatch` when done."""
    loop = asyncio.get_running_loop()
    found = _watches.get(loop)
    if found is None:
        found = _watches[loop] = _Watch()
    return found.add(key), found


def unwatch(key: Key, lost: "asyncio.Future[None]", found: _Watch) -> None:
    found.remove(key, lost)
