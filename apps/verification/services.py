"""Writes of the verifier: request a verification, run it (the job's body), override a finding.
Approving a version is the drafting app's (apps.drafting.services.approval), above this one:
it reads the blocking findings here.

Every function called from an edge checks membership of the case itself (`case_get_for_user`:
NotFound for non-members, the same answer as for a missing case), and finds the version through
the lookup the drafting app registers (`apps.verification.versions`).

Verifying a version:
1. `verification_request` writes a queued Verification and defers the job
   "verification.verify" on the `cpu` queue by name (at most one queued per version); while one
   is queued or running, asking again answers that one.
2. `verification_run` (the job) claims the row, reads the version's text, the frozen pages of
   its draft's packet (never the live documents) and the case's Bates prefixes, then, outside
   any transaction, extracts the claims (`claims.extract_claims`) and checks them against an
   index of the frozen pages (`checks.verify_text`: one finding per claim).
3. A model's second opinion on the record-cited claims the checks left standing
   (`second_opinion`: it can add findings, never clear one; without a healthy backend the run
   records "not obtained" and why), still outside any transaction.
4. One short transaction writes the findings (each tied to its FrozenPage) and marks the run
   done. Progress goes to the case's stream as "verification.progress" at each step.
   A failure marks the run failed with its message (a lost database is re-raised instead, so
   the job's retry runs it again from the start).

A run whose job is gone for good (failed, aborted or cancelled, or its row deleted) while the
run is still queued or running is failed with the reason, so the version can be verified
again: at once when someone asks to verify it, and by `verifications_fail_stale` (the periodic
job "verification.fail_stale") for runs older than LEXWEB_JOB_STALLED_SECONDS.

Blocking: a version whose newest verification has an open unsupported or contradicted finding
cannot be approved (`selectors.blocking_count`; the drafting app refuses with 409
`unsupported_findings`); a lawyer of the case (never staff, so never a staff member's token) may
override one such finding with a written reason, audited and kept with the finding.
"""

import functools
import gc
import logging
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import selectors as case_selectors
from apps.cases.events import publish_to_case
from apps.cases.models import Case
from apps.documents.models import Production
from apps.documents.reasons import LawyerRequired
from apps.evidence.models import FrozenPage
from apps.verification import boxes, second_opinion, selectors, versions
from apps.verification.events import VerificationProgress
from apps.verification.index import docketed_prefix
from apps.verification.models import Finding, Override, Verification
from apps.verification.pages import page_record, page_records  # noqa: F401  (read here too)
from lexweb.errors import Conflict, DomainError, NotFound
from lexweb.jobs import database_lost, job_defer

if TYPE_CHECKING:
    from django.db.models import Model, QuerySet

    from apps.verification import index
    from apps.verification.checks.context import Companion
    from apps.verification.findings import Finding as CheckedClaim

logger = logging.getLogger(__name__)

MAX_REASON = 5000
VERIFY_TASK = "verification.verify"
# Job states after which a job never runs again (procrastinate's `status`).
_JOB_ENDED = ("succeeded", "failed", "cancelled", "aborted")
MIN_REASON = 10
_MAX_ID = 2**63 - 1
_LABEL = re.compile(r"^(.*?)(\d+)$")
_PAGE_SUFFIX = re.compile(r"(?<=\d{3})\.\d{1,6}$")  # "ABC000101.0002": page 2 of ABC000101


# --- Reaching a version ----------------------------------------------------------------------


def _case(*, user: User, case_id: int) -> Case:
    if not isinstance(case_id, int) or isinstance(case_id, bool) or not 0 < case_id <= _MAX_ID:
        raise NotFound(f"No case {case_id}.")
    return case_selectors.case_get_for_user(user=user, case_id=case_id)


def _version(*, user: User, case_id: int, draft_id: int, number: int) -> tuple[Case, "Model"]:
    case = _case(user=user, case_id=case_id)
    return case, versions.version_in_case(case=case, draft_id=draft_id, number=number)


