"""Writes of the review list: per-case tags on documents, and withdrawing a wrong upload.

Tags are the case team's own labels (a tag belongs to one case; the same name in another case
is another tag). Withdrawing takes a document out of lists, search and new packets, for a
written reason, audited; nothing is deleted (the original stays stored, legal hold) and
`document_restore` brings it back. A document that is in a frozen packet or in a production
cannot be withdrawn: what was frozen or handed over must still resolve to it. One in a packet
not yet frozen must be taken out of it first (freezing would make it evidence again).

The views check membership (case_or_404) before calling; these functions check the rest.
"""

import re
from collections.abc import Sequence

from django.db import IntegrityError, transaction
from django.utils import timezone

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.evidence_hooks import evidence
from apps.documents.list_forms import MAX_BULK_DOCUMENTS
from apps.documents.models import Document, DocumentTag, Production, ProductionDocument, Tag
from lexweb.errors import Conflict, DomainError, NotFound

MAX_TAG_CHARS = 60
MAX_TAGS_PER_CASE = 500
MAX_WITHDRAW_REASON = 1000
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _clean_ids(document_ids: Sequence[int]) -> list[int]:
    ids = list(dict.fromkeys(document_ids))
    if not ids:
        raise DomainError("Select at least one document.")
    if len(ids) > MAX_BULK_DOCUMENTS:
        raise DomainError(f"One action takes at most {MAX_BULK_DOCUMENTS:,} documents.")
    if any(not isinstance(i, int) or isinstance(i, bool) or not 0 < i < 2**63 for i in ids):
        raise DomainError("Those are not document ids.")
    return ids


def _documents(case: Case, ids: list[int], *, lock: bool = False) -> list[Document]:
    rows = Document.objects.filter(case=case, pk__in=ids).order_by("pk")
    documents = list(rows.select_for_update() if lock else rows)
    if len(documents) != len(ids):
        missing = sorted(set(ids) - {d.pk for d in documents})
        raise NotFound(f"No document {missing[0]} in this case.")
    return documents


def tag_name_clean(name: str) -> str:
    """A tag's name as stored: spaces collapsed; DomainError for an empty, long or odd one."""
    if not isinstance(name, str):
        raise DomainError("Give the tag a name.")
    cleaned = " ".join(_CONTROL.sub(" ", name).split())
    if not cleaned:
        raise DomainError("Give the tag a name.")
    if len(cleaned) > MAX_TAG_CHARS:
        raise DomainError(f"A tag is at most {MAX_TAG_CHARS} characters.")
    return cleaned


def _tag_get_or_create(*, actor: User, case: Case, name: str) -> Tag:
    tag = Tag.objects.filter(case=case, name__iexact=name).first()
    if tag is not None:
        return tag
    if Tag.objects.filter(case=case).count() >= MAX_TAGS_PER_CASE:
        raise DomainError(f"A case has at most {MAX_TAGS_PER_CASE} tags; reuse one.")
    try:
        with transaction.atomic():
            return Tag.objects.create(case=case, name=name, created_by=actor)
    except IntegrityError:
        # Two people creating the same tag at once: both get the one that won.
        return Tag.objects.get(case=case, name__iexact=name)


@transaction.atomic
def documents_tag(
    *, actor: User, case: Case, document_ids: Sequence[int], name: str
) -> tuple[Tag, int]:
    """Put the tag `name` (made in this case if new, matched without regard to case) on the
    documents. Returns the tag and how many documents newly carry it. Audited document.tag."""
    name = tag_name_clean(name)
    documents = _documents(case, _clean_ids(document_ids))
    tag = _tag_get_or_create(actor=actor, case=case, name=name)
    now = timezone.now()
    before = DocumentTag.objects.filter(tag=tag).count()
    DocumentTag.objects.bulk_create(
        [DocumentTag(document=d, tag=tag, tagged_by=actor, tagged_at=now) for d in documents],
        ignore_conflicts=True,
        batch_size=1000,
    )
    added = DocumentTag.objects.filter(tag=tag).count() - before
    account_services.audit_record(
        actor=actor,
        action="document.tag",
        case=case,
        target=tag,
        detail={"tag": tag.name, "count": added},
    )
    return tag, added


