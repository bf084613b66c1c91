"""A websocket that follows one numbered feed (a run's events, a case's events): each number is
sent once and in order. A live event past the next number first has the stored events between
sent (read a page at a time by the feed's own `feed_stored_after`), so a publish that was lost
or came late leaves no hole; one already sent is dropped."""

from typing import Any

from apps.accounts.access import AccessWatchedConsumer


class NumberedFeedConsumer(AccessWatchedConsumer):
    """`last_seq`: the number of the last event sent (None: this socket does not follow the
    numbers, and passes every event on as it comes)."""

    last_seq: int | None = None
    # The most events `feed_stored_after` answers at once: fewer means there are no more.
    feed_page_size = 1

    async def feed_stored_after(self, seq: int) -> list[dict[str, Any]]:
        """The stored events numbered after `seq`, in order, at most `feed_page_size`."""
        raise NotImplementedError

    async def feed_forward(self, message: dict[str, Any]) -> None:
        """Send a live event in its place in the feed."""
        seq = message.get("seq")
        if self.last_seq is None or not isinstance(seq, int):
            await self.send_json(message)
            return
        if seq <= self.last_seq:
            return
        if seq > self.last_seq + 1:
            await self.feed_fill(upto=seq)
            if seq <= self.last_seq:
                return
        await self.feed_send(message)

    async def feed_fill(self, *, upto: int | None = None) -> None:
        """Send the stored events after the last one sent (below `upto` when given)."""
        while self.last_seq is not None:
            stored = await self.feed_stored_after(self.last_seq)
            for message in stored:
                if upto is not None and message["seq"] >= upto:
                    return
                await self.feed_send(dict(message))
            if len(stored) < self.feed_page_size:
                return

    async def feed_send(self, message: dict[str, Any]) -> None:
        if self.access_closed:
            return
        self.last_seq = message["seq"]
        await self.send_json(message)
