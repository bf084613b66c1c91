"""The PostgreSQL channel layer delivers each message once, to its own channel only: not twice
when two sockets start listening at once, not again when /readyz does its round trip, and not
lost when another process starts listening."""

import asyncio
import os
import subprocess
import sys

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import connection
from django.test import Client

from apps.accounts.models import User
from apps.cluster.events import CLUSTER_GROUP
from lexweb.channel_layer import LISTENER_NAME
from tests.conftest import BASE_DIR, database_url_for_tests, ws_connect

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True, databases="__all__")]

WS = "/ws/cluster/"


async def _listening() -> None:
    """Wait until the layer's listener runs (the consumer starts it just after connecting)."""
    layer = get_channel_layer()
    deadline = asyncio.get_running_loop().time() + 10
    while getattr(layer, "listener_task_is_running", None) is None:
        assert asyncio.get_running_loop().time() < deadline, "the layer never started listening"
        await asyncio.sleep(0.02)
    await asyncio.wait_for(layer.listener_task_is_running.wait(), timeout=10)  # type: ignore[union-attr]


def _ping(n: int) -> dict[str, object]:
    return {"type": "cluster.agent_status", "host_id": n, "host": "h", "status": "ok",
            "message": "", "at": ""}  # fmt: skip


SENTINEL = 999


async def _next_is_sentinel(*sockets: WebsocketCommunicator) -> None:
    """Send a sentinel to the group: a copy of an earlier message would reach a socket before
    it, so the sentinel being each socket's next frame proves nothing came twice (without
    betting on how long a duplicate would take)."""
    await get_channel_layer().group_send(CLUSTER_GROUP, _ping(SENTINEL))
    for socket in sockets:
        assert (await socket.receive_json_from(timeout=5))["host_id"] == SENTINEL


@pytest.mark.slow
async def test_two_sockets_that_start_listening_together_get_each_message_once(
    lawyer: User,
) -> None:
    (first, one), (second, two) = await asyncio.gather(
        ws_connect(WS, cookie_user=lawyer), ws_connect(WS, cookie_user=lawyer)
    )
    assert one == two == (True, None)
    await _listening()

    await get_channel_layer().group_send(CLUSTER_GROUP, _ping(1))

    for socket in (first, second):
        assert (await socket.receive_json_from(timeout=5))["host_id"] == 1
    await _next_is_sentinel(first, second)
    for socket in (first, second):
        assert await socket.receive_nothing(timeout=1)
        await socket.disconnect()


@pytest.mark.slow
async def test_readyz_round_trip_does_not_deliver_old_messages_again(lawyer: User) -> None:
    socket, state = await ws_connect(WS, cookie_user=lawyer)
    assert state == (True, None)
    await _listening()
    await get_channel_layer().group_send(CLUSTER_GROUP, _ping(2))
    assert (await socket.receive_json_from(timeout=5))["host_id"] == 2

    response = await sync_to_async(Client().get)("/readyz")

    assert response.status_code in (200, 503)
    assert response.json()["checks"]["channel_layer"]["ok"] is True
    await _next_is_sentinel(socket)
    assert await socket.receive_nothing(timeout=1)
    await socket.disconnect()


TAKE_NOTHING = """
import asyncio
from channels.layers import get_channel_layer
async def main():
    layer = get_channel_layer()
    mine = await layer.new_channel()
    await layer.send(mine, {"type": "x"})
    await asyncio.wait_for(layer.receive(mine), 10)
    print("listened", flush=True)
asyncio.run(main())
"""


@pytest.mark.slow
async def test_another_process_starting_to_listen_does_not_take_this_ones_messages(
    lawyer: User,
) -> None:
    layer = get_channel_layer()
    channel = await layer.new_channel()
    await layer.send(channel, {"type": "big", "payload": "x" * 20_000})

    env = {**os.environ, "DATABASE_URL": database_url_for_tests(), "LEXWEB_CLUSTER_HEALTH_CRON": ""}
    other = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(BASE_DIR / "manage.py"), "shell", "-c", TAKE_NOTHING],
        cwd=BASE_DIR, env=env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert "listened" in other.stdout, other.stderr

    message = await asyncio.wait_for(layer.receive(channel), 10)
    assert message["payload"] == "x" * 20_000