@transaction.atomic
def documents_untag(*, actor: User, case: Case, document_ids: Sequence[int], tag_id: int) -> int:
    """Take the case's tag `tag_id` off the documents; how many lost it. Audited document.untag."""
    ids = _clean_ids(document_ids)
    tag = Tag.objects.filter(case=case, pk=tag_id).first() if 0 < tag_id < 2**63 else None
    if tag is None:
        raise NotFound(f"No tag {tag_id} in this case.")
    removed, _ = DocumentTag.objects.filter(
        tag=tag, document__case=case, document_id__in=ids
    ).delete()
    account_services.audit_record(
        actor=actor,
        action="document.untag",
        case=case,
        target=tag,
        detail={"tag": tag.name, "count": removed},
    )
    return removed


def withdraw_reason_clean(reason: str) -> str:
    cleaned = " ".join(_CONTROL.sub(" ", reason if isinstance(reason, str) else "").split())
    if not cleaned:
        raise DomainError("Say why the document is withdrawn (e.g. “uploaded to the wrong case”).")
    if len(cleaned) > MAX_WITHDRAW_REASON:
        raise DomainError(f"A reason is at most {MAX_WITHDRAW_REASON} characters.")
    return cleaned


def _withdraw_refusal(documents: list[Document]) -> str | None:
    """Why these documents cannot be withdrawn (the first reason found), or None."""
    ids = [d.pk for d in documents]
    names = {d.pk: d.filename for d in documents}
    already = [d for d in documents if d.withdrawn_at is not None]
    if already:
        return f"{already[0].filename} is already withdrawn."
    frozen = evidence().packet_holding(document_ids=ids, frozen=True)
    if frozen is not None:
        return (
            f"{names[frozen[0]]} is in the frozen packet “{frozen[1]}”; what was "
            "frozen must still resolve to it, so it cannot be withdrawn."
        )
    editable = evidence().packet_holding(document_ids=ids, frozen=False)
    if editable is not None:
        # Freezing it would make the withdrawn document evidence again: take it out first.
        return (
            f"{names[editable[0]]} is in the packet “{editable[1]}”, not yet "
            "frozen; take it out of the packet first."
        )
    produced = (
        ProductionDocument.objects.filter(document_id__in=ids)
        .exclude(production__status=Production.Status.FAILED)
        .select_related("production")
        .order_by("document_id")
        .first()
    )
    if produced is not None:
        return (
            f"{names[produced.document_id]} is in production {produced.production.volume}; a "
            "produced document cannot be withdrawn."
        )
    volume = Production.objects.filter(volume_document_id__in=ids).first()
    if volume is not None:
        return f"{names[volume.volume_document_id or 0]} is production {volume.volume}'s volume."
    return None


@transaction.atomic
def documents_withdraw(
    *, actor: User, case: Case, document_ids: Sequence[int], reason: str
) -> list[Document]:
    """Withdraw the documents (all or none) for `reason`; audited document.withdraw on each.
    Conflict when one is already withdrawn, in a frozen packet or in a production."""
    reason = withdraw_reason_clean(reason)
    # Locked, so a production or freeze that reads them waits for this to finish.
    documents = _documents(case, _clean_ids(document_ids), lock=True)
    refusal = _withdraw_refusal(documents)
    if refusal is not None:
        raise Conflict(refusal)
    now = timezone.now()
    Document.objects.filter(pk__in=[d.pk for d in documents]).update(
        withdrawn_at=now, withdrawn_by=actor, withdrawn_reason=reason
    )
    for document in documents:
        document.withdrawn_at, document.withdrawn_by, document.withdrawn_reason = now, actor, reason
        account_services.audit_record(
            actor=actor,
            action="document.withdraw",
            case=case,
            target=document,
            detail={"reason": reason},
        )
    return documents


@transaction.atomic
def document_restore(*, actor: User, case: Case, document_id: int) -> Document:
    """Bring a withdrawn document back into lists, search and packets. Audited
    document.restore with the reason it had been withdrawn for."""
    (document,) = _documents(case, _clean_ids([document_id]), lock=True)
    if document.withdrawn_at is None:
        raise Conflict(f"{document.filename} is not withdrawn.")
    reason = document.withdrawn_reason
    document.withdrawn_at, document.withdrawn_by, document.withdrawn_reason = None, None, ""
    document.save(update_fields=["withdrawn_at", "withdrawn_by", "withdrawn_reason"])
    account_services.audit_record(
        actor=actor,
        action="document.restore",
        case=case,
        target=document,
        detail={"withdrawn_for": reason[:MAX_WITHDRAW_REASON]},
    )
    return document
