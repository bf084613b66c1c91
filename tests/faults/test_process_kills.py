"""Real kills of a real `make run`: one launched lexweb (its own var folder, embedded PostgreSQL
and port) serves every scenario in order, so the launcher starts only twice (the Ctrl-C
scenario starts it again). Each scenario must finish by itself: documents ready with pages
1..N once each, productions and exports with every Bates number once, nothing of a killed
request stored; at the end no temporary file of a dead process and no stored file without a
row is left. The scenarios themselves live in tests/faults/product.py (also run 20 times each
by `make faults`)."""

import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.faults import product as faults
from tests.faults.product import Outcome, Product
from tests.harness.product import artifacts_root, prepare_var, stop_database

pytestmark = pytest.mark.product  # launches the whole product (make run)


@pytest.fixture(scope="module")
def product() -> Iterator[Product]:
    # Directly under the system's temporary folder, as tests/conftest.py's var_dir: another
    # pytest session starting meanwhile makes pytest's own folders private again, and the
    # embedded PostgreSQL (another user) could then not start again after a kill.
    home = Path(tempfile.mkdtemp(prefix="lexweb-faults-"))
    home.chmod(0o755)
    launched = Product(prepare_var(home / "var"))
    try:
        launched.start()
        yield launched
    finally:
        launched.close()  # writes the launcher's output beside the var folder
        stop_database(home / "var")
        kept = artifacts_root() / "products" / f"faults-{os.getpid()}.log"
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(home / "launcher-output.log", kept)
        shutil.rmtree(home, ignore_errors=True)


def _finished_cleanly(outcome: Outcome, launched: Product) -> None:
    problems = outcome.problems()
    assert problems == [], f"{problems}\n" + "".join(launched.lines[-80:])


def test_worker_killed_during_ingest_is_restarted_and_the_document_has_pages_1_to_n_once(
    product: Product,
) -> None:
    mark = len(product.lines)

    outcome = faults.worker_killed_during_ingest(product)

    _finished_cleanly(outcome, product)
    said = "".join(product.lines[mark:])
    assert re.search(
        r"lexweb: cpu worker \(pid \d+\) was killed by SIGKILL at \d\d:\d\d:\d\d after \d+ s; "
        r"restarting it in \d+ s\.",
        said,
    ), said
    assert re.search(r"lexweb: cpu worker started again \(pid \d+, restart \d+\)\.", said)
    # Its host saw it gone: its job was queued again at once, not after the stalled timeout.
    killed = re.search(r"lexweb: cpu worker \(pid (\d+)\) was killed", said)
    assert killed is not None
    assert (
        f"lexweb: queued again 1 job(s) of the worker that ended (pid {killed.group(1)})." in said
    ), said


def test_worker_killed_during_ocr_document_finishes_with_pages_1_to_n_once(
    product: Product,
) -> None:
    _finished_cleanly(faults.worker_killed_during_ocr(product), product)


def test_worker_killed_during_stamping_production_finishes_with_every_bates_number_once(
    product: Product,
) -> None:
    _finished_cleanly(faults.worker_killed_during_stamping(product), product)


def test_worker_killed_during_export_volume_lists_every_bates_number_once(
    product: Product,
) -> None:
    _finished_cleanly(faults.worker_killed_during_export(product), product)


def test_web_killed_during_upload_keeps_no_part_of_it_and_serves_the_next_upload(
    product: Product,
) -> None:
    _finished_cleanly(faults.web_killed_during_upload(product), product)


def test_database_killed_during_job_is_started_again_and_the_job_finishes(
    product: Product,
) -> None:
    mark = len(product.lines)

    outcome = faults.database_killed_during_job(product)

    _finished_cleanly(outcome, product)
    said = "".join(product.lines[mark:])
    assert re.search(
        r"lexweb: PostgreSQL \(pid \d+\) stopped unexpectedly at \d\d:\d\d:\d\d; starting it "
        r"again \(try 1 of 5\)\.",
        said,
    ), said
    assert re.search(r"lexweb: PostgreSQL is running again \(pid \d+\)\.", said)


def test_ctrl_c_during_work_waits_for_the_job_and_the_next_run_finishes_it(
    product: Product,
) -> None:
    mark = len(product.lines)

    outcome = faults.ctrl_c_during_work(product)

    _finished_cleanly(outcome, product)
    said = "".join(product.lines[mark:])
    assert "lexweb: stopping web, workers and database (running jobs get up to 5 s" in said
    assert re.search(r"lexweb: still stopping, waiting up to \d+ s for running jobs\.", said)


def test_nothing_half_left_after_all_the_kills(product: Product) -> None:
    # The sweeper runs at each worker start and every 20 s here; give it a few rounds.
    def leftovers() -> list[str]:
        return faults.orphaned_files(product.var_dir, faults.known_blobs(product))

    with contextlib.suppress(faults.FaultError):
        faults.wait_for("the sweep", lambda: not leftovers(), 120, every=5)
    assert leftovers() == []
    assert Path(product.var_dir / "run" / "processes.json").exists()
