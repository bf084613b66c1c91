"""The sweeper: dead processes' temporaries and unreferenced stored files go, nothing else does.

Processes are real and killed with SIGKILL; files are real; every row check is made against
the real PostgreSQL.
"""

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import pymupdf
import pytest
from django.conf import settings
from django.db import connection
from django.test import Client
from django.utils import timezone

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import production_services, services, storage
from apps.documents.models import Blob, Document, Production, ProductionExport
from apps.operations.services import sweeper
from lexweb import tempdirs
from tests.conftest import BASE_DIR, database_url_for_tests
from tests.operations.test_readiness import _empty_job_tables

pytestmark = pytest.mark.django_db(databases="__all__")

HOUR = 3600
DEADLINE = 90.0


@pytest.fixture(autouse=True)
def clean_jobs(transactional_db: None) -> Iterator[None]:
    """No job of this file (a stamping job whose worker was killed) is left for later tests."""
    _empty_job_tables()
    yield
    _empty_job_tables()


@pytest.fixture
def roots(settings: Any, tmp_path: Path) -> dict[str, Path]:
    """A private blob store and upload spool folder, and the environment for child processes."""
    var = tmp_path / "var"
    settings.LEXWEB_BLOB_ROOT = var / "blobs"
    settings.FILE_UPLOAD_TEMP_DIR = str(var / "tmp")
    sweeper.files_sweep()  # the first sweep of an empty store claims it for this database
    assert (var / "blobs" / sweeper.MARKER).exists()
    return {"var": var, "blobs": var / "blobs", "uploads": var / "tmp"}


def _child_env(roots: dict[str, Path]) -> dict[str, str]:
    return {
        **os.environ,
        "DATABASE_URL": database_url_for_tests(),
        "LEXWEB_VAR_DIR": str(roots["var"]),
        "LEXWEB_BLOB_ROOT": str(roots["blobs"]),
        "LEXWEB_LOG_LEVEL": "WARNING",
        "LEXWEB_CLUSTER_HEALTH_CRON": "",
        "LEXWEB_JOB_RECOVERY_CRON": "",
        "LEXWEB_SWEEP_CRON": "",
    }


def _wait_for(condition: Callable[[], bool], what: str, deadline: float = DEADLINE) -> None:
    end = time.monotonic() + deadline
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _folders_of(root: Path, pid: int) -> list[Path]:
    if not root.is_dir():
        return []
    return [
        p
        for p in root.iterdir()
        if (owner := tempdirs.parse(p.name)) is not None and owner.pid == pid
    ]


def _files_in(folders: list[Path]) -> list[Path]:
    return [f for folder in folders for f in folder.rglob("*") if f.is_file()]


def _store_file(data: bytes, *, age: float) -> Path:
    """A file in the store with no row, last touched `age` seconds ago."""
    path = storage.blob_path(hashlib.sha256(data).hexdigest())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    _age(path, age)
    return path


