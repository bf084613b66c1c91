"""The fake backend's server: connections, the slot queue, pacing and the counters tests read.

One FakeBackend serves one kind (llama-server or Ollama) on 127.0.0.1, on an ephemeral port
unless told otherwise. Use it in async code as `async with FakeBackend(settings) as fake:`, or
from sync code as `with FakeBackend.in_thread(settings) as fake:` (its own loop in a daemon
thread).
"""

import asyncio
import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from lexweb_dev.fakebackend.config import FakeSettings
from lexweb_dev.fakebackend.http import BadRequest, BodyStream, Request, head, read_request

# The requests a fake keeps (method, path, decoded JSON body), the oldest dropped first: all a
# test sends, by default; the demo's long-running fakes keep far fewer (demo_backends): a
# drafting prompt decodes to tens of kilobytes, and these bodies were what tracemalloc saw grow
# (by about 23 KB a request) when demo-backends grew 12% in ten minutes of load (issue 24 req 6).
MAX_RECORDED = 10_000


@dataclass
class Reply:
    """A whole (non-streamed) response."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    close: bool = False


@dataclass
class Exchange:
    """One request on one connection, as an app handler sees it."""

    request: Request
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    # A handler that ends a connection abnormally (disconnect, cancelled stream) clears it.
    keep_alive: bool = True
    # Bytes of the next request that the disconnect watcher read early.
    leftover: bytes = b""

    def stream(self, status: int, headers: list[tuple[str, str]]) -> BodyStream:
        return BodyStream(self.writer, status, headers)


class App(Protocol):
    async def handle(self, exchange: Exchange) -> Reply | None:
        """A Reply to send, or None when the handler has written a streamed response itself."""
        ...


@dataclass
class Stats:
    tokens_sent: int = 0
    first_token_at: float | None = None  # time.monotonic()
    last_token_at: float | None = None
    streams_finished: int = 0

    def tokens_per_second(self) -> float | None:
        if self.first_token_at is None or self.last_token_at is None:
            return None
        span = self.last_token_at - self.first_token_at
        return self.tokens_sent / span if span > 0 else None


class SlotPool:
    """At most `capacity()` generations at once; the rest wait in arrival order."""

    def __init__(self, capacity: Callable[[], int]) -> None:
        self._capacity = capacity
        self.busy: set[int] = set()
        self.waiters: deque[asyncio.Future[int]] = deque()

    def _free_slot(self) -> int | None:
        if len(self.busy) >= self._capacity():
            return None
        return next(n for n in range(len(self.busy) + 1) if n not in self.busy)

    async def acquire(
        self, on_wait: Callable[[], Awaitable[None]] | None, every: float | None
    ) -> int:
        """A slot id. While queued, `on_wait` runs every `every` seconds (llama-server's pings)."""
        slot = self._free_slot() if not self.waiters else None
        if slot is not None:
            self.busy.add(slot)
            return slot
        waiter: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self.waiters.append(waiter)
        try:
            while True:
                try:
                    return await asyncio.wait_for(asyncio.shield(waiter), every)
                except TimeoutError:
                    if on_wait is not None:
                        await on_wait()
        except BaseException:
            # Disconnected while queued: leave the queue, or hand back a slot just granted.
            if waiter in self.waiters:
                self.waiters.remove(waiter)
            elif waiter.done() and not waiter.cancelled():
                self.release(waiter.result())
            waiter.cancel()
            raise

    def release(self, slot: int) -> None:
        self.busy.discard(slot)
        while self.waiters:
            free = self._free_slot()
            if free is None:
                return
            waiter = self.waiters.popleft()
            if not waiter.done():
                self.busy.add(free)
                waiter.set_result(free)


def pacing_rate(settings: FakeSettings) -> float:
    rate = settings.tokens_per_second
    return math.inf if rate <= 0 else rate


class FakeBackend:
    def __init__(
        self,
        settings: FakeSettings,
        *,
        port: int = 0,
        host: str = "127.0.0.1",
        keep_requests: int = MAX_RECORDED,
    ) -> None:
        self.settings = settings
        self.host = host
        self.port = port
        # The last `keep_requests` requests, oldest first (see MAX_RECORDED).
        self.requests: list[tuple[str, str, object | None]] = []
        self.keep_requests = max(keep_requests, 1)
        self.generating = 0
        self.cancelled = 0
        self.connections_accepted = 0
        self.stats = Stats()
        self.faulted_streams = 0
        self.slots = SlotPool(lambda: max(self.settings.slots, 1))
        self.started_at = 0.0  # loop time
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self._changed = asyncio.Event()
        self._sync_changed = threading.Condition()
        self._app: App | None = None
        self._away: asyncio.Task[None] | None = None

    # -- what tests read -------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def tokens_sent(self) -> int:
        return self.stats.tokens_sent

    @property
    def queued(self) -> int:
        return len(self.slots.waiters)

    def loading(self) -> bool:
        loop_time = asyncio.get_running_loop().time()
        return loop_time < self.started_at + self.settings.loading_seconds

    async def wait_until(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """Return once `predicate()` holds; it is re-checked at every change of the counters.
        Call it on the fake's own loop (async mode)."""
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()

    def wait_until_sync(self, predicate: Callable[[], bool], timeout: float = 5.0) -> None:
        """The same, for a fake started with `in_thread` and a caller on another thread."""
        with self._sync_changed:
            if not self._sync_changed.wait_for(predicate, timeout):
                raise TimeoutError("the fake backend did not reach the expected state")

    def changed(self) -> None:
        self._changed.set()
        with self._sync_changed:
            self._sync_changed.notify_all()

    def count_tokens(self, first: int, stop: int) -> None:
        now = time.monotonic()
        if self.stats.first_token_at is None:
            self.stats.first_token_at = now
        self.stats.last_token_at = now
        self.stats.tokens_sent += stop - first
        self.changed()

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        from lexweb_dev.fakebackend.llama import LlamaApp
        from lexweb_dev.fakebackend.ollama import OllamaApp

        self._changed = asyncio.Event()
        self._app = LlamaApp(self) if self.settings.kind == "llama_cpp" else OllamaApp(self)
        self._server = await asyncio.start_server(self._serve, self.host, self.port)
        self.port = self._server.sockets[0].getsockname()[1]
        self.started_at = asyncio.get_running_loop().time()

    async def stop(self) -> None:
        if self._away is not None:
            self._away.cancel()
            await asyncio.gather(self._away, return_exceptions=True)
            self._away = None
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        await asyncio.gather(*self._connections, return_exceptions=True)
        if self._server is not None:
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> "FakeBackend":
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    @classmethod
    @contextlib.contextmanager
    def in_thread(
        cls, settings: FakeSettings, *, port: int = 0, keep_requests: int = MAX_RECORDED
    ) -> Iterator["FakeBackend"]:
        """A running fake on its own event loop in a daemon thread, for sync code and tests."""
        fake = cls(settings, port=port, keep_requests=keep_requests)
        ready = threading.Event()
        failure: list[BaseException] = []
        loop = asyncio.new_event_loop()
        stopping: asyncio.Event | None = None

        async def main() -> None:
            nonlocal stopping
            stopping = asyncio.Event()
            try:
                await fake.start()
            except BaseException as exc:
                failure.append(exc)
                ready.set()
                return
            ready.set()
            await stopping.wait()
            await fake.stop()

        thread = threading.Thread(target=loop.run_until_complete, args=(main(),), daemon=True)
        thread.start()
        ready.wait()
        if failure:
            thread.join()
            loop.close()
            raise failure[0]
        try:
            yield fake
        finally:
            if stopping is not None:
                loop.call_soon_threadsafe(stopping.set)
            thread.join(10)
            loop.close()

    # -- serving ---------------------------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._connections.add(task)
        self.connections_accepted += 1
        try:
            await self._serve_requests(reader, writer)
        except (ConnectionError, BadRequest, asyncio.IncompleteReadError):
            pass
        except asyncio.CancelledError:
            # stop() cancels open connections; asyncio 3.11 logs a cancelled handler as an error.
            pass
        finally:
            if task is not None:
                self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _serve_requests(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        app = self._app
        if app is None:
            return
        leftover = b""
        while True:
            # llama-server closes idle kept-alive connections after 5 s (Keep-Alive: timeout=5).
            idle = 5.0 if self.settings.kind == "llama_cpp" else None
            try:
                async with asyncio.timeout(idle):
                    request = await read_request(reader, leftover)
            except TimeoutError:
                return
            if request is None:
                return
            self.requests.append((request.method, request.path, request.json_or_none()))
            if len(self.requests) > self.keep_requests:
                del self.requests[: len(self.requests) - self.keep_requests]
            self.changed()
            exchange = Exchange(request, reader, writer)
            reply = await app.handle(exchange)
            leftover = exchange.leftover
            if reply is not None:
                writer.write(head(reply.status, reply.headers) + reply.body)
                await writer.drain()
                exchange.keep_alive = exchange.keep_alive and not reply.close
            if not exchange.keep_alive or request.wants_close:
                return

    async def guarded(self, exchange: Exchange, work: Coroutine[Any, Any, None]) -> None:
        """Run a generation until it ends or its client goes away.

        A client that closes its connection (or whose socket fails a write) cancels the work and
        counts in `cancelled`, as both real servers stop generating for a closed stream.
        """
        watcher = asyncio.create_task(exchange.reader.read(1))
        task = asyncio.create_task(work)
        try:
            await asyncio.wait({watcher, task}, return_when=asyncio.FIRST_COMPLETED)
            if watcher.done() and watcher.exception() is None and watcher.result():
                # Not a disconnect: the client already sent its next request on this
                # connection. Keep the byte for the request reader and let the work finish.
                exchange.leftover = watcher.result()
                await asyncio.wait({task})
        finally:
            gone = watcher.done() and not task.done()
            watcher.cancel()
            task.cancel()
            results = await asyncio.gather(watcher, task, return_exceptions=True)
        failure = results[1]
        if gone or isinstance(failure, ConnectionError):
            exchange.keep_alive = False
            self.cancelled += 1
            self.changed()
        elif isinstance(failure, BaseException) and not isinstance(failure, asyncio.CancelledError):
            raise failure

    @contextlib.asynccontextmanager
    async def slot(
        self, on_wait: Callable[[], Awaitable[None]] | None = None
    ) -> AsyncIterator[int]:
        """Hold one generation slot; `generating` counts holders."""
        every = self.settings.ping_interval if on_wait is not None else None
        self.changed()
        slot_id = await self.slots.acquire(on_wait, every)
        self.generating += 1
        self.changed()
        try:
            yield slot_id
        finally:
            self.generating -= 1
            self.slots.release(slot_id)
            self.changed()

    async def pace(self, count: int, send: Callable[[int, int], Awaitable[None]]) -> None:
        """Send tokens [0, count) on schedule: token n is due at start + n/rate.

        `send(first, stop)` gets every token already due, so a stream that falls behind (a busy
        event loop) catches up in one write instead of drifting. A rate changed mid-stream takes
        effect from the next token.
        """
        loop = asyncio.get_running_loop()
        rate = pacing_rate(self.settings)
        start = loop.time()
        sent = 0
        while sent < count:
            now = loop.time()
            if pacing_rate(self.settings) != rate:
                rate = pacing_rate(self.settings)
                start = now - (sent / rate if math.isfinite(rate) else 0.0)
            due = count if math.isinf(rate) else min(count, int((now - start) * rate) + 1)
            due = max(due, sent + 1)
            await send(sent, due)
            self.count_tokens(sent, due)
            sent = due
            if sent < count and math.isfinite(rate):
                delay = start + sent / rate - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)

    def plan_faults(self, count: int) -> "FaultPlan":
        """`fault_plan` for the next stream of `count` tokens; once `fault_streams` streams have
        been ended by a fault, the rest go through."""
        plan = fault_plan(self.settings, count)
        limit = self.settings.fault_streams
        if plan.fault is None:
            return plan
        if limit is not None and self.faulted_streams >= limit:
            return FaultPlan(count, None, plan.garble_at)
        self.faulted_streams += 1
        away = self.settings.away_after_fault_seconds
        if away > 0 and self._server is not None and self._away is None:
            self._away = asyncio.get_running_loop().create_task(self._go_away(away))
        return plan

    async def _go_away(self, seconds: float) -> None:
        """Refuse connections for `seconds` (no listening socket), then listen again on the same
        port; connections already open go on (a stream on its way to its fault)."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        try:
            await asyncio.sleep(seconds)
            self._server = await asyncio.start_server(self._serve, self.host, self.port)
            self.changed()
        finally:
            self._away = None

    async def hang(self, ping: Callable[[], Awaitable[None]] | None) -> None:
        """Produce nothing more, keep the connection open (pinging if asked) until cancelled."""
        interval = self.settings.ping_interval
        while True:
            if ping is not None and interval:
                await asyncio.sleep(interval)
                await ping()
            else:
                await asyncio.Event().wait()


@dataclass
class FaultPlan:
    """Where an injected fault cuts a stream of `count` tokens."""

    tokens: int
    fault: str | None = None  # "fail", "disconnect", "hang"
    garble_at: int | None = field(default=None)


def fault_plan(settings: FakeSettings, count: int) -> FaultPlan:
    cuts = [
        (settings.fail_after_tokens, "fail"),
        (settings.disconnect_after_tokens, "disconnect"),
        (settings.hang_after_tokens, "hang"),
    ]
    active = [(after, name) for after, name in cuts if after is not None and after <= count]
    # After the first token when there is one to follow it.
    garble_at = min(1, count - 1) if settings.invalid_json and count >= 1 else None
    if not active:
        return FaultPlan(count, None, garble_at)
    after, name = min(active, key=lambda cut: cut[0])
    return FaultPlan(max(after, 0), name, garble_at)
