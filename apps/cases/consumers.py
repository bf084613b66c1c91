"""The live stream of a case: `ws/cases/<case_id>/events/`, optionally `?after=N` or
`?after=latest`.

1. At connect: the user must be a member (4404 otherwise); the socket joins the case's group
   before anything is read, so no event can fall between the stored ones and the live ones.
2. Without `after` it forwards the group's events as they come (each carries its feed number,
   `seq`). With `after=N` (the last number a page applied) it first sends the stored events
   numbered above N, then `{"type": "stream.caught_up", "seq": M, "complete": true}`; with
   `after=latest` only that message, M being the newest number. From then on it sends each
   number once, in order: a live event at or below the last sent is dropped, one that skips
   numbers (two numberings published out of order) first makes it send the missing ones from
   the table. `complete` is false (and nothing stored is sent) when more than a page of events
   was missed or N is past the newest number: the page reads its state again instead.
3. Access is watched (apps/accounts/access.py): a revoked token, a deactivated account, a
   signed-out session or leaving the case closes the socket.
"""

from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async

from apps.accounts.access import CLOSE_ACCESS_ENDED
from apps.accounts.feed_sockets import NumberedFeedConsumer
from apps.accounts.models import User
from apps.cases import selectors
from apps.cases.events import MembershipRevoked, case_group, feed_message, is_member_event

# Close codes (4000-4999 are the application's): the browser script reads them.
CLOSE_NOT_FOUND = 4404  # no such case, not a member, or not signed in: one answer for all
CLOSE_BAD_INPUT = 4400  # the stream is one-way; commands go through the API; a bad `after`
CLOSE_REVOKED = 4403  # membership removed while connected
# Token revoked or expired, account deactivated, signed out: the reason says which.
CLOSE_ACCESS = CLOSE_ACCESS_ENDED  # 4401

LATEST = "latest"
_MAX_SEQ = 2**63 - 1


class CaseEventsConsumer(NumberedFeedConsumer):
    """One-way stream of a case's events (see the module docstring)."""

    group: str | None = None
    user_id: int | None = None
    case_id: int | None = None
    # The last number sent, once the socket was opened with `after` (None: forward as they come).
    last_seq: int | None = None
    feed_page_size = selectors.MAX_EVENTS_PAGE

    async def connect(self) -> None:
        user = self.scope.get("user")
        case_id: int = self.scope["url_route"]["kwargs"]["case_id"]
        resume = _after(self.scope.get("query_string", b""))
        if resume is False:
            await self.close(code=CLOSE_BAD_INPUT)
            return
        if user is None or not await _is_member(user=user, case_id=case_id):
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.user_id, self.case_id = user.pk, case_id
        self.group = case_group(case_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        if not await self.access_begin(case_id=case_id):
            return
        await self.accept()
        if resume is not None:
            await self._resume(user, case_id, None if resume is True else resume)

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
        await self.access_finish()

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Every event type registered for members (apps.cases.events.case_event_types, filled
        by each app) goes to the socket as it is, once and in order when it was opened with
        `after`; the rest (the socket's own messages, the revocation below) by Channels'
        handlers."""
        if is_member_event(message.get("type")):
            await self.feed_forward(message)
            return
        await super().dispatch(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Anything sent by the client, well-formed or not, is refused the same way.
        await self.close(code=CLOSE_BAD_INPUT)

    async def cases_membership_revoked(self, event: MembershipRevoked) -> None:
        if event["user_id"] == self.user_id:
            await self.access_lost("membership_ended")  # closes with CLOSE_REVOKED

    async def _resume(self, user: User, case_id: int, after: int | None) -> None:
        stored, stands_at, complete = await _resume_point(user, case_id, after)
        for message in stored:
            await self.feed_send(message)
        self.last_seq = max(stands_at, self.last_seq or 0)
        if not self.access_closed:
            await self.send_json(
                {"type": "stream.caught_up", "seq": self.last_seq, "complete": complete}
            )

    async def feed_stored_after(self, seq: int) -> list[dict[str, Any]]:
        return [] if self.case_id is None else await _events_after(self.case_id, seq)


def _after(query_string: bytes) -> int | bool | None:
    """`after` from the query string: None when absent, True for "latest", the number, or
    False when it is neither."""
    try:
        values = parse_qs(query_string.decode("ascii")).get("after")
        if values is None:
            return None
        if values[-1] == LATEST:
            return True
        after = int(values[-1])
    except (UnicodeDecodeError, ValueError):
        return False
    return after if 0 <= after <= _MAX_SEQ else False


@database_sync_to_async
def _is_member(*, user: User, case_id: int) -> bool:
    return selectors.case_is_member(user=user, case_id=case_id)


@database_sync_to_async
def _resume_point(
    user: User, case_id: int, after: int | None
) -> tuple[list[dict[str, Any]], int, bool]:
    stored, stands_at, complete = selectors.case_events_resume_for_user(
        user=user, case_id=case_id, after=after
    )
    return [feed_message(event) for event in stored], stands_at, complete


@database_sync_to_async
def _events_after(case_id: int, after: int) -> list[dict[str, Any]]:
    return [
        feed_message(event) for event in selectors.case_events_after(case_id=case_id, after=after)
    ]