def _terminate_listeners() -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND application_name = %s",
            [LISTENER_NAME],
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


@pytest.mark.slow
async def test_the_listener_comes_back_after_losing_its_database_connection(
    lawyer: User,
) -> None:
    socket, state = await ws_connect(WS, cookie_user=lawyer)
    assert state == (True, None)
    await _listening()

    assert await sync_to_async(_terminate_listeners)() == 1
    # Sent while the listener is down or reconnecting: caught up on when it is back.
    await get_channel_layer().group_send(CLUSTER_GROUP, _ping(3))

    assert (await socket.receive_json_from(timeout=10))["host_id"] == 3
    await get_channel_layer().group_send(CLUSTER_GROUP, _ping(4))
    assert (await socket.receive_json_from(timeout=10))["host_id"] == 4
    await _next_is_sentinel(socket)
    assert await socket.receive_nothing(timeout=1)
    await socket.disconnect()


def _send_in_transaction(group: str, numbers: list[int], *, commit: bool) -> None:
    from django.db import transaction

    from lexweb.channel_layer import PostgresChannelLayer

    layer = get_channel_layer()
    assert isinstance(layer, PostgresChannelLayer)
    assert layer.same_database(connection.settings_dict)

    class RolledBack(Exception):
        pass

    try:
        with transaction.atomic(), connection.cursor() as cursor:
            layer.group_send_in(cursor, [(group, _ping(n)) for n in numbers])
            if not commit:
                raise RolledBack
    except RolledBack:
        pass


async def test_messages_sent_in_a_transaction_arrive_in_order_once_it_commits_and_never_if_not(
    lawyer: User,
) -> None:
    socket, state = await ws_connect(WS, cookie_user=lawyer)
    assert state == (True, None)
    await _listening()

    await sync_to_async(_send_in_transaction)(CLUSTER_GROUP, [1, 2], commit=False)
    await sync_to_async(_send_in_transaction)(CLUSTER_GROUP, [3, 4, 5], commit=True)

    received = [(await socket.receive_json_from(timeout=5))["host_id"] for _ in range(3)]
    assert received == [3, 4, 5]
    await _next_is_sentinel(socket)
    await socket.disconnect()