def _age(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def _pdf(pages: int, label: str) -> bytes:
    with pymupdf.open() as document:
        for number in range(1, pages + 1):
            page = document.new_page()
            page.insert_text((72, 300), f"{label} page {number}: the quick brown fox", fontsize=12)
        return document.tobytes()


def _upload(case: Case, user: User, name: str, data: bytes) -> Document:
    import io

    outcome = services.document_upload(
        case=case, uploaded_by=user, filename=name, source=io.BytesIO(data), origin="client"
    )
    assert outcome.status == "created", outcome.error
    assert outcome.document is not None
    return outcome.document


@pytest.fixture
def holders(roots: dict[str, Path]) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.operations.hold_temp_files"],
            cwd=BASE_DIR,
            env=_child_env(roots),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        started.append(process)
        assert process.stdout is not None and process.stdin is not None
        assert process.stdout.readline().strip() == b"spooled"
        process.stdin.write(b"%PDF-1.7\n" + b"1" * (2 * storage.CHUNK))
        process.stdin.flush()
        # Both temporaries exist and the receiving one has its first chunk on disk.
        _wait_for(
            lambda: any(
                f.stat().st_size >= storage.CHUNK
                for f in _files_in(_folders_of(roots["blobs"] / "tmp", process.pid))
            ),
            "the holder to receive into the store's temporary folder",
        )
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


# --- Temporaries of dead processes -----------------------------------------------------------


@pytest.mark.product  # real processes, killed
def test_sigkilled_uploader_leaves_temporaries_that_the_sweep_removes_keeping_a_live_ones(
    roots: dict[str, Path],
    lawyer: User,
    case: Case,
    holders: Callable[[], subprocess.Popen[bytes]],
) -> None:
    kept = _upload(case, lawyer, "kept.pdf", _pdf(2, "kept"))
    _age(storage.blob_path(kept.blob.sha256), 2 * HOUR)  # old, but a row refers to it
    killed, live = holders(), holders()
    killed_folders = _folders_of(roots["uploads"], killed.pid) + _folders_of(
        roots["blobs"] / "tmp", killed.pid
    )
    live_files = _files_in(
        _folders_of(roots["uploads"], live.pid) + _folders_of(roots["blobs"] / "tmp", live.pid)
    )
    assert len(_files_in(killed_folders)) == 2 and len(live_files) == 2

    os.kill(killed.pid, signal.SIGKILL)
    killed.wait()
    assert all(folder.exists() for folder in killed_folders)  # what a crash leaves

    report = sweeper.files_sweep()

    assert report.dead_temp == 2
    assert not any(folder.exists() for folder in killed_folders)
    assert all(f.exists() for f in live_files), "a live process's temporaries were removed"
    assert storage.blob_path(kept.blob.sha256).read_bytes()[:5] == b"%PDF-"
    assert Blob.objects.filter(pk=kept.blob_id).exists()
    assert report.orphan_files == report.orphan_rows == 0


@pytest.mark.product  # a real worker process, killed
def test_worker_sigkilled_while_stamping_leaves_a_temporary_volume_that_the_sweep_removes(
    roots: dict[str, Path], lawyer: User, case: Case, run_jobs: Callable[[], None]
) -> None:
    documents = [_upload(case, lawyer, f"d{n}.pdf", _pdf(150, f"doc {n}")) for n in range(2)]
    run_jobs()  # ingest
    production = production_services.production_create(
        case=case,
        actor=lawyer,
        volume="VOL001",
        prefix="ACME",
        document_ids=[d.pk for d in documents],
    )
    worker = subprocess.Popen(
        [sys.executable, str(BASE_DIR / "manage.py"), "procrastinate", "worker", "--queues", "cpu"],
        cwd=BASE_DIR,
        env=_child_env(roots),
    )
    try:
        # Stamping works in a temporary folder of its own under the worker's process folder.
        _wait_for(
            lambda: any(
                p.is_dir()
                for f in _folders_of(roots["blobs"] / "tmp", worker.pid)
                for p in f.iterdir()
            ),
            "the worker to start stamping",
        )
        os.kill(worker.pid, signal.SIGKILL)
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait()
    left = _folders_of(roots["blobs"] / "tmp", worker.pid)
    production.refresh_from_db()
    assert left and production.status != Production.Status.READY

    report = sweeper.files_sweep()

    assert report.dead_temp >= 1
    assert not any(folder.exists() for folder in left)
    for document in documents:
        assert storage.blob_path(document.blob.sha256).exists()
    assert Blob.objects.count() == 2


def test_an_upload_spooled_to_disk_lands_in_the_receiving_process_folder(
    roots: dict[str, Path], lawyer_api: Client, case: Case
) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    big = _pdf(1, "big") + b"%" + b"0" * (settings.FILE_UPLOAD_MAX_MEMORY_SIZE + 1)
    response = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {"files": [SimpleUploadedFile("big.pdf", big)], "origin": "client"},
    )

    assert response.status_code in (201, 400), response.content
    mine = _folders_of(roots["uploads"], os.getpid())
    assert len(mine) == 1, "Django did not spool the upload into this process's folder"
    assert _files_in(mine) == []  # closed and removed once the request ended


# --- Stored files nothing refers to ------------------------------------------------------------


def test_orphan_files_go_only_past_the_orphan_age_and_referenced_ones_always_stay(
    roots: dict[str, Path], lawyer: User, case: Case
) -> None:
    referenced = _upload(case, lawyer, "ref.pdf", _pdf(1, "ref"))
    _age(storage.blob_path(referenced.blob.sha256), 10 * HOUR)
    young = _store_file(b"young orphan", age=60)
    below = _store_file(b"just below the age", age=HOUR - 30)
    above = _store_file(b"just above the age", age=HOUR + 30)
    old = _store_file(b"old orphan", age=5 * HOUR)

    report = sweeper.files_sweep(orphan_seconds=HOUR)

    assert young.exists() and below.exists()
    assert not above.exists() and not old.exists()
    assert storage.blob_path(referenced.blob.sha256).exists()
    assert (report.orphan_files, report.kept_young) == (2, 2)
    assert Blob.objects.count() == 1  # the placeholder rows were rolled back


