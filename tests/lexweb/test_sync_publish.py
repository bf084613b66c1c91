"""Publishing from sync code (a GPU agent's loop, a job, a command, a test's thread) outlives the
loss of every database connection (issue 24): a process that publishes without an event loop
of its own sends through Django's connection, not through the channel layer's async pool, which
the first temporary event loop would own (lexweb/live.py)."""

import os
import subprocess
import sys
import textwrap

import pytest
from django.db import connection

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