def _require_lawyer(*, user: User, case: Case, doing: str) -> None:
    if not case_selectors.case_is_lawyer(user=user, case=case):
        raise LawyerRequired(f"Only a lawyer on this case may {doing}; ask one to do it.")


# --- Requesting and running ------------------------------------------------------------------


@transaction.atomic
def verification_request(*, user: User, case_id: int, draft_id: int, number: int) -> Verification:
    """Queue a verification of the version (or answer the one already queued or running).
    Audited ("verification.request") when a new one is queued."""
    case, version = _version(user=user, case_id=case_id, draft_id=draft_id, number=number)
    type(version)._default_manager.select_for_update().filter(pk=version.pk).get()
    pending = (
        Verification.objects.select_for_update()
        .filter(
            version_id=version.pk,
            status__in=(Verification.Status.QUEUED, Verification.Status.RUNNING),
        )
        .first()
    )
    if pending is not None:
        gone = job_gone(pending)
        if gone is None:
            return pending
        # Its job will never finish it: fail it and queue a new run.
        _fail_stale(pending, gone)
    verification = Verification.objects.create(version_id=version.pk, requested_by=user)
    account_services.audit_record(
        actor=user,
        action="verification.request",
        case=case,
        target=verification,
        detail={"draft": draft_id, "version": number},
    )
    # By name: services never import tasks. The job row commits with the verification row.
    verification.job_id = job_defer(
        VERIFY_TASK, queueing_lock=f"verification:{version.pk}", verification_id=verification.pk
    )
    verification.save(update_fields=["job_id"])
    _publish(verification, case_id=case.pk, draft_id=draft_id, number=number)
    return verification


def _publish(verification: Verification, *, case_id: int, draft_id: int, number: int) -> None:
    event: VerificationProgress = {
        "type": "verification.progress",
        "case_id": case_id,
        "draft_id": draft_id,
        "version": number,
        "verification_id": verification.pk,
        "status": verification.status,
        "claims_done": verification.claims_done,
        "claim_count": verification.claim_count,
        "blocking": (
            selectors.blocking_count(verification)
            if verification.status == Verification.Status.DONE
            else 0
        ),
        "error": verification.error,
        "second_opinion": verification.second_opinion,
        "second_opinion_done": verification.second_opinion_done,
        "second_opinion_total": verification.second_opinion_total,
    }
    publish_to_case(case_id=case_id, event=event)


def _claim(verification_id: int) -> Verification | None:
    """Mark the run running; None for a missing, done or failed run (nothing to do)."""
    with transaction.atomic():
        verification = (
            Verification.objects.select_for_update()
            .select_related("version__draft")
            .filter(pk=verification_id)
            .first()
        )
        if verification is None or verification.status in (
            Verification.Status.DONE,
            Verification.Status.FAILED,
        ):
            return None
        verification.status = Verification.Status.RUNNING
        verification.started_at = timezone.now()
        verification.save(update_fields=["status", "started_at"])
        _publish_run(verification)
    return verification


def _publish_run(verification: Verification) -> None:
    version = verification.version
    _publish(
        verification,
        case_id=version.draft.case_id,
        draft_id=version.draft_id,
        number=version.number,
    )


def bates_prefixes(*, case_id: int, pages: Sequence["FrozenPage | index.PageRecord"]) -> list[str]:
    """The case's production prefixes and the prefixes of the labels the frozen pages carry,
    longest first (so "ACME-A" is tried before "ACME")."""
    found = set(Production.objects.filter(case_id=case_id).values_list("prefix", flat=True))
    for page in pages:
        for label in page.bates:
            if (docketed := docketed_prefix(label)) is not None:
                found.add(docketed)
                continue
            match = _LABEL.match(_PAGE_SUFFIX.sub("", label))
            if match and match.group(1):
                found.add(match.group(1))
    return sorted(found, key=lambda prefix: (-len(prefix), prefix))


