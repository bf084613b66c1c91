"""Reads of drafts. The `_for_user` functions check case membership (NotFound for non-members,
as for a missing draft) and write the read audit (one row per request and case)."""

from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Count, Prefetch, QuerySet
from django.db.models.functions import Length

from apps.accounts.models import User
from apps.cases import read_audit
from apps.cases import selectors as case_selectors
from apps.cases.models import Case
from apps.drafting.models import Draft, DraftVersion, Run, RunEvent, Stage
from apps.verification.models import Finding, Verification
from lexweb.errors import NotFound

_MAX_ID = 2**63 - 1


def id_is_valid(value: object) -> bool:
    """A positive id that fits PostgreSQL's bigint (anything else names nothing)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= _MAX_ID


def case_for_user(*, user: User, case_id: int) -> Case:
    """The case if `user` may see it (NotFound otherwise, as for a case that never existed)."""
    if not id_is_valid(case_id):
        raise NotFound(f"No case {case_id}.")
    return case_selectors.case_get_for_user(user=user, case_id=case_id)


def draft_in_case(*, case: Case, draft_id: int) -> Draft:
    """The draft of `case` (membership already checked by the caller), or NotFound."""
    draft = Draft.objects.filter(pk=draft_id, case=case).first() if id_is_valid(draft_id) else None
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


def version_in_case(*, case: Case, draft_id: int, number: int) -> DraftVersion:
    """Version `number` of draft `draft_id` of `case` (membership already checked by the
    caller), or NotFound. The verifier finds the versions it is asked about with this
    (registered in DraftingConfig.ready: apps.verification.versions)."""
    draft = draft_in_case(case=case, draft_id=draft_id)
    return version_in_draft(draft=draft, number=number)


def draft_list_for_user(*, user: User, case_id: int) -> QuerySet[Draft]:
    """The case's drafts, newest first, each with `version_count` and its packet. Audited as
    one read of the list."""
    case = case_for_user(user=user, case_id=case_id)
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
    case = case_for_user(user=user, case_id=case_id)
    draft_in_case(case=case, draft_id=draft_id)
    versions = (
        DraftVersion.objects.defer("text")
        .annotate(characters=Length("text"))
        .select_related("created_by", "approved_by", "rejected_by")
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
    case = case_for_user(user=user, case_id=case_id)
    draft = draft_in_case(case=case, draft_id=draft_id)
    version = version_in_draft(draft=draft, number=number)
    read_audit.read_record(user=user, action="draft.version_view", case=case, target=version)
    return version


# --- Runs ------------------------------------------------------------------------------------

MAX_EVENTS_PAGE = 1000


def run_in_case(*, case: Case, run_id: int) -> Run:
    """The run of `case` (membership already checked by the caller), or NotFound."""
    run = Run.objects.filter(pk=run_id, case=case).first() if id_is_valid(run_id) else None
    if run is None:
        raise NotFound(f"No run {run_id} in this case.")
    return run


def run_list_for_user(
    *, user: User, case_id: int, status: str | None = None, kind: str | None = None
) -> QuerySet[Run]:
    """The case's runs, newest first, of one status and/or kind when given. Audited as one
    read of the list."""
    case = case_for_user(user=user, case_id=case_id)
    read_audit.read_record(user=user, action="run.list", case=case)
    runs = Run.objects.filter(case=case)
    if status is not None:
        runs = runs.filter(status=status)
    if kind is not None:
        runs = runs.filter(kind=kind)
    return runs.select_related("created_by", "rejected_by").order_by("-created_at", "-id")


def run_get_for_user(*, user: User, case_id: int, run_id: int) -> Run:
    """One run with its stages (oldest first) prefetched. Audited as a view."""
    case = case_for_user(user=user, case_id=case_id)
    run_in_case(case=case, run_id=run_id)
    run = (
        Run.objects.filter(pk=run_id)
        .select_related("created_by", "rejected_by", "draft")
        .prefetch_related(
            Prefetch(
                "stages", queryset=Stage.objects.select_related("version").order_by("position")
            )
        )
        .get()
    )
    read_audit.read_record(user=user, action="run.view", case=case, target=run)
    return run


def run_events_for_user(
    *, user: User, case_id: int, run_id: int, after: int = 0, limit: int = MAX_EVENTS_PAGE
) -> list[RunEvent]:
    """The run's events numbered above `after`, in order, at most `limit`. Audited as a view of
    the run (the events carry the model's text)."""
    case = case_for_user(user=user, case_id=case_id)
    run = run_in_case(case=case, run_id=run_id)
    read_audit.read_record(user=user, action="run.events", case=case, target=run)
    return run_events_after(run_id=run.pk, after=after, limit=limit)


def run_events_after(*, run_id: int, after: int, limit: int = MAX_EVENTS_PAGE) -> list[RunEvent]:
    """Events of a run whose access the caller has checked (the websocket consumer)."""
    if not isinstance(after, int) or isinstance(after, bool) or after < 0:
        after = 0
    limit = max(1, min(limit, MAX_EVENTS_PAGE))
    return list(RunEvent.objects.filter(run_id=run_id, seq__gt=after).order_by("seq")[:limit])


def run_events_count(*, run_id: int, after: int) -> int:
    """How many of a run's events are numbered above `after` (the caller has checked access:
    the API's events list counts after it listed them for the person)."""
    return RunEvent.objects.filter(run_id=run_id, seq__gt=max(after, 0)).count()


def run_stream_open_for_user(*, user: User, case_id: int, run_id: int) -> Run:
    """The run whose live events a websocket is about to follow (NotFound for non-members and
    missing runs alike). Audited as one read of the run's events when the socket opens."""
    case = case_for_user(user=user, case_id=case_id)
    run = run_in_case(case=case, run_id=run_id)
    read_audit.read_record(user=user, action="run.stream", case=case, target=run)
    return run


# --- The run pages ---------------------------------------------------------------------------


def run_rows_for_user(
    *, user: User, case_id: int, status: str | None = None, kind: str | None = None
) -> QuerySet[Run]:
    """The case's runs for the Runs tab: `run_list_for_user` (audited as one read of the list,
    of one status and/or kind when given) with each run's packet and stages (without their
    text) prefetched."""
    stages = Stage.objects.defer("output_text", "output_json", "prompt_text", "pages_sent")
    return (
        run_list_for_user(user=user, case_id=case_id, status=status, kind=kind)
        .select_related("packet")
        .prefetch_related(Prefetch("stages", queryset=stages.order_by("position")))
    )


@dataclass(frozen=True)
class RunPage:
    """What the run page shows: the run with its stages, the text each stage without stored
    output has streamed in its current attempt (from its stored token events), and the number
    of the last event that state includes (the page's websocket asks for the events after it)."""

    run: Run
    stages: list[Stage]
    live: dict[int, str]
    last_seq: int


def run_page_for_user(*, user: User, case_id: int, run_id: int) -> RunPage:
    """The run page's state. Audited as one view of the run. The event number is read first:
    the rows read after it may be newer (the page's script takes repeated events in stride),
    never older, so nothing falls between the page and its stream."""
    case = case_for_user(user=user, case_id=case_id)
    run_in_case(case=case, run_id=run_id)
    last_seq = Run.objects.filter(pk=run_id).values_list("event_seq", flat=True).get()
    stages_qs = Stage.objects.select_related("version", "verification__version").order_by(
        "position"
    )
    run = (
        Run.objects.filter(pk=run_id)
        .select_related("created_by", "draft", "packet", "cancelled_by", "gate_override_by")
        .prefetch_related(Prefetch("stages", queryset=stages_qs))
        .get()
    )
    read_audit.read_record(user=user, action="run.view", case=case, target=run)
    stages = list(run.stages.all())
    attempts = {s.pk: s.attempt for s in stages if not s.output_text and s.attempt}
    live: dict[int, str] = {}
    if attempts:
        payloads = (
            RunEvent.objects.filter(
                run_id=run_id,
                kind="stage.tokens",
                seq__lte=last_seq,
                payload__stage_id__in=list(attempts),
            )
            .order_by("seq")
            .values_list("payload", flat=True)
        )
        for payload in payloads:
            stage_id, text = payload.get("stage_id"), payload.get("text")
            if stage_id not in attempts or payload.get("attempt") != attempts[stage_id]:
                continue
            if not isinstance(text, str):
                continue
            have = live.get(stage_id, "")
            offset = payload.get("offset")
            if isinstance(offset, int) and 0 <= offset <= len(have):
                live[stage_id] = have[:offset] + text
            else:
                live[stage_id] = have + text
    return RunPage(run=run, stages=stages, live=live, last_seq=last_seq)


@dataclass(frozen=True)
class WrittenBy:
    """Which run and stage wrote a model-written version (issue 25 req 6), in words."""

    run_id: int
    stage: str  # the stage's label: "Drafter", "Revision"
    model: str  # the model that answered; "" when not recorded


def versions_written_by(versions: list[DraftVersion]) -> dict[int, WrittenBy]:
    """For each model-written version among `versions` (read by the caller through a
    `_for_user` selector): the run and stage that saved it, by version id. One query."""
    ids = [v.pk for v in versions if v.written_by == DraftVersion.WrittenBy.MODEL]
    if not ids:
        return {}
    found: dict[int, WrittenBy] = {}
    stages = Stage.objects.filter(version_id__in=ids).order_by("version_id", "-pk")
    for stage in stages.only("version_id", "run_id", "name", "model_name"):
        assert stage.version_id is not None  # noqa: S101  (filtered on it)
        found.setdefault(
            stage.version_id,
            WrittenBy(
                run_id=stage.run_id,
                stage=stage.get_name_display(),
                model=stage.model_name,
            ),
        )
    return found


# --- The state of versions, for the browser pages (apps/drafting/views/) ----------------------


@dataclass(frozen=True)
class VersionState:
    """A version's newest verification (None before the first request) and how many of its
    findings block approval."""

    verification: Verification | None
    blocking: int


def version_states(versions: Sequence[DraftVersion]) -> dict[int, VersionState]:
    """The state of each version (by version id), in three queries whatever their number.
    For versions the caller has already read through a `_for_user` selector."""
    ids = [version.pk for version in versions]
    latest = {
        v.version_id: v
        for v in Verification.objects.filter(version_id__in=ids)
        .order_by("version_id", "-created_at", "-id")
        .distinct("version_id")
    }
    open_counts = dict(
        Finding.objects.filter(
            verification_id__in=[v.pk for v in latest.values()],
            status__in=Finding.BLOCKING,
            override__isnull=True,
        )
        .values("verification_id")
        .annotate(n=Count("id"))
        .values_list("verification_id", "n")
    )
    return {
        pk: VersionState(latest.get(pk), open_counts.get(latest[pk].pk, 0) if pk in latest else 0)
        for pk in ids
    }


def draft_latest_versions(drafts: Sequence[Draft]) -> dict[int, DraftVersion]:
    """The newest version (without its text) of each draft, by draft id. For drafts the caller
    has already read through `draft_list_for_user`."""
    return {
        version.draft_id: version
        for version in DraftVersion.objects.defer("text")
        .filter(draft_id__in=[draft.pk for draft in drafts])
        .order_by("draft_id", "-number")
        .distinct("draft_id")
    }
