from typing import Any

from channels.db import database_sync_to_async

from apps.accounts.access import CLOSE_ACCESS_ENDED, AccessWatchedConsumer
from apps.accounts.models import User
from apps.cases import selectors
from apps.cases.events import MembershipRevoked, case_group, is_member_event

# Close codes (4000-4999 are the application's): the browser script reads them.
CLOSE_NOT_FOUND = 4404  # no such case, not a member, or not signed in: one answer for all
CLOSE_BAD_INPUT = 4400  # the stream is one-way; commands go through the API
CLOSE_REVOKED = 4403  # membership removed while connected
# Token revoked or expired, account deactivated, signed out: the reason says which.
CLOSE_ACCESS = CLOSE_ACCESS_ENDED  # 4401


class CaseEventsConsumer(AccessWatchedConsumer):
    """One-way stream of a case's events. Membership is checked at connect; the socket closes
    when its token, session, account or membership ends (apps/accounts/access.py)."""

    group: str | None = None
    user_id: int | None = None

    async def connect(self) -> None:
        user = self.scope.get("user")
        case_id: int = self.scope["url_route"]["kwargs"]["case_id"]
        if user is None or not await _is_member(user=user, case_id=case_id):
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.user_id = user.pk
        self.group = case_group(case_id)
        await self.channel_layer.group_add(self.group, self.channel_name)
        if not await self.access_begin(case_id=case_id):
            return
        await self.accept()

    async def disconnect(self, code: int) -> None:
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.group = None
        await self.access_finish()

    async def dispatch(self, message: dict[str, Any]) -> None:
        """Every event type registered for members (apps.cases.events.case_event_types, filled
        by each app) goes to the socket as it is; the rest (the socket's own messages, the
        revocation below) by Channels' handlers."""
        if is_member_event(message.get("type")):
            await self.send_json(message)
            return
        await super().dispatch(message)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Anything sent by the client, well-formed or not, is refused the same way.
        await self.close(code=CLOSE_BAD_INPUT)

    async def cases_membership_revoked(self, event: MembershipRevoked) -> None:
        if event["user_id"] == self.user_id:
            await self.access_lost("membership_ended")  # closes with CLOSE_REVOKED


@database_sync_to_async
def _is_member(*, user: User, case_id: int) -> bool:
    return selectors.case_is_member(user=user, case_id=case_id)
