"""Publishing from sync code (a GPU agent's loop, a job, a command, a test's thread) outlives the
loss of every database connection (issue 24): a process that publishes without an event loop
of its own sends through Django's connection, not through the channel layer's async pool, which
the first temporary event loop would own (lexweb/live.py)."""

import os
import subprocess
import sys
import textwrap

import psycopg
import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.layers import get_channel_layer
from channels_postgres import db as channels_db
from channels_postgres.db import GROUP_CHANNEL_TABLE
from django.db import InterfaceError, OperationalError, connection, transaction
from psycopg import sql

from lexweb.live import send_now
from tests.conftest import BASE_DIR, database_url_for_tests

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

# Run as its own process, as a GPU agent is: the layer's pool is made on a temporary event loop
# (the group_add, as any async_to_sync call from a plain thread does), every session it opened
# is then ended (a database restart, as far as this process can tell), and three
# publishes must go out within seconds (the pool would wait for a worker of the gone loop and
# raise PoolTimeout after 30 s each).
SCRIPT = textwrap.dedent(
    """
    import os
    import time
    import django
    django.setup()
    import psycopg
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer
    from django.db import close_old_connections, connection
    from lexweb.db import conninfo_from_params
    from lexweb.live import publish_on_commit

    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    async_to_sync(layer.group_add)("sync-publish", channel)
    publish_on_commit("sync-publish", {"type": "test.ping", "n": 0})

    with psycopg.connect(conninfo_from_params(layer.db_params), autocommit=True) as admin:
        keep = [int(pid) for pid in os.environ["KEEP_PIDS"].split(",")]
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND NOT pid = ANY(%s)",
            [keep],
        )
    close_old_connections()
    connection.close()
    started = time.monotonic()
    for n in (1, 2, 3):
        publish_on_commit("sync-publish", {"type": "test.ping", "n": n})
    took = time.monotonic() - started
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT count(*) FROM channels_postgres_message WHERE channel = %s", [channel]
        )
        print("SENT", cursor.fetchone()[0], "IN", round(took, 2))
    """
)


@pytest.mark.slow
def test_a_sync_publisher_keeps_publishing_after_its_database_connections_were_ended() -> None:
    with connection.cursor() as cursor:  # this test's own sessions stay
        cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
        keep = ",".join(str(pid) for (pid,) in cursor.fetchall())
    env = {
        "KEEP_PIDS": keep,
        **os.environ,
        "DATABASE_URL": database_url_for_tests(),
        "DJANGO_SETTINGS_MODULE": "lexweb.settings",
        "LEXWEB_LOG_LEVEL": "ERROR",
    }
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    sent = done.stdout.split("SENT", 1)[1].split()
    assert int(sent[0]) == 4, done.stdout + done.stderr[-3000:]
    assert float(sent[2]) < 10, done.stdout


# --- A publish that meets an ended session is sent again (issue 24 req 3) ----------------------


def _sessions() -> set[int]:
    with psycopg.connect(database_url_for_tests(), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT pid FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
    return {pid for (pid,) in rows}


def _end_sessions(pids: set[int]) -> None:
    """End these sessions, as a PostgreSQL restart does from each client's side (only these:
    the process's other sessions, of earlier tests' pools and listeners, stay)."""
    with psycopg.connect(database_url_for_tests(), autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM unnest(%s::int[]) AS pid", [list(pids)]
        )


def _django_session() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


def _sent_to(channel: str) -> list[int]:
    layer = get_channel_layer()
    with psycopg.connect(database_url_for_tests(), autocommit=True) as reader:
        rows = reader.execute(
            "SELECT message FROM channels_postgres_message WHERE channel = %s ORDER BY id",
            [channel],
        ).fetchall()
    return [layer.deserialize(bytes(message))["n"] for (message,) in rows]


def _member(group: str) -> str:
    """A new channel in `group`, added on a connection of its own (the layer's async pool is
    bound to the first event loop that used it, long gone in a sync test)."""
    layer = get_channel_layer()
    channel = async_to_sync(layer.new_channel)()
    with psycopg.connect(database_url_for_tests(), autocommit=True) as writer:
        writer.execute(
            sql.SQL(
                "INSERT INTO {} (group_key, channel, expire) "
                "VALUES (%s, %s, now() + interval '1 hour')"
            ).format(sql.Identifier(GROUP_CHANNEL_TABLE)),
            [layer._group_key(group), channel],
        )
    return channel


def test_a_publish_whose_connection_was_ended_is_sent_again_on_a_new_one() -> None:
    channel = _member("resend")
    send_now([("resend", {"type": "test.ping", "n": 1})])
    pid = _django_session()
    _end_sessions({pid})

    send_now([("resend", {"type": "test.ping", "n": 2}), ("resend", {"type": "test.ping", "n": 3})])

    assert _sent_to(channel) == [1, 2, 3]
    assert _django_session() != pid


def test_a_publish_inside_a_transaction_whose_connection_was_ended_raises() -> None:
    """Inside a transaction nothing is sent again: the transaction is lost with its session,
    and its caller must hear so."""
    channel = _member("resend-atomic")
    with pytest.raises((OperationalError, InterfaceError)), transaction.atomic():
        _end_sessions({_django_session()})
        send_now([("resend-atomic", {"type": "test.ping", "n": 1})])
    connection.close()
    assert _sent_to(channel) == []


@pytest.mark.asyncio
async def test_the_layers_own_send_after_its_pool_sessions_were_ended_is_sent_again() -> None:
    layer = get_channel_layer()
    # The library's pool is global to the process and bound to the loop that made it: this
    # test makes its own on its own loop, and puts back the one it found.
    found, channels_db.connection_pool = channels_db.connection_pool, None
    try:
        before = await sync_to_async(_sessions)()
        channel = await layer.new_channel()
        await layer.group_add("resend-pool", channel)
        await layer.group_send("resend-pool", {"type": "test.ping", "n": 1})
        pool_sessions = await sync_to_async(_sessions)() - before
        assert pool_sessions
        await sync_to_async(_end_sessions)(pool_sessions)

        await layer.group_send("resend-pool", {"type": "test.ping", "n": 2})

        assert await sync_to_async(_sent_to)(channel) == [1, 2]
    finally:
        made, channels_db.connection_pool = channels_db.connection_pool, found
        if made is not None:
            await made.close()
