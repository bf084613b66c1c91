"""Reads of verifications and findings. `findings_for_user` checks case membership (NotFound
for non-members, as for a missing draft or version) and writes the read audit; the helpers
read for services that have already checked. A version is reached through the lookup the
drafting app registers (`apps.verification.versions`); the state of a draft's versions is read
by the drafting app (`apps.drafting.selectors.version_states`)."""

from dataclasses import dataclass

import pymupdf
from django.db.models import Model, QuerySet
from PIL import Image

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases import selectors as case_selectors
from apps.documents import storage
from apps.documents.extraction import _own_dpi as stated_dpi  # how ingest sized image pages
from apps.documents.models import Document
from apps.evidence.models import FrozenPage
from apps.verification import versions
from apps.verification.models import Finding, Verification
from lexweb.errors import NotFound

_MAX_ID = 2**63 - 1


def verification_latest(version: Model) -> Verification | None:
    """The version's newest verification, whatever its status."""
    return Verification.objects.filter(version_id=version.pk).order_by("-created_at", "-id").first()


def finding_list_open_blocking(verification: Verification) -> QuerySet[Finding]:
    """Unsupported or contradicted findings no lawyer has overridden: they block approval."""
    return Finding.objects.filter(
        verification=verification, status__in=Finding.BLOCKING, override__isnull=True
    )


def blocking_count(verification: Verification | None) -> int:
    return 0 if verification is None else finding_list_open_blocking(verification).count()


@dataclass(frozen=True)
class VersionFindings:
    """A version (drafting's DraftVersion, as `versions.version_in_case` finds it), its newest
    verification (None before the first request, its version selected) and that
    verification's findings, in text order."""

    version: Model
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
    version = versions.version_in_case(case=case, draft_id=draft_id, number=number)
    verification = verification_latest(version)
    if verification is not None:
        verification.version = version  # type: ignore[assignment]  # drafting's DraftVersion
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


def frozen_page_size(page: FrozenPage) -> tuple[float, float] | None:
    """The page's width and height in PDF points (the space of a finding's boxes), read from
    its document's original (content-addressed, never changed): a PDF page's box, or an image
    frame's pixels at the resolution it states (96 when none), as ingest sized it. None for
    documents without page images or an original that cannot be read."""
    document = page.document
    try:
        path = storage.blob_path(document.blob.sha256)
        if document.kind == Document.Kind.PDF:
            with pymupdf.open(path, filetype="pdf") as pdf:
                if not 0 < page.page_number <= pdf.page_count:
                    return None
                rect = pdf[page.page_number - 1].rect
                return (round(rect.width, 2), round(rect.height, 2))
        if document.kind == Document.Kind.IMAGE:
            with Image.open(path) as image:
                image.seek(page.page_number - 1)
                dpi = stated_dpi(image)
                width, height = image.size
                return (round(width * 72.0 / dpi, 2), round(height * 72.0 / dpi, 2))
    except (OSError, EOFError, RuntimeError, ValueError, SyntaxError, Image.DecompressionBombError):
        return None
    return None
