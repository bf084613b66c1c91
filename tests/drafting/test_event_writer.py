"""Issue 23 req 2: one writer of a run's events. Run events and token batches are numbered,
stored and told by the same statements (apps/drafting/services/events.py); no other product
module numbers or inserts them, so a second path cannot drift from the first."""

import re
from pathlib import Path

import pytest
from django.db import DataError

from apps.accounts.models import User
from apps.cases.models import Case
from apps.drafting.models import Run, RunEvent
from apps.drafting.services import events as event_writer
from apps.drafting.services import token_events
from apps.evidence.models import Packet
from lexweb.errors import NotFound
from tests.conftest import BASE_DIR

WRITER = BASE_DIR / "apps" / "drafting" / "services" / "events.py"
# How a module could number or store run events behind the writer's back.
WRITES = re.compile(
    r"(?:INSERT\s+INTO|COPY)\s+drafting_runevent|SET\s+event_seq|(?<!class )\bRunEvent\s*\(|"
    r"RunEvent\.objects\.(?:a?create|a?bulk_create|a?get_or_create|a?update_or_create)|"
    r"event_seq\s*=\s*F\("
)


def _product_modules() -> list[Path]:
    roots = ("apps", "lexweb", "lexweb_dev")
    return [
        path
        for root in roots
        for path in (BASE_DIR / root).rglob("*.py")
        if "migrations" not in path.parts
    ]


def test_only_the_event_writer_numbers_or_stores_run_events() -> None:
    writers = sorted(
        str(path.relative_to(BASE_DIR))
        for path in _product_modules()
        if WRITES.search(path.read_text())
    )
    assert writers == [str(WRITER.relative_to(BASE_DIR))]


def test_the_token_writer_runs_the_event_writers_statements() -> None:
    source = Path(token_events.__file__).read_text()
    for name in ("LOCK_SQL", "NUMBER_SQL", "INSERT_SQL", "events_numbered", "insert_params"):
        assert f"event_writer.{name}" in source, name


def _run(case: Case, user: User) -> Run:
    packet = Packet.objects.create(
        case=case,
        title="Writer packet",
        status=Packet.Status.FROZEN,
        content_hash="0" * 64,
        created_by=user,
    )
    return Run.objects.create(
        case=case, kind=Run.Kind.SUMMARY, packet=packet, instructions="Write", created_by=user
    )


@pytest.mark.django_db
def test_an_event_that_cannot_be_stored_takes_no_number_and_leaves_no_row(
    lawyer: User, case: Case
) -> None:
    run = _run(case, lawyer)
    first = event_writer.run_event_append(run=run, kind="run.status", payload={"status": "x"})

    with pytest.raises(TypeError):  # not JSON: refused before anything is kept
        event_writer.run_event_append(run=run, kind="stage.tokens", payload={"at": object()})
    with pytest.raises(DataError):  # a NUL that PostgreSQL's jsonb refuses
        event_writer.run_event_append(run=run, kind="stage.tokens", payload={"text": "a\x00b"})
    with pytest.raises(NotFound):
        event_writer.run_event_append(run=run.pk + 10_000, kind="run.status", payload={})

    after = event_writer.run_event_append(run=run, kind="run.status", payload={"status": "y"})
    assert after.seq == first.seq + 1  # no number was used up by the refused ones
    assert list(RunEvent.objects.filter(run=run).values_list("seq", flat=True)) == [1, 2]
    run.refresh_from_db()
    assert run.event_seq == 2
