"""The live stream of one run: `ws/cases/<case_id>/runs/<run_id>/events/?after=N`.

1. At connect: the user must be able to read the run's case (NotFound otherwise: 4404, the same
   for a missing run); the socket joins `run.<id>` and the case's group (for
   `cases.membership_revoked`) before anything is read, so no event can fall between the
   stored ones and the live ones.
2. It sends every stored event numbered above `after`, then live events as they come. Each
   carries its number; one at or below the last sent is a duplicate and is dropped, one that
   skips numbers (events from two transactions published out of order) first makes the
   consumer send the missing ones from the table. So a client sees every number once, in order.
3. Access is watched like the case stream's (apps/accounts/access.py): a revoked token, a
   deactivated account or leaving the case closes the socket.
"""

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async

from apps.accounts.feed_sockets import NumberedFeedConsumer
from apps.accounts.models import User
from apps.cases.events import MembershipRevoked, case_group
from apps.drafting import selectors
from apps.drafting.events import RunEventMessage, run_group
from apps.drafting.services import events as event_writer
from lexweb.errors import NotFound

CLOSE_NOT_FOUND = 4404
CLOSE_BAD_INPUT = 4400
_MAX_SEQ = 2**63 - 1


class RunEventsConsumer(NumberedFeedConsumer):
    """One-way stream of a run's numbered events (see the module docstring)."""

    groups_joined: list[str]
    run_id: int | None = None
    user_id: int | None = None
    last_seq: int | None = 0
    feed_page_size = selectors.MAX_EVENTS_PAGE

    async def connect(self) -> None:
        self.groups_joined = []
        user = self.scope.get("user")
        kwargs = self.scope["url_route"]["kwargs"]
        case_id, run_id = kwargs["case_id"], kwargs["run_id"]
        after = _after(self.scope.get("query_string", b""))
        if (
            user is None
            or not user.is_authenticated
            or after is None
            or not await _may_read(user, case_id, run_id)
        ):
            await self.close(code=CLOSE_NOT_FOUND if after is not None else CLOSE_BAD_INPUT)
            return
        self.run_id, self.user_id, self.last_seq = run_id, user.pk, after
        for group in (run_group(run_id), case_group(case_id)):
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups_joined.append(group)
        if not await self.access_begin(case_id=case_id):
            return
        await self.accept()
        await self.feed_fill()

    async def disconnect(self, code: int) -> None:
        for group in getattr(self, "groups_joined", []):
            await self.channel_layer.group_discard(group, self.channel_name)
        self.groups_joined = []
        await self.access_finish()

    async def dispatch(self, message: dict[str, Any]) -> None:
        # The case group carries every event of the case; this socket handles only its own.
        kind = message.get("type", "")
        if kind.startswith("websocket.") or kind in _HANDLED:
            await super().dispatch(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        await self.close(code=CLOSE_BAD_INPUT)

    async def drafting_run_event(self, event: RunEventMessage) -> None:
        if self.run_id is None or event["run_id"] != self.run_id:
            return
        await self.feed_forward(dict(event))

    async def cases_membership_revoked(self, event: MembershipRevoked) -> None:
        if event["user_id"] == self.user_id:
            await self.access_lost("membership_ended")

    async def feed_stored_after(self, seq: int) -> list[dict[str, Any]]:
        if self.run_id is None:
            return []
        return [dict(message) for message in await _events_after(self.run_id, seq)]


_HANDLED = {"drafting.run_event", "cases.membership_revoked", "accounts.access_ended"}


def _after(query_string: bytes) -> int | None:
    """`after` from the query string: 0 when absent, None when it is not a number in range."""
    try:
        values = parse_qs(query_string.decode("ascii"), strict_parsing=False).get("after", ["0"])
        after = int(values[-1])
    except (UnicodeDecodeError, ValueError):
        return None
    return after if 0 <= after <= _MAX_SEQ else None


@database_sync_to_async
def _may_read(user: User, case_id: int, run_id: int) -> bool:
    try:
        selectors.run_stream_open_for_user(user=user, case_id=case_id, run_id=run_id)
    except NotFound:
        return False
    return True


@database_sync_to_async
def _events_after(run_id: int, after: int) -> list[RunEventMessage]:
    return [
        event_writer.event_message(event)
        for event in selectors.run_events_after(run_id=run_id, after=after)
    ]
