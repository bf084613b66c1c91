"""A real SMTP server for the tests: aiosmtpd on 127.0.0.1, on a port of its own, in the test
process; what it received is kept in an `Inbox` and read back from there (nothing is mocked).

The session's launched product sends its mail here (tests/harness/product.py); tests that point
Django's own mail settings at it use `smtp_server` directly."""

import contextlib
import email
from collections.abc import Iterator
from email.message import EmailMessage
from email.policy import default as default_policy
from typing import Any, TypeVar

from aiosmtpd.controller import Controller

from tests.harness.ports import free_port_below_ephemeral


class Inbox:
    """What the SMTP server received (aiosmtpd calls handle_DATA, on its own thread, for each
    message)."""

    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.recipients: list[list[str]] = []

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        message = email.message_from_bytes(envelope.content, policy=default_policy)
        assert isinstance(message, EmailMessage)
        self.messages.append(message)
        self.recipients.append(list(envelope.rcpt_tos))
        return "250 Message accepted for delivery"

    def body(self, n: int = -1) -> str:
        """The plain-text body of message `n` (the latest by default)."""
        part = self.messages[n].get_body(preferencelist=("plain",))
        assert part is not None
        return str(part.get_content())

    def to(self, address: str) -> list[EmailMessage]:
        """The messages sent to `address`, oldest first."""
        return [
            message
            for message, rcpts in zip(self.messages, self.recipients, strict=True)
            if address in rcpts
        ]


InboxT = TypeVar("InboxT", bound=Inbox)


@contextlib.contextmanager
def smtp_server(received: InboxT) -> Iterator[tuple[InboxT, int]]:
    """An SMTP server (plain SMTP, no authentication) on 127.0.0.1 that keeps what it receives
    in `received`: the inbox and the server's port."""
    port = free_port_below_ephemeral()
    controller = Controller(received, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield received, port
    finally:
        controller.stop()
