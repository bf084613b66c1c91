"""Token events of the stages running in one worker process
(apps/drafting/services/token_events.py): a batch is stored even while Django's shared sync thread
is busy (a stage's slow call must not hold every other stage's tokens back: with 20 stages
streaming in one worker they queued there for seconds, bench/bench_run_relay.py), batches handed in
together are numbered per run in the order given, published to each run's group, and a missing run
fails only its own batch."""

import asyncio
import socket
import threading
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import cast

import psycopg
import pytest
from asgiref.sync import sync_to_async

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Run, RunEvent
from apps.drafting.pipeline.execute import TokenBatcher, Work
from apps.drafting.services import events as event_writer
from apps.drafting.services import token_events
from apps.evidence.models import Packet
from lexweb.errors import NotFound
from tests.conftest import ws_connect

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True, databases="__all__")]


@pytest.fixture(autouse=True)
def _short_linger(monkeypatch: pytest.MonkeyPatch) -> None:
    # The writer's thread (and its connection) ends soon after the test's last batch.
    monkeypatch.setattr(token_events, "LINGER_SECONDS", 0.05)


def _runs(case: Case, user: User, count: int) -> list[Run]:
    packet = Packet.objects.create(
        case=case, title="Tokens", status=Packet.Status.FROZEN, content_hash="0" * 64,
        created_by=user,
    )  # fmt: skip
    return [
        Run.objects.create(
            case=case, kind=Run.Kind.SUMMARY, packet=packet, instructions="T", created_by=user
        )
        for _ in range(count)
    ]


def _tokens(run: Run) -> list[tuple[int, str]]:
    events = RunEvent.objects.filter(run=run, kind="stage.tokens").order_by("seq")
    return [(event.seq, str(event.payload["text"])) for event in events]


async def test_a_batch_is_stored_while_the_shared_sync_thread_is_busy(
    lawyer: User, case: Case
) -> None:
    (run,) = await sync_to_async(_runs)(case, lawyer, 1)
    work = cast(
        Work,
        SimpleNamespace(
            run_id=run.pk,
            stage_id=1,
            attempt=1,
            name="summarizer",
            case_id=case.pk,
            packet_id=run.packet_id,
        ),
    )
    batcher = TokenBatcher(work)
    release = threading.Event()
    # Another stage's slow sync call holds the thread that sync_to_async shares.
    busy = asyncio.ensure_future(sync_to_async(release.wait)(20))
    await asyncio.sleep(0.1)
    batcher.add(" one")
    batcher.add(" two")
    try:
        stored_while_busy = True
        try:
            await asyncio.wait_for(batcher.flush(), 5)
        except TimeoutError:
            stored_while_busy = False
    finally:
        release.set()
        await busy

    assert stored_while_busy
    assert await sync_to_async(_tokens)(run) == [(1, " one two")]


async def test_batches_handed_in_together_are_numbered_per_run_in_order_and_published(
    lawyer: User, case: Case
) -> None:
    first, second = await sync_to_async(_runs)(case, lawyer, 2)
    await sync_to_async(event_writer.run_event_append)(run=first.pk, kind="run.status", payload={})
    socket, state = await ws_connect(
        f"/ws/cases/{case.pk}/runs/{first.pk}/events/?after=1", cookie_user=lawyer
    )
    assert state == (True, None)

    stored = await asyncio.gather(
        token_events.token_event_append(run_id=first.pk, payload={"text": "a1"}),
        token_events.token_event_append(run_id=second.pk, payload={"text": "b1"}),
        token_events.token_event_append(run_id=first.pk, payload={"text": "a2"}),
    )

    assert [(event.run_id, event.seq) for event in stored] == [
        (first.pk, 2), (second.pk, 1), (first.pk, 3),
    ]  # fmt: skip
    assert await sync_to_async(_tokens)(first) == [(2, "a1"), (3, "a2")]
    assert await sync_to_async(_tokens)(second) == [(1, "b1")]
    received = [await socket.receive_json_from(timeout=10) for _ in range(2)]
    assert [(m["seq"], m["payload"]["text"]) for m in received] == [(2, "a1"), (3, "a2")]
    assert await socket.receive_nothing(timeout=0.3)
    await socket.disconnect()


async def test_a_missing_run_fails_only_its_own_batch(lawyer: User, case: Case) -> None:
    (run,) = await sync_to_async(_runs)(case, lawyer, 1)

    results = await asyncio.gather(
        token_events.token_event_append(run_id=run.pk, payload={"text": "kept"}),
        token_events.token_event_append(run_id=987654321, payload={"text": "lost"}),
        return_exceptions=True,
    )

    assert isinstance(results[0], RunEvent) and results[0].seq == 1
    assert isinstance(results[1], NotFound)
    assert await sync_to_async(_tokens)(run) == [(1, "kept")]


def _writer_sessions() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            [token_events.WRITER_NAME],
        )
        return int(cursor.fetchone()[0])