def test_default_orphan_age_is_the_setting(roots: dict[str, Path], settings: Any) -> None:
    settings.LEXWEB_SWEEP_ORPHAN_SECONDS = 2 * HOUR
    kept = _store_file(b"ninety minutes", age=HOUR + 1800)
    gone = _store_file(b"three hours", age=3 * HOUR)

    sweeper.files_sweep()

    assert kept.exists() and not gone.exists()


def test_a_blob_row_nothing_refers_to_goes_with_its_file_once_old(
    roots: dict[str, Path], lawyer: User, case: Case
) -> None:
    # What a stamping job killed after storing its volume, before recording it, leaves.
    old_path = _store_file(b"volume of a killed stamping job", age=2 * HOUR)
    old = Blob.objects.create(
        sha256=old_path.name, size=31, created_at=timezone.now() - timedelta(hours=2)
    )
    young_path = _store_file(b"volume being recorded right now", age=2 * HOUR)
    young = Blob.objects.create(sha256=young_path.name, size=31)
    referenced = _upload(case, lawyer, "ref.pdf", _pdf(1, "ref"))
    Blob.objects.filter(pk=referenced.blob_id).update(created_at=timezone.now() - timedelta(days=9))

    report = sweeper.files_sweep()

    assert not Blob.objects.filter(pk=old.pk).exists() and not old_path.exists()
    assert Blob.objects.filter(pk=young.pk).exists() and young_path.exists()
    assert Blob.objects.filter(pk=referenced.blob_id).exists()
    assert report.orphan_rows == 1


def test_every_foreign_key_to_blob_counts_as_a_reference() -> None:
    found = {(model, name) for model, name in sweeper._references()}

    assert {(Document, "blob"), (Production, "output"), (ProductionExport, "output")} <= found


def test_a_file_whose_row_is_being_written_while_the_sweep_looks_is_kept(
    roots: dict[str, Path],
) -> None:
    path = _store_file(b"adopted meanwhile", age=3 * HOUR)
    with psycopg.connect(database_url_for_tests(), autocommit=False) as other:
        # Another process is recording this file: its row is inserted, not yet committed.
        other.execute(
            "INSERT INTO documents_blob (sha256, size, created_at) VALUES (%s, 17, NOW())",
            [path.name],
        )
        result: dict[str, sweeper.SweepReport] = {}
        sweep = threading.Thread(target=lambda: result.update(report=_sweep_in_thread()))
        sweep.start()
        _wait_for(_someone_waits_on_a_lock, "the sweep to wait for the other transaction")
        other.commit()
        sweep.join(DEADLINE)

    assert path.exists()
    assert result["report"].kept_in_use == 1 and result["report"].orphan_files == 0


def _sweep_in_thread() -> sweeper.SweepReport:
    try:
        return sweeper.files_sweep()
    finally:
        connection.close()


def _someone_waits_on_a_lock() -> bool:
    with psycopg.connect(database_url_for_tests(), autocommit=True) as probe:
        row = probe.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ).fetchone()
    return bool(row and row[0])


def test_an_upload_of_the_same_bytes_after_the_sweep_stores_its_file_again(
    roots: dict[str, Path], lawyer: User, case: Case
) -> None:
    data = _pdf(1, "again")
    orphan = _store_file(data, age=3 * HOUR)
    sweeper.files_sweep()
    assert not orphan.exists()

    document = _upload(case, lawyer, "again.pdf", data)

    assert storage.blob_path(document.blob.sha256).read_bytes() == data


def test_storing_bytes_already_in_the_store_touches_the_file_so_the_sweep_keeps_it(
    roots: dict[str, Path], lawyer: User, case: Case
) -> None:
    data = _pdf(1, "touched")
    orphan = _store_file(data, age=3 * HOUR)

    _upload(case, lawyer, "touched.pdf", data)

    assert time.time() - orphan.stat().st_mtime < 60
    sweeper.files_sweep()
    assert orphan.exists()


def test_a_sweep_killed_mid_way_is_undone_by_the_next(roots: dict[str, Path]) -> None:
    trash = roots["blobs"] / "tmp" / sweeper.TRASH
    trash.mkdir(parents=True, exist_ok=True)
    claimed = hashlib.sha256(b"claimed").hexdigest()
    Blob.objects.create(sha256=claimed, size=7)
    (trash / claimed).write_bytes(b"claimed")
    unclaimed = hashlib.sha256(b"unclaimed").hexdigest()
    (trash / unclaimed).write_bytes(b"unclaimed")

    report = sweeper.files_sweep()

    assert storage.blob_path(claimed).read_bytes() == b"claimed"
    assert not (trash / unclaimed).exists() and not storage.blob_path(unclaimed).exists()
    assert report.restored == 1


