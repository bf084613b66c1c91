"""Issue 23 req 2: one writer of a run's events. Run events and token batches are numbered,
stored and told by the same statements (apps/drafting/services/events.py); no other product
module numbers or inserts them, so a second path cannot drift from the first."""

import re
from pathlib import Path

from apps.drafting.services import token_events
from tests.conftest import BASE_DIR

WRITER = BASE_DIR / "apps" / "drafting" / "services" / "events.py"
# How a module could number or store run events behind the writer's back.
WRITES = re.compile(
    r"INSERT\s+INTO\s+drafting_runevent|SET\s+event_seq|(?<!class )\bRunEvent\s*\(|"
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
        assert f"events_writer.{name}" in source, name
