"""Sending to browsers: every app's events go out through here, after the transaction commits."""

import logging
from collections.abc import Mapping

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger(__name__)


def publish_on_commit(group: str, event: Mapping[str, object]) -> None:
    """Send `event` (a TypedDict with a "type") to the channel group once the current
    transaction commits (at once when none is open).

    Browsers never hear about rows that may roll back. A channel layer that is down is logged,
    not raised: the database row is the truth and pages reload it on reconnect.
    """

    def send() -> None:
        layer = get_channel_layer()
        if layer is None:
            logger.error("No channel layer configured; %s not sent.", event["type"])
            return
        async_to_sync(layer.group_send)(group, dict(event))

    transaction.on_commit(send, robust=True)
