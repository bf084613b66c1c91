"""The review list's writes for agents: per-case tags and withdrawing a wrong upload (the same
services the browser's bulk actions call, so the same rules, limits and audit)."""

from ninja import Router, Status

from apps.accounts.types import AuthedRequest
from apps.cases import selectors as case_selectors
from apps.documents import review_services, selectors
from apps.documents.review_schemas import (
    TaggedOut,
    TagIn,
    TagOut,
    UntaggedOut,
    UntagIn,
    WithdrawIn,
    WithdrawnOut,
)
from lexweb.api_schemas import ErrorOut, ObjectId

router = Router(tags=["documents"])

_ERRORS = {400: ErrorOut, 404: ErrorOut, 409: ErrorOut}


@router.get("/cases/{case_id}/tags", response={200: list[TagOut], 404: ErrorOut})
def list_tags(request: AuthedRequest, case_id: ObjectId) -> list[TagOut]:
    """The case's tags, by name."""
    tags = selectors.tag_list_for_user(user=request.auth, case_id=case_id)
    return [TagOut.from_tag(tag) for tag in tags]


@router.post("/cases/{case_id}/documents/tag", response={200: TaggedOut, **_ERRORS})
def tag_documents(request: AuthedRequest, case_id: ObjectId, payload: TagIn) -> TaggedOut:
    """Put the tag `name` on the documents (the tag is made in this case if it is new; names
    match without regard to case). All the documents must be in this case."""
    case = case_selectors.case_get_for_user(user=request.auth, case_id=case_id)
    tag, added = review_services.documents_tag(
        actor=request.auth, case=case, document_ids=payload.document_ids, name=payload.name
    )
    return TaggedOut(tag=TagOut.from_tag(tag), added=added)


@router.post("/cases/{case_id}/documents/untag", response={200: UntaggedOut, **_ERRORS})
def untag_documents(request: AuthedRequest, case_id: ObjectId, payload: UntagIn) -> UntaggedOut:
    """Take the case's tag `tag_id` off the documents."""
    case = case_selectors.case_get_for_user(user=request.auth, case_id=case_id)
    removed = review_services.documents_untag(
        actor=request.auth, case=case, document_ids=payload.document_ids, tag_id=payload.tag_id
    )
    return UntaggedOut(removed=removed)


@router.post("/cases/{case_id}/documents/withdraw", response={200: list[WithdrawnOut], **_ERRORS})
def withdraw_documents(
    request: AuthedRequest, case_id: ObjectId, payload: WithdrawIn
) -> list[WithdrawnOut]:
    """Withdraw wrong uploads, all or none, for a written reason: out of lists, search and new
    packets and productions; the originals are kept. 409 for a document already withdrawn, in
    a packet or in a production."""
    case = case_selectors.case_get_for_user(user=request.auth, case_id=case_id)
    documents = review_services.documents_withdraw(
        actor=request.auth, case=case, document_ids=payload.document_ids, reason=payload.reason
    )
    return [WithdrawnOut.from_document(document) for document in documents]


@router.post(
    "/cases/{case_id}/documents/{document_id}/restore", response={200: WithdrawnOut, **_ERRORS}
)
def restore_document(
    request: AuthedRequest, case_id: ObjectId, document_id: ObjectId
) -> Status[WithdrawnOut]:
    """Bring a withdrawn document back. 409 if it is not withdrawn."""
    case = case_selectors.case_get_for_user(user=request.auth, case_id=case_id)
    document = review_services.document_restore(
        actor=request.auth, case=case, document_id=document_id
    )
    return Status(200, WithdrawnOut.from_document(document))
