"""Reads of verifications and findings. `findings_for_user` checks case membership (NotFound
for non-members, as for a missing draft or version) and writes the read audit; the helpers
read for services that have already checked."""

from dataclasses import dataclass

from django.db.models import QuerySet

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases import selectors as case_selectors
from apps.drafting import selectors as draft_selectors
from apps.drafting.models import DraftVersion
from apps.verification.models import Finding, Verification
from lexweb.errors import NotFound

_MAX_ID = 2**63 - 1


def latest_verification(version: DraftVersion) -> Verification | None:
    """The version's newest verification, whatever its status."""
    return Verification.objects.filter(version=version).order_by("-created_at", "-id").first()


def open_blocking(verification: Verification) -> QuerySet[Finding]:
    """Unsupported or contradicted findings no lawyer has overridden: they block approval."""
    return Finding.objects.filter(
        verification=verification, status__in=Finding.BLOCKING, override__isnull=True
    )


def blocking_count(verification: Verification | None) -> int:
    return 0 if verification is None else open_blocking(verification).count()


@dataclass(frozen=True)
class VersionFindings:
    """A version, its newest verification (None before the first request) and that
    verification's findings, in text order."""

    version: DraftVersion
    verification: Verification | None
    findings: list[Finding]
    blocking: int


def findings_for_user(*, user: User, case_id: int, draft_id: int, number: int) -> VersionFindings:
    """The findings of the version's newest verification, each with its frozen page (and the
    page's document) and its override (and the lawyer) selected. Audited as a read of the
    version's findings."""
    if not isinstance(case_id, int) or isinstance(case_id, bool) or not 0 < case_id <= _MAX_ID:
        raise NotFound(f"No case {case_id}.")
    case = case_selectors.case_get_for_user(user=user, case_id=case_id)
    draft = draft_selectors.draft_in_case(case=case, draft_id=draft_id)
    version = draft_selectors.version_in_draft(draft=draft, number=number)
    verification = latest_verification(version)
    findings = (
        list(
            Finding.objects.filter(verification=verification)
            .select_related("page__document", "override__lawyer")
            .order_by("start", "end", "id")
        )
        if verification is not None
        else []
    )
    blocking = sum(1 for f in findings if f.blocks and not finding_overridden(f))
    read_audit.read_record(user=user, action="finding.list", case=case, target=version)
    return VersionFindings(version, verification, findings, blocking)


def finding_overridden(finding: Finding) -> bool:
    """Whether the finding has an override (reads the selected relation; no query when the
    finding came from `findings_for_user`)."""
    try:
        finding.override  # noqa: B018  # a reverse one-to-one raises when there is none
    except Finding.override.RelatedObjectDoesNotExist:
        return False
    return True
