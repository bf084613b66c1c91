"""Request and response shapes of the verification endpoints (apps/verification/api.py)."""

from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeAlias

from ninja import Schema
from pydantic import Field

from apps.accounts.schemas import UserOut
from apps.verification import second_opinion, selectors
from apps.verification.models import Finding, Override, Verification
from apps.verification.services import MAX_REASON
from lexweb.api_schemas import StrictIn, status_type

StatusName = Literal["supported", "unsupported", "contradicted", "needs_review"]
KindName = Literal[
    "record_cite", "not_a_record_cite", "case_citation", "statute", "date", "amount", "quote"
]


class FindingFilter(Schema):
    """Only findings of these statuses and kinds (each repeatable; none given: all)."""

    status: list[StatusName] = Field(default_factory=list)
    kind: list[KindName] = Field(default_factory=list)


class OverrideIn(StrictIn):
    reason: str = Field(min_length=1, max_length=MAX_REASON)


class SecondOpinionOut(Schema):
    """The model's second opinion on the run's record-cited claims: "obtained" (at least one
    answer; its findings have check "second_opinion" and only ever add to the checks') or
    "not_obtained" (the deterministic verdicts stand alone), with the reason or what it
    covered, the deployment(s) that answered, the cluster's call record ids, and progress
    (`done` of `total` claims asked about)."""

    status: Literal["obtained", "not_obtained"]
    reason: str
    deployment: str
    call_record_ids: list[int]
    done: int
    total: int


if TYPE_CHECKING:
    VerificationStatus: TypeAlias = str
    FindingStatus: TypeAlias = str
else:
    VerificationStatus = status_type(
        Verification.Status,
        terminal=["done", "failed"],
        about="The verification's state.",
    )
    FindingStatus = status_type(
        Finding.Status,
        terminal=[],
        about=(
            "The checks' verdict on the claim, fixed when its verification is done; a lawyer's "
            "override is recorded beside it (`override`), never in place of it."
        ),
    )


class VerificationOut(Schema):
    """One run: deterministic checks, then the model's second opinion (`second_opinion`:
    "obtained" or "not_obtained"; `second_opinion_detail` says why and by whom)."""

    id: int
    version: int
    status: VerificationStatus
    claims_done: int
    claim_count: int
    verifier_version: str
    second_opinion: str
    second_opinion_detail: SecondOpinionOut
    error: str
    created_at: datetime
    finished_at: datetime | None

    @staticmethod
    def resolve_second_opinion_detail(obj: Verification) -> SecondOpinionOut:
        return SecondOpinionOut(
            status=obj.second_opinion,  # type: ignore[arg-type]  # the model's choices
            reason=obj.second_opinion_reason,
            deployment=obj.second_opinion_deployment,
            call_record_ids=[int(pk) for pk in obj.second_opinion_calls],
            done=obj.second_opinion_done,
            total=obj.second_opinion_total,
        )

    @staticmethod
    def resolve_version(obj: Verification) -> int:
        return obj.version.number


class SupportOut(Schema):
    """The frozen page that decided the finding (the packet's snapshot, not the live
    document), with the span of the matched words in its text."""

    frozen_page_id: int
    position: int
    document_id: int
    filename: str
    page_number: int
    bates: list[str]
    source: str
    ocr_confidence: float | None
    excerpt: str
    match_start: int | None
    match_end: int | None
    # [x0, y0, x1, y1] in PDF points from the page's top left, one per matched word.
    boxes: list[list[float]]


class OverrideOut(Schema):
    lawyer: UserOut
    reason: str
    at: datetime


class FindingOut(Schema):
    """One claim's verdict: offsets into the version's text, kind, status, the check that
    decided and why. `blocks`: unsupported or contradicted and not overridden.
    `second_opinion`: true for a finding a model added (check "second_opinion"; it names the
    model's reason and deployment), false for the deterministic checks' own."""

    id: int
    start: int
    end: int
    text: str
    kind: str
    status: FindingStatus
    check: str
    message: str
    found_value: str | None
    verifier_version: str
    support: SupportOut | None
    override: OverrideOut | None
    blocks: bool
    second_opinion: bool


class FindingsOut(Schema):
    """The version's newest verification (null before any) and its findings in text order;
    `blocking` counts the open unsupported and contradicted ones."""

    verification: VerificationOut | None
    blocking: int
    findings: list[FindingOut]


def _override(finding: Finding) -> Override | None:
    return finding.override if selectors.finding_overridden(finding) else None


def finding_out(finding: Finding) -> FindingOut:
    page = finding.page
    override = _override(finding)
    support = None
    if page is not None:
        support = SupportOut(
            frozen_page_id=page.pk,
            position=page.position,
            document_id=page.document_id,
            filename=page.document.filename,
            page_number=page.page_number,
            bates=list(page.bates),
            source=page.source,
            ocr_confidence=page.ocr_confidence,
            excerpt=finding.excerpt,
            match_start=finding.match_start,
            match_end=finding.match_end,
            boxes=finding.boxes,
        )
    return FindingOut(
        id=finding.pk,
        start=finding.start,
        end=finding.end,
        text=finding.text,
        kind=finding.kind,
        status=finding.status,
        check=finding.check_name,
        message=finding.message,
        found_value=finding.found_value or None,
        verifier_version=finding.verifier_version,
        support=support,
        override=(
            OverrideOut(
                lawyer=UserOut.from_orm(override.lawyer), reason=override.reason, at=override.at
            )
            if override is not None
            else None
        ),
        blocks=finding.blocks and override is None,
        second_opinion=finding.check_name == second_opinion.CHECK,
    )


def findings_out(
    found: selectors.VersionFindings, *, only: FindingFilter | None = None
) -> FindingsOut:
    """The findings (filtered by `only`); `blocking` counts every open one regardless."""
    verification = found.verification
    findings = [
        finding
        for finding in found.findings
        if only is None
        or (
            (not only.status or finding.status in only.status)
            and (not only.kind or finding.kind in only.kind)
        )
    ]
    return FindingsOut.model_validate(
        {
            "verification": verification,
            "blocking": found.blocking,
            "findings": [finding_out(finding) for finding in findings],
        }
    )