def verification_run(*, verification_id: int) -> None:
    """The job's body (see the module's docstring). Idempotent: a missing, done or failed run
    is left alone; a running one (a retried job) runs again from the start and replaces its
    findings."""
    verification = _claim(verification_id)
    if verification is None:
        return
    try:
        _run(verification)
    except Exception as exc:
        if database_lost(exc):
            raise
        message = exc.message if isinstance(exc, DomainError) else f"{type(exc).__name__}: {exc}"
        with transaction.atomic():
            verification.status = Verification.Status.FAILED
            # PostgreSQL text refuses NUL: a message quoting page text must not keep the run
            # "running" for good (DataError) instead of failing it.
            verification.error = message.replace("\x00", "")[:2000]
            verification.finished_at = timezone.now()
            verification.save(update_fields=["status", "error", "finished_at"])
            _publish_run(verification)
        if not isinstance(exc, DomainError):
            raise


def _run(verification: Verification) -> None:
    # The verifier's modules are imported here, not at the top: the drafts API keeps working
    # (and says why a run failed) if they cannot be imported.
    from apps.verification import checks

    with _collector_paused():
        text, results, packet_index, by_position, rows = _checked(verification)
    # Added findings only: the deterministic rows above are never changed by a model. (The
    # collector runs as usual while a model is asked: that may take minutes.)
    opinion = _second_opinion(verification, text, results, packet_index, by_position)
    with _collector_paused():
        rows.extend(
            second_opinion.finding_rows(
                verification=verification,
                results=results,
                opinions=opinion.opinions,
                verifier_version=checks.VERIFIER_VERSION,
            )
        )
        _done(verification, rows, opinion)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector off for a stretch of the run. The run makes millions
    of small objects (the packet's pages, the loaded index, claims, findings) and no cycles
    among them; the collector would walk them, and everything else the worker holds, again and
    again for nothing (as `PacketIndex.build`, `index_cache.decode` and `checks.verify_text`
    say). Objects are still freed when no longer referenced; a cycle is collected after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _checked(
    verification: Verification,
) -> tuple[
    str,
    list["CheckedClaim"],
    "index.PacketIndex",
    "FrozenPagesByPosition",
    list[Finding],
]:
    """Step 2 of the module's docstring: the version's text, its checked claims, the packet's index,
    the findings' pages and the finding rows (boxes added)."""
    from apps.verification import checks, claims, index_cache

    version = verification.version
    draft = version.draft
    # The checks read every page's text: plain rows, no model instances (a tenth of the time
    # for 10,000 pages). The findings' pages are read as models afterwards, few and by position.
    records = page_records(packet_id=draft.packet_id)
    prefixes = bates_prefixes(case_id=draft.case_id, pages=records)
    found = claims.extract_claims(version.text, bates_prefixes=prefixes)
    with transaction.atomic():
        verification.claim_count = len(found)
        verification.second_opinion_done = verification.second_opinion_total = 0
        verification.save(
            update_fields=["claim_count", "second_opinion_done", "second_opinion_total"]
        )
        _publish_run(verification)
    packet_index = index_cache.packet_index_for(
        case_id=draft.case_id, packet_id=draft.packet_id, records=records
    )
    # Supporting words read by OCR below the review confidence make a finding "needs review".
    results = checks.verify_text(
        version.text,
        found,
        packet_index,
        ocr_review_confidence=settings.LEXWEB_OCR_REVIEW_CONFIDENCE,
        companions=_companions(verification, prefixes),
    )
    by_position = FrozenPagesByPosition(draft.packet_id, count=len(records))
    by_position.load(result.page.position for result in results if result.page is not None)
    rows = [
        _finding_row(verification, result, by_position, checks.VERIFIER_VERSION)
        for result in results
    ]
    _add_boxes(rows)
    with transaction.atomic():
        verification.claims_done = len(found)
        verification.save(update_fields=["claims_done"])
        _publish_run(verification)
    return version.text, results, packet_index, by_position, rows


MAX_COMPANIONS = 10  # the case's other drafts whose lists of exhibits a draft may lean on


def _companions(verification: Verification, prefixes: Sequence[str]) -> list["Companion"]:
    """The latest version of each other draft of the case on the same packet (the newest
    `MAX_COMPANIONS`), that names an exhibit: a brief's "Ex. 4" is often the exhibit the
    declaration filed with it lists. Their claims are extracted only if a cite needs them."""
    from apps.verification.checks.context import Companion, companions_listing_exhibits
    from apps.verification.claims import extract_claims

    draft = verification.version.draft
    # The drafting app's model through the draft's own class (that app sits above this one).
    others = type(draft)._default_manager.filter(case_id=draft.case_id, packet_id=draft.packet_id)
    found = []
    for other in others.exclude(pk=draft.pk).order_by("-created_at", "-id")[:MAX_COMPANIONS]:
        latest = other.versions.order_by("-number").only("text", "number").first()
        if latest is None:
            continue
        text = latest.text
        found.append(
            Companion(
                f"{other.title} (version {latest.number})",
                text,
                functools.partial(extract_claims, text, bates_prefixes=tuple(prefixes)),
            )
        )
    return companions_listing_exhibits(found)


def _done(verification: Verification, rows: list[Finding], opinion: second_opinion.Outcome) -> None:
    """Step 4 of the module's docstring: the findings written and the run marked done."""
    from apps.verification import checks

    with transaction.atomic():
        Finding.objects.filter(verification=verification, override__isnull=True).delete()
        Finding.objects.bulk_create(rows)
        verification.status = Verification.Status.DONE
        verification.verifier_version = checks.VERIFIER_VERSION
        verification.second_opinion = (
            Verification.SecondOpinion.OBTAINED
            if opinion.obtained
            else Verification.SecondOpinion.NOT_OBTAINED
        )
        verification.second_opinion_reason = opinion.reason[:2000]
        verification.second_opinion_deployment = opinion.deployment_label
        verification.second_opinion_calls = opinion.call_record_ids
        verification.finished_at = timezone.now()
        verification.save(
            update_fields=[
                "status",
                "verifier_version",
                "second_opinion",
                "second_opinion_reason",
                "second_opinion_deployment",
                "second_opinion_calls",
                "finished_at",
            ]
        )
        _publish_run(verification)


def _second_opinion(
    verification: Verification,
    text: str,
    results: Sequence["CheckedClaim"],
    packet_index: "index.PacketIndex",
    pages: Mapping[int, FrozenPage],
) -> second_opinion.Outcome:
    """A model's opinion on the claims the checks left standing (see apps.verification.
    second_opinion); "not obtained", with the reason, when it is off, nothing is routed, there
    is nothing to ask, or no backend answered. A bug in it is logged and leaves the
    deterministic verdicts standing alone; a lost database is re-raised (the job retries)."""
    if not settings.LEXWEB_SECOND_OPINION:
        return second_opinion.not_obtained("turned off (LEXWEB_SECOND_OPINION=off)")
    try:
        role = second_opinion.role_for_second_opinion()
        if role is None:
            return second_opinion.not_obtained(
                "no deployment is routed for the verifier role, nor for the adversary role "
                "it falls back to"
            )
        questions = second_opinion.questions_build(
            text=text, results=results, packet_index=packet_index, pages_by_position=pages
        )
        if not questions:
            return second_opinion.not_obtained(
                "no record-cited claim or quotation with a page that the checks left standing"
            )
        with transaction.atomic():
            verification.second_opinion_total = min(
                len(questions), settings.LEXWEB_SECOND_OPINION_MAX_CLAIMS
            )
            verification.save(update_fields=["second_opinion_total"])
            _publish_run(verification)

        def progress(done: int, total: int) -> None:
            with transaction.atomic():
                verification.second_opinion_done = done
                verification.second_opinion_total = total
                verification.save(update_fields=["second_opinion_done", "second_opinion_total"])
                _publish_run(verification)

        return second_opinion.ask(questions, role=role, on_progress=sync_to_async(progress))
    except Exception as exc:
        if database_lost(exc):
            raise
        logger.exception("The second opinion of verification %s failed.", verification.pk)
        return second_opinion.not_obtained(f"internal error ({type(exc).__name__})")


# --- Runs whose job is gone ------------------------------------------------------------------


def job_gone(verification: Verification) -> str | None:
    """Why the run's job will never finish it (its job ended, or no job row is left), or None
    while a job for it is queued or running (a stalled one is recovery's: it queues it again
    or fails it, apps.operations.services.recovery)."""
    jobs = ProcrastinateJob.objects.filter(task_name=VERIFY_TASK)
    if verification.job_id is not None:
        jobs = jobs.filter(pk=verification.job_id)
    else:  # a run queued before its job's id was recorded
        jobs = jobs.filter(args__verification_id=verification.pk)
    states = list(jobs.order_by("-id").values_list("id", "status")[:5])
    if not states:
        return "its job is no longer in the job queue"
    if any(status not in _JOB_ENDED for _, status in states):
        return None
    job_id, status = states[0]
    return f"its job {job_id} ended ({status}) without finishing it"


def _fail_stale(verification: Verification, why: str) -> None:
    verification.status = Verification.Status.FAILED
    verification.error = (
        f"The verification stopped: {why} (the worker running it may have died). "
        "Verify the version again."
    )[:2000]
    verification.finished_at = timezone.now()
    verification.save(update_fields=["status", "error", "finished_at"])
    logger.warning("Verification %s failed: %s.", verification.pk, why)
    _publish_run(verification)


def verifications_fail_stale(*, stalled_seconds: int | None = None) -> list[int]:
    """Fail every queued or running verification started (or, not started, created) over
    `stalled_seconds` ago (default LEXWEB_JOB_STALLED_SECONDS) whose job is gone for good;
    the ids failed. Each is locked (SKIP LOCKED: a run claiming it now is left alone) and
    checked under its lock, so two housekeeping runs at once are safe."""
    seconds = settings.LEXWEB_JOB_STALLED_SECONDS if stalled_seconds is None else stalled_seconds
    cutoff = timezone.now() - timedelta(seconds=seconds)
    pending = (Verification.Status.QUEUED, Verification.Status.RUNNING)
    candidates = list(
        Verification.objects.filter(status__in=pending)
        .exclude(started_at__gte=cutoff)
        .filter(created_at__lt=cutoff)
        .order_by("pk")
        .values_list("pk", flat=True)
    )
    failed = []
    for pk in candidates:
        with transaction.atomic():
            verification = (
                Verification.objects.select_for_update(skip_locked=True)
                .select_related("version__draft")
                .filter(pk=pk, status__in=pending)
                .first()
            )
            if verification is None:
                continue
            why = job_gone(verification)
            if why is None:
                continue
            _fail_stale(verification, why)
            failed.append(pk)
    return failed


class FrozenPagesByPosition(Mapping[int, FrozenPage]):
    """A packet's frozen pages by position (their documents' blobs selected), read from the
    database only as they are asked for: `load` reads many in one query, a look-up of a page
    not yet read reads that one."""

    def __init__(self, packet_id: int, *, count: int) -> None:
        self.packet_id, self.count = packet_id, count
        self.read: dict[int, FrozenPage] = {}

    def load(self, positions: Iterable[int]) -> None:
        wanted = {p for p in positions if p not in self.read and 1 <= p <= self.count}
        if wanted:
            for page in self._query().filter(position__in=wanted):
                self.read[page.position] = page

    def _query(self) -> "QuerySet[FrozenPage]":
        return FrozenPage.objects.filter(packet_id=self.packet_id).select_related("document__blob")

    def __getitem__(self, position: int) -> FrozenPage:
        if position not in self.read:
            self.load([position])
        try:
            return self.read[position]
        except KeyError:
            raise KeyError(position) from None

    def __contains__(self, position: object) -> bool:
        if not isinstance(position, int):
            return False
        self.load([position])
        return position in self.read

    def __iter__(self) -> Iterator[int]:
        # Positions are 1 to the page count (a freeze numbers them so).
        return iter(range(1, self.count + 1))

    def __len__(self) -> int:
        return self.count


def _finding_row(
    verification: Verification,
    result: "CheckedClaim",
    pages: Mapping[int, FrozenPage],
    verifier_version: str,
) -> Finding:
    claim = result.claim
    match = result.match
    return Finding(
        verification=verification,
        start=claim.start,
        end=claim.end,
        text=claim.text,
        kind=claim.kind,
        status=result.status,
        check_name=result.check[:60],
        message=result.message,
        page=pages.get(result.page.position) if result.page is not None else None,
        excerpt=result.excerpt,
        match_start=match[0] if match else None,
        match_end=match[1] if match else None,
        found_value=result.found_value or "",
        verifier_version=verifier_version,
    )


def _add_boxes(rows: Sequence[Finding]) -> None:
    boxed = [
        row
        for row in rows
        if row.page is not None and row.match_start is not None and row.match_end is not None
    ]
    pairs = [(row.page, (row.match_start, row.match_end)) for row in boxed]
    for row, found in zip(boxed, boxes.match_boxes(pairs), strict=True):  # type: ignore[arg-type]  # filtered above
        row.boxes = found


# --- Overrides and approval ------------------------------------------------------------------


def _reason(reason: str) -> str:
    reason = reason.strip()
    if len(reason) < MIN_REASON:
        raise DomainError(
            f"Write why this finding may stand (at least {MIN_REASON} characters): the reason "
            "is kept with the finding for good."
        )
    if len(reason) > MAX_REASON:
        raise DomainError(f"The reason is {len(reason)} characters; at most {MAX_REASON}.")
    return reason


@transaction.atomic
def finding_override(
    *, user: User, case_id: int, draft_id: int, number: int, finding_id: int, reason: str
) -> Override:
    """A lawyer of the case lets one unsupported or contradicted finding of the version's
    newest verification stand, with a written reason. Staff are refused (403), whatever they
    authenticate with; a supported, needs-review, superseded or already overridden finding is
    a 409. Audited ("finding.override", with the reason)."""
    case, version = _version(user=user, case_id=case_id, draft_id=draft_id, number=number)
    valid = isinstance(finding_id, int) and not isinstance(finding_id, bool)
    finding = (
        Finding.objects.select_for_update()
        .filter(pk=finding_id, verification__version_id=version.pk)
        .first()
        if valid and 0 < finding_id <= _MAX_ID
        else None
    )
    if finding is None:
        raise NotFound(f"No finding {finding_id} on version {number} of this draft.")
    _require_lawyer(user=user, case=case, doing="override a finding")
    text = _reason(reason)
    latest = selectors.verification_latest(version)
    if latest is None or latest.pk != finding.verification_id:
        raise Conflict("This finding is from an earlier verification; override the newest one's.")
    if not finding.blocks:
        raise Conflict(
            f"This finding is {finding.get_status_display().lower()}: only unsupported or "
            "contradicted findings block, and only they can be overridden."
        )
    if Override.objects.filter(finding=finding).exists():
        raise Conflict("This finding has been overridden already; the override stands.")
    override = Override.objects.create(finding=finding, lawyer=user, reason=text)
    account_services.audit_record(
        actor=user,
        action="finding.override",
        case=case,
        target=finding,
        detail={
            "draft": draft_id,
            "version": number,
            "status": finding.status,
            "claim": finding.text[:200],
            "reason": text[:2000],
        },
    )
    return override
