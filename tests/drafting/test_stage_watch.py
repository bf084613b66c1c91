"""A stage's watch and its claim (apps/drafting/pipeline): the stages of one worker are watched
by one query for all of them, and each hears only of its own end (a cancelled run, a newer
attempt); a stage whose claim raises (here a table a migration has not created yet) fails its
run with the reason instead of leaving it queued for ever."""

import asyncio

import pytest
from asgiref.sync import async_to_sync
from django.db import ProgrammingError, connection

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Run, RunEvent, Stage
from apps.drafting.pipeline import execute, watch
from apps.evidence.models import Packet
from tests.drafting import run_fixtures as rf

pytestmark = pytest.mark.django_db(transaction=True)


def _running_stages(case: Case, user: User, count: int) -> list[Stage]:
    packet = Packet.objects.create(
        case=case, title="Watch", status=Packet.Status.FROZEN, content_hash="0" * 64,
        created_by=user,
    )  # fmt: skip
    stages = []
    for _ in range(count):
        run = Run.objects.create(
            case=case, kind=Run.Kind.SUMMARY, packet=packet, instructions="W", created_by=user,
            status=Run.Status.RUNNING,
        )  # fmt: skip
        stages.append(
            Stage.objects.create(
                run=run,
                position=1,
                name=Stage.Name.SUMMARIZER,
                role="summarizer",
                status=Stage.Status.RUNNING,
                attempt=1,
            )
        )
    return stages


@pytest.mark.slow
def test_each_watched_stage_hears_only_of_its_own_end(lawyer: User, case: Case) -> None:
    cancelled, moved_on, going_on = _running_stages(case, lawyer, 3)
    assert watch.stages_still_ours([(s.pk, 1) for s in (cancelled, moved_on, going_on)]) == {
        (cancelled.pk, 1), (moved_on.pk, 1), (going_on.pk, 1),
    }  # fmt: skip

    async def scenario() -> tuple[bool, bool, bool]:
        watched = {s.pk: watch.watch((s.pk, 1)) for s in (cancelled, moved_on, going_on)}
        await asyncio.sleep(watch.WATCH_SECONDS * 2)
        assert not any(lost.done() for lost, _found in watched.values())
        await Run.objects.filter(pk=cancelled.run_id).aupdate(status=Run.Status.CANCELLED)
        await Stage.objects.filter(pk=moved_on.pk).aupdate(attempt=2)
        for pk in (cancelled.pk, moved_on.pk):
            await asyncio.wait_for(asyncio.shield(watched[pk][0]), 5)
        await asyncio.sleep(watch.WATCH_SECONDS * 2)
        states = tuple(watched[s.pk][0].done() for s in (cancelled, moved_on, going_on))
        for pk, (lost, found) in watched.items():
            watch.unwatch((pk, 1), lost, found)
        return states  # type: ignore[return-value]

    assert async_to_sync(scenario)() == (True, True, False)


def test_a_stage_whose_claim_raises_fails_its_run_with_the_reason(lawyer: User, case: Case) -> None:
    packet = rf.frozen_packet(case=case, user=lawyer)
    with rf.site_running({"summarizer": "A summary."}):
        run = rf.start(user=lawyer, case=case, packet=packet, kind="summary")
    stage = run.stages.get()
    events = RunEvent.objects.filter(run=run).count()
    # As if the worker ran before a migration that creates a table it reads.
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE evidence_frozenpage RENAME TO evidence_frozenpage_away")
    try:
        with pytest.raises(ProgrammingError):
            async_to_sync(execute.stage_run)(stage_id=stage.pk)
    finally:
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE evidence_frozenpage_away RENAME TO evidence_frozenpage")

    run.refresh_from_db()
    stage.refresh_from_db()
    assert run.status == Run.Status.FAILED
    assert (
        'Internal error (ProgrammingError: relation "evidence_frozenpage" does not exist) '
        "before the stage started"
    ) in run.error
    assert stage.status == Stage.Status.FAILED
    assert stage.attempt == 0  # the claim was rolled back: no attempt started
    kinds = list(
        RunEvent.objects.filter(run=run, seq__gt=events)
        .order_by("seq")
        .values_list("kind", flat=True)
    )
    assert kinds[0] == "stage.status" and kinds[-1] == "run.status"
    # Its job again (a retry, a recovered job): nothing more happens.
    async_to_sync(execute.stage_run)(stage_id=stage.pk)
    assert Run.objects.get(pk=run.pk).status == Run.Status.FAILED
