"""The review list's API schemas (apps/documents/review_api.py and the MCP tools)."""

from datetime import datetime

from ninja import Field, Schema

from apps.documents import review_services
from apps.documents.list_forms import MAX_BULK_DOCUMENTS
from apps.documents.models import Document, Tag
from lexweb.api_schemas import StrictIn

# Ids are checked again by the services; the schema's bounds refuse a hostile body before that.
_Ids = list[int]


class TagOut(Schema):
    id: int
    name: str

    @staticmethod
    def from_tag(tag: Tag) -> "TagOut":
        return TagOut(id=tag.pk, name=tag.name)


class TagIn(StrictIn):
    document_ids: _Ids = Field(min_length=1, max_length=MAX_BULK_DOCUMENTS)
    name: str = Field(max_length=review_services.MAX_TAG_CHARS * 4)


class TaggedOut(Schema):
    tag: TagOut
    added: int  # documents that did not carry the tag before


class UntagIn(StrictIn):
    document_ids: _Ids = Field(min_length=1, max_length=MAX_BULK_DOCUMENTS)
    tag_id: int = Field(ge=1, le=2**63 - 1)


class UntaggedOut(Schema):
    removed: int


class WithdrawIn(StrictIn):
    document_ids: _Ids = Field(min_length=1, max_length=MAX_BULK_DOCUMENTS)
    reason: str = Field(max_length=review_services.MAX_WITHDRAW_REASON * 4)


class WithdrawnOut(Schema):
    id: int
    filename: str
    withdrawn: bool
    withdrawn_at: datetime | None
    withdrawn_reason: str

    @staticmethod
    def from_document(document: Document) -> "WithdrawnOut":
        return WithdrawnOut(
            id=document.pk,
            filename=document.filename,
            withdrawn=document.withdrawn_at is not None,
            withdrawn_at=document.withdrawn_at,
            withdrawn_reason=document.withdrawn_reason,
        )