async def _until(predicate: Callable[[], Awaitable[bool]], seconds: float = 10) -> bool:
    deadline = asyncio.get_running_loop().time() + seconds
    while asyncio.get_running_loop().time() < deadline:
        if await predicate():
            return True
        await asyncio.sleep(0.02)
    return False


async def test_the_writer_connects_when_a_stage_starts_and_lets_go_after_the_last_stops(
    lawyer: User, case: Case
) -> None:
    (run,) = await sync_to_async(_runs)(case, lawyer, 1)
    batcher = TokenBatcher(
        cast(
            Work,
            SimpleNamespace(
                run_id=run.pk,
                stage_id=1,
                attempt=1,
                name="summarizer",
                case_id=case.pk,
                packet_id=run.packet_id,
            ),
        )
    )
    sessions = sync_to_async(_writer_sessions)

    batcher.start()  # before any token: the backend is still reading the prompt
    assert await _until(lambda: _equals(sessions, 1))
    batcher.add(" first")
    await batcher.stop()

    assert await sync_to_async(_tokens)(run) == [(1, " first")]
    # LINGER_SECONDS (0.05 here) after the last stage stopped, the connection is closed.
    assert await _until(lambda: _equals(sessions, 0))


async def _equals(read: Callable[[], Awaitable[int]], expected: int) -> bool:
    return await read() == expected


async def test_a_connection_lost_between_writes_is_replaced_and_the_batch_stored_once(
    lawyer: User, case: Case
) -> None:
    (run,) = await sync_to_async(_runs)(case, lawyer, 1)
    token_events.writer_hold()
    try:
        first = await token_events.token_event_append(run_id=run.pk, payload={"text": "a"})
        # The server ends the writer's idle session (a restart, an idle timeout, an admin).
        assert await sync_to_async(_writer_terminate)() == 1
        again = await token_events.token_event_append(run_id=run.pk, payload={"text": "b"})
    finally:
        token_events.writer_release()

    assert (first.seq, again.seq) == (1, 2)
    assert first.pk is not None and again.pk is not None and again.pk != first.pk
    assert await sync_to_async(_tokens)(run) == [(1, "a"), (2, "b")]
    stored = await sync_to_async(RunEvent.objects.get)(pk=again.pk)
    assert stored.payload == {"text": "b"} and stored.created_at == again.created_at


async def test_a_database_that_cannot_be_reached_fails_the_batch_with_its_error(
    lawyer: User, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    (run,) = await sync_to_async(_runs)(case, lawyer, 1)
    port = _closed_port()
    monkeypatch.setattr(
        token_events, "conninfo", lambda **_: f"host=127.0.0.1 port={port} connect_timeout=2"
    )

    with pytest.raises(psycopg.OperationalError):
        await token_events.token_event_append(run_id=run.pk, payload={"text": "lost"})

    assert await sync_to_async(_tokens)(run) == []


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _writer_terminate() -> int:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            # This test database's writer only: another xdist worker's tests, on the same
            # server, may have theirs open at this moment.
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            [token_events.WRITER_NAME],
        )
        return len(cursor.fetchall())


async def test_a_batch_that_comes_while_the_idle_connection_closes_is_stored(
    lawyer: User, case: Case, monkeypatch: pytest.MonkeyPatch
) -> None:
    (run,) = await sync_to_async(_runs)(case, lawyer, 1)
    await token_events.token_event_append(run_id=run.pk, payload={"text": "a"})
    writer = token_events._writers[asyncio.get_running_loop()]
    idle = writer.connection
    assert idle is not None
    closing, release = asyncio.Event(), asyncio.Event()
    close = idle.close

    async def slow_close() -> None:
        closing.set()
        await release.wait()
        await close()

    monkeypatch.setattr(idle, "close", slow_close)
    # LINGER_SECONDS (0.05 here) pass: the writer lets the idle connection go, slowly.
    await asyncio.wait_for(closing.wait(), 5)
    try:
        stored = await asyncio.wait_for(
            token_events.token_event_append(run_id=run.pk, payload={"text": "b"}), 5
        )
    finally:
        release.set()

    assert stored.seq == 2
    assert writer.connection is not idle
    assert await sync_to_async(_tokens)(run) == [(1, "a"), (2, "b")]


async def test_a_nul_or_lone_surrogate_from_a_model_fails_no_ones_batch(
    lawyer: User, case: Case
) -> None:
    # Every stage of a worker is in one write: one model's odd token must not fail the others.
    hostile, other = await sync_to_async(_runs)(case, lawyer, 2)
    batchers = [
        TokenBatcher(
            cast(
                Work,
                SimpleNamespace(
                    run_id=run.pk,
                    stage_id=1,
                    attempt=1,
                    name="summarizer",
                    case_id=case.pk,
                    packet_id=run.packet_id,
                ),
            )
        )
        for run in (hostile, other)
    ]
    batchers[0].add("a\x00b\ud800c\n")
    batchers[1].add(" fine")

    await asyncio.gather(*(batcher.flush() for batcher in batchers))

    assert await sync_to_async(_tokens)(hostile) == [(1, "abc\n")]
    assert await sync_to_async(_tokens)(other) == [(1, " fine")]
