from datetime import datetime
from typing import Literal

from ninja import ModelSchema, Schema
from pydantic import Field

from apps.accounts.schemas import UserOut
from apps.cases.models import Case, Membership
from lexweb.api_schemas import StrictIn


class CaseOut(ModelSchema):
    class Meta:
        model = Case
        fields = ["id", "title", "number", "court", "client", "status", "created_at"]


class CaseIn(StrictIn):
    title: str = Field(min_length=1, max_length=300)
    number: str = Field(min_length=1, max_length=100)
    client: str = Field(min_length=1, max_length=200)
    court: str = Field("", max_length=200)


class CasePatch(StrictIn):
    title: str | None = Field(None, min_length=1, max_length=300)
    number: str | None = Field(None, min_length=1, max_length=100)
    client: str | None = Field(None, min_length=1, max_length=200)
    court: str | None = Field(None, max_length=200)
    status: Literal["open", "stayed", "closed"] | None = None

    def changes(self) -> dict[str, str]:
        """case_update's `changes`: the fields sent, those sent as null left out."""
        changed: dict[str, str] = self.dict(exclude_unset=True, exclude_none=True)
        return changed


class MemberOut(ModelSchema):
    user: UserOut

    class Meta:
        model = Membership
        fields = ["role", "added_at"]


class MemberIn(StrictIn):
    email: str = Field(min_length=3, max_length=254)
    role: Literal["lawyer", "staff"] = "staff"


class MemberPatch(StrictIn):
    role: Literal["lawyer", "staff"]


class JobQueuedOut(Schema):
    job_id: int


class CaseEventOut(Schema):
    """One event of the case's feed: `kind` is its type (`documents.progress`,
    `documents.production_progress`, `documents.export_progress`, `documents.rendition_progress`,
    `verification.progress`, `cases.notice`), `payload` what the case's websocket sends for it."""

    seq: int
    kind: str
    payload: dict[str, object]
    created_at: datetime


class CaseEventPageOut(Schema):
    """A page of the case's events, as every list of the API: `count` is how many events are
    stored after `after` now; `next` the next page while more are already stored, null when this
    page holds the last of them (ask again with `after` = the last `seq`, and `wait` to
    long-poll)."""

    items: list[CaseEventOut]
    count: int
    next: str | None
