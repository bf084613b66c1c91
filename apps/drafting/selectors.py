"""Reads of drafts. The `_for_user` functions check case membership (NotFound for non-members,
as for a missing draft) and write the read audit (one row per request and case)."""

from django.db.models import Count, Prefetch, QuerySet
from django.db.models.functions import Length

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.drafting.models import Draft, DraftVersion
from lexweb.errors import NotFound

_MAX_ID = 2**63 - 1


def _is_id(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= _MAX_ID


def _case(*, user: User, case_id: int) -> Case:
    if not _is_id(case_id):
        raise NotFound(f"No case {case_id}.")
    return case_selectors.case_get_for_user(user=user, case_id=case_id)


def draft_in_case(*, case: Case, draft_id: int) -> Draft:
    """The draft of `case` (membership already checked by the caller), or NotFound."""
    draft = Draft.objects.filter(pk=draft_id, case=case).first() if _is_id(draft_id) else None
    if draft is None:
        raise NotFound(f"No draft {draft_id} in this case.")
    return draft


def version_in_draft(*, draft: Draft, number: int) -> DraftVersion:
    """Version `number` of `draft` (already checked by the caller), or NotFound."""
    valid = isinstance(number, int) and not isinstance(number, bool) and 0 < number < 2**31
    version = DraftVersion.objects.filter(draft=draft, number=number).first() if valid else None
    if version is None:
        raise NotFound(f"No version {number} of this draft.")
    version.draft = draft
    return version


def draft_list_for_user(*, user: User, case_id: int) -> QuerySet[Draft]:
    """The case's drafts, newest first, each with `version_count` and its packet. Audited as
    one read of the list."""
    case = _case(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="draft.list", case=case)
    return (
        Draft.objects.filter(case=case)
        .select_related("packet", "created_by")
        .annotate(version_count=Count("versions"))
        .order_by("-created_at", "-id")
    )


def draft_get_for_user(*, user: User, case_id: int, draft_id: int) -> Draft:
    """One draft with its packet and its versions (without their text; oldest first) prefetched.
    Audited as a view."""
    case = _case(user=user, case_id=case_id)
    draft_in_case(case=case, draft_id=draft_id)
    versions = (
        DraftVersion.objects.defer("text")
        .annotate(characters=Length("text"))
        .select_related("created_by", "approved_by")
    )
    draft = (
        Draft.objects.filter(pk=draft_id)
        .select_related("packet", "created_by")
        .prefetch_related(Prefetch("versions", queryset=versions.order_by("number")))
        .annotate(version_count=Count("versions"))
        .get()
    )
    read_audit.read_record(user=user, action="draft.view", case=case, target=draft)
    return draft


def version_get_for_user(*, user: User, case_id: int, draft_id: int, number: int) -> DraftVersion:
    """One version with its text. Audited as a view of the version."""
    case = _case(user=user, case_id=case_id)
    draft = draft_in_case(case=case, draft_id=draft_id)
    version = version_in_draft(draft=draft, number=number)
    read_audit.read_record(user=user, action="draft.version_view", case=case, target=version)
    return version