def test_a_second_sweep_at_the_same_time_is_skipped(roots: dict[str, Path]) -> None:
    old = _store_file(b"left for the running sweep", age=3 * HOUR)
    with psycopg.connect(database_url_for_tests(), autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [sweeper._LOCK_KEY])

        report = sweeper.files_sweep()

    assert report.skipped and old.exists()
    assert "skipped" in report.line()


def test_loose_temporaries_of_an_older_layout_go_once_stale(roots: dict[str, Path]) -> None:
    tmp = roots["blobs"] / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    stale, fresh = tmp / "tmpabc123", tmp / "tmpdef456"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"y")
    _age(stale, 2 * HOUR)

    report = sweeper.files_sweep()

    assert not stale.exists() and fresh.exists()
    assert report.stale_temp == 1


def test_the_sweep_logs_one_line_with_what_it_removed(
    roots: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    _store_file(b"old orphan for the log", age=3 * HOUR)

    with caplog.at_level("INFO", logger="apps.operations.services.sweeper"):
        sweeper.files_sweep()

    lines = [r.getMessage() for r in caplog.records if r.name.endswith("sweeper")]
    assert len(lines) == 1
    assert lines[0].startswith("sweeper: removed 1 stored file(s) without a row")


def test_a_store_that_belongs_to_another_database_keeps_its_files(
    roots: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    # E.g. the test suite's worker pointed at the var/blobs of `make run`: none of its rows
    # are in this database, and none of its files may go.
    (roots["blobs"] / sweeper.MARKER).write_text('{"database": "lexweb", "oid": 1}\n')
    other_databases = _store_file(b"an original of the other database", age=30 * 24 * HOUR)
    dead_tmp = roots["blobs"] / "tmp" / tempdirs.folder_name(_dead_owner())
    dead_tmp.mkdir(parents=True)

    with caplog.at_level("INFO", logger="apps.operations.services.sweeper"):
        report = sweeper.files_sweep()

    assert other_databases.exists()
    assert not dead_tmp.exists()  # a dead process's temporaries are nobody's data
    assert report.foreign_store == "'lexweb' (oid 1)" and report.orphan_files == 0
    assert "stored files not swept: the store belongs to database 'lexweb'" in caplog.text


def test_the_first_sweep_claims_the_store_for_its_database(roots: dict[str, Path]) -> None:
    (roots["blobs"] / sweeper.MARKER).unlink()

    sweeper.files_sweep()

    marker = json.loads((roots["blobs"] / sweeper.MARKER).read_text())
    assert marker["database"] == connection.settings_dict["NAME"]
    assert sweeper.files_sweep().foreign_store == ""


def _dead_owner() -> tempdirs.Owner:
    process = subprocess.Popen(["true"])
    process.wait()
    me = tempdirs.this_process()
    return tempdirs.Owner(boot=me.boot, pid=process.pid, start=1, host=me.host)


def test_another_hosts_temporaries_and_a_reused_pid_are_judged_right(
    roots: dict[str, Path],
) -> None:
    tmp = roots["blobs"] / "tmp"
    me = tempdirs.this_process()
    elsewhere = tmp / tempdirs.folder_name(tempdirs.Owner(me.boot, 1, 1, "another-host"))
    # Our own pid, but a different start time: the process that wrote it is gone.
    reused = tmp / tempdirs.folder_name(tempdirs.Owner(me.boot, me.pid, me.start + 1, me.host))
    earlier_boot = tmp / tempdirs.folder_name(tempdirs.Owner("0badb007", me.pid, me.start, me.host))
    mine = tmp / tempdirs.folder_name(me)
    for folder in (elsewhere, reused, earlier_boot, mine):
        folder.mkdir(parents=True)

    report = sweeper.files_sweep()

    assert elsewhere.exists() and mine.exists()
    assert not reused.exists() and not earlier_boot.exists()
    assert report.dead_temp == 2


def test_an_unclaimed_store_full_of_files_is_not_claimed_by_a_database_without_any(
    roots: dict[str, Path],
) -> None:
    (roots["blobs"] / sweeper.MARKER).unlink()
    someone_elses = _store_file(b"written before any sweep, by another database", age=9 * HOUR)

    report = sweeper.files_sweep()

    assert someone_elses.exists() and not (roots["blobs"] / sweeper.MARKER).exists()
    assert report.foreign_store.startswith("unknown (no marker")
