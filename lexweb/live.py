"""Sending to browsers: every app's events go out through here, after the transaction commits.

From sync code (services, jobs, commands, commit hooks) a message goes out with `send_now`:
on the PostgreSQL channel layer of this database (the default), as one INSERT through Django's
own connection (lexweb/channel_layer.py `group_send_in`; the table's trigger notifies every
listening process). Going through the layer's async pool instead (`async_to_sync(group_send)`)
runs each call on a new event loop when the thread has none (a GPU agent, a test's thread, a
command): the pool, global to the process, is then bound to the first of those loops, gone once
that call returned, and when it must open a connection again (after a database restart) it
waits for a worker that no longer runs (PoolTimeout on every publish, issue 24). Other layers
(Redis, in-memory) are sent to with `async_to_sync`.

A send that meets a connection the server ended (PostgreSQL restarted) is sent again once on a
new connection, outside a transaction (inside one, the transaction is lost anyway): the first
publish after a restart is not lost (issue 24 req 3). The layer's own `group_send` does the
same with its pool.
"""

import logging
from collections.abc import Mapping, Sequence

from asgiref.sync import async_to_sync
from channels.layers import BaseChannelLayer, get_channel_layer
from django.db import InterfaceError, OperationalError, connections, transaction

from lexweb.channel_layer import PostgresChannelLayer

logger = logging.getLogger(__name__)


def send_now(messages: Sequence[tuple[str, Mapping[str, object]]]) -> None:
    """Send each (group, message), in order, now. Raises what the layer raises."""
    if not messages:
        return
    layer = get_channel_layer()
    if layer is None:
        logger.error("No channel layer configured; %d message(s) not sent.", len(messages))
        return
    connection = connections["default"]
    if isinstance(layer, PostgresChannelLayer) and layer.same_database(connection.settings_dict):
        try:
            with connection.cursor() as cursor:
                layer.group_send_in(cursor, messages)
        except (OperationalError, InterfaceError) as exc:
            if connection.in_atomic_block:
                raise  # the transaction is lost with its connection; its caller says so
            # The server ended this connection (PostgreSQL restarted): send again on a new one.
            logger.warning("Sending %d message(s) failed (%s); sending again.", len(messages), exc)
            connection.close()
            with connection.cursor() as cursor:
                layer.group_send_in(cursor, messages)
        return
    async_to_sync(_send_all)(layer, messages)


async def _send_all(
    layer: BaseChannelLayer, messages: Sequence[tuple[str, Mapping[str, object]]]
) -> None:
    for group, message in messages:
        await layer.group_send(group, dict(message))


def publish_on_commit(group: str, event: Mapping[str, object]) -> None:
    """Send `event` (a TypedDict with a "type") to the channel group once the current
    transaction commits (at once when none is open).

    Browsers never hear about rows that may roll back. A channel layer that is down is logged,
    not raised: the database row is the truth and pages reload it on reconnect.
    """
    transaction.on_commit(lambda: send_now([(group, event)]), robust=True)