def _advisory_locks_held() -> int:
    """Advisory locks granted in this test database (the layer took one per channel)."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        row = cursor.fetchone()
    return int(row[0]) if row else 0


def _channels_kept(layer: object) -> set[str]:
    """Every channel the layer keeps something for: its queue, its seen ids, its lock flag."""
    kept: set[str] = set()
    for name in ("_queues", "_seen", "_channel_advisory_locks"):
        kept |= set(getattr(layer, name))
    return kept


def _expired_removals_pending() -> int:
    """Tasks of this event loop waiting to remove expired messages (leaving a group asks for
    one)."""
    names = {"delete_expired_messages", "_remove_expired"}
    return sum(
        1
        for task in asyncio.all_tasks()
        if not task.done() and getattr(task.get_coro(), "__name__", "") in names
    )


async def test_sockets_and_long_polls_that_ended_leave_no_channel_state_and_no_lock_behind(
    lawyer: User,
) -> None:
    from apps.accounts.streams import Listener

    layer = get_channel_layer()
    kept_before = _channels_kept(layer)
    locks_before = await sync_to_async(_advisory_locks_held)()
    for n in range(6):
        socket, state = await ws_connect(WS, cookie_user=lawyer)
        assert state == (True, None)
        await _listening()
        await layer.group_send(CLUSTER_GROUP, _ping(n))
        assert (await socket.receive_json_from(timeout=5))["host_id"] == n
        await socket.disconnect()
    for n in range(3):  # a long poll's or an event stream's listener
        async with Listener([CLUSTER_GROUP]) as listener:
            await layer.group_send(CLUSTER_GROUP, _ping(10 + n))
            message = await listener.get(timeout=5)
            assert message is not None and message["host_id"] == 10 + n

    deadline = asyncio.get_running_loop().time() + 10
    while _channels_kept(layer) - kept_before:
        assert asyncio.get_running_loop().time() < deadline, _channels_kept(layer) - kept_before
        await asyncio.sleep(0.05)
    # Before, each of the 9 left a session-level lock in a pooled session of the layer, held
    # after it ended (until the session closed), and its queue and seen ids in this process.
    assert await sync_to_async(_advisory_locks_held)() <= locks_before
    # Nor one task each, asleep 10 to 20 minutes before removing expired messages: one waits.
    assert _expired_removals_pending() == 1


async def test_a_channel_made_while_the_listener_listens_receives_without_a_catch_up_read(
    lawyer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long poll's or stream's channel is made while the layer listens: what is sent to it
    after its groups are joined and before its first receive arrives, and no catch-up read
    (one PostgreSQL connection each, most cancelled under load) is made for it."""
    socket, state = await ws_connect(WS, cookie_user=lawyer)
    assert state == (True, None)
    await _listening()
    layer = get_channel_layer()
    reads: list[list[str]] = []
    real_catch_up = layer._catch_up  # type: ignore[union-attr]

    async def counted(channels: list[str]) -> None:
        reads.append(channels)
        await real_catch_up(channels)

    monkeypatch.setattr(layer, "_catch_up", counted)
    channel = await layer.new_channel()
    await layer.group_add(CLUSTER_GROUP, channel)
    await layer.group_send(CLUSTER_GROUP, _ping(41))
    assert (await socket.receive_json_from(timeout=5))["host_id"] == 41  # the notice went out
    message = await asyncio.wait_for(layer.receive(channel), timeout=5)
    assert message["host_id"] == 41
    assert reads == []
    await layer.group_discard(CLUSTER_GROUP, channel)
    await socket.disconnect()


async def test_a_new_layers_channel_gets_what_was_sent_before_it_received() -> None:
    """With no listener on this loop when the channel is made (a new layer), its first receive
    starts one, and the catch-up reads what was sent to it before."""
    from channels.layers import DEFAULT_CHANNEL_LAYER, channel_layers

    layer = channel_layers.make_backend(DEFAULT_CHANNEL_LAYER)
    channel = await layer.new_channel()
    await layer.group_add("catch-up-test", channel)
    await layer.group_send("catch-up-test", _ping(42))
    try:
        message = await asyncio.wait_for(layer.receive(channel), timeout=10)
        assert message["host_id"] == 42
        await layer.group_discard("catch-up-test", channel)
    finally:
        for task in asyncio.all_tasks():
            if getattr(task.get_coro(), "cr_frame", None) is not None and (
                task.get_coro().cr_frame.f_locals.get("self") is layer  # type: ignore[union-attr]
            ):
                task.cancel()


async def test_a_long_poll_that_ends_before_its_reader_starts_leaves_no_channel_state(
    lawyer: User,
) -> None:
    """Its channel was made receiving (the listener listens); its reader is cancelled before
    its first step, so no cancelled receive drops what the layer keeps: the Listener does."""
    from apps.accounts.streams import Listener

    socket, state = await ws_connect(WS, cookie_user=lawyer)
    assert state == (True, None)
    await _listening()
    layer = get_channel_layer()
    kept_before = _channels_kept(layer)
    async with Listener([CLUSTER_GROUP]) as listener:
        assert listener.channel in _channels_kept(layer)
    assert _channels_kept(layer) - kept_before == set()
    await socket.disconnect()
