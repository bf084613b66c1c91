"""`manage.py backup` and `restore`: the database and the original store, consistent together,
restored into a second, empty database and store, verified by SHA-256 and content hash."""

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
import pymupdf
import pytest
from django.conf import settings
from django.db import connection, transaction

from apps.accounts.models import User
from apps.cases import services as case_services
from apps.cases.models import Case
from apps.documents import services as document_services
from apps.documents import storage
from apps.evidence.models import Packet
from apps.operations.services import backup
from tests.drafting.makers import packet_of, read_pdf
from tests.faults.product import Product
from tests.harness.commands import command_as_process
from tests.harness.product import prepare_var, stop_database
from tests.operations.processes import clean_jobs, start_worker, wait_until, worker_env

BASE_DIR = Path(settings.BASE_DIR)

__all__ = ["clean_jobs"]  # a fixture


def _server_conninfo(dbname: str) -> dict[str, Any]:
    conf = connection.settings_dict
    info: dict[str, Any] = {"dbname": dbname, "user": conf["USER"], "autocommit": True}
    for key, name in (("host", "HOST"), ("port", "PORT"), ("password", "PASSWORD")):
        if conf[name]:
            info[key] = conf[name]
    return info


@pytest.fixture
def second_database() -> Iterator[str]:
    """An empty database on the test server, for the restore; its DATABASE_URL."""
    name = f"{connection.settings_dict['NAME']}_restore"[:63]
    with psycopg.connect(**_server_conninfo("postgres")) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    conf = connection.settings_dict
    host = quote(conf["HOST"], safe="") if conf["HOST"].startswith("/") else conf["HOST"]
    netloc = host + (f":{conf['PORT']}" if conf["PORT"] else "")
    auth = quote(conf["USER"], safe="") + (
        ":" + quote(conf["PASSWORD"], safe="") if conf["PASSWORD"] else ""
    )
    yield f"postgres://{auth}@{netloc}/{name}"
    with psycopg.connect(**_server_conninfo("postgres")) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def store(settings: Any, tmp_path: Path) -> Path:
    settings.LEXWEB_BLOB_ROOT = tmp_path / "store"
    return Path(settings.LEXWEB_BLOB_ROOT)


def _restore(
    directory: Path, database_url: str, blob_root: Path
) -> subprocess.CompletedProcess[str]:
    """`manage.py restore DIR` as the admin runs it, on a new install (database and store)."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "LEXWEB_BLOB_ROOT": str(blob_root),
        "LEXWEB_LOG_LEVEL": "WARNING",
    }
    return subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "restore", str(directory)],
        cwd=BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _rows(database_url: str, sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    name = database_url.rsplit("/", 1)[1]
    with psycopg.connect(**_server_conninfo(name)) as conn:
        return conn.execute(sql, params).fetchall()


def _pdf(lines: list[str], pages: int = 1) -> bytes:
    with pymupdf.open() as pdf:
        for number in range(pages):
            page = pdf.new_page()
            for n, line in enumerate(lines):
                page.insert_text((72, 72 + 16 * n), f"{line} ({number + 1})", fontsize=11)
        data: bytes = pdf.tobytes()
    return data


@pytest.mark.slow
def test_backup_restores_into_an_empty_install_and_every_hash_verifies(
    transactional_db: None, store: Path, tmp_path: Path, second_database: str, lawyer: User,
    case: Case,
) -> None:  # fmt: skip
    documents = [
        read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."]),
        read_pdf(case=case, user=lawyer, lines=["Rent was 1,200 a month."], filename="b.pdf"),
    ]
    packet = packet_of(case=case, user=lawyer, documents=documents)
    assert packet.status == Packet.Status.FROZEN

    ran = command_as_process("backup", str(tmp_path / "backup"))

    assert ran.returncode == 0, ran.stderr
    assert "snapshot" in ran.stdout and "backup written to" in ran.stdout
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    shas = {document.blob.sha256 for document in documents}
    assert shas <= {sha for sha, _ in manifest["blobs"]["files"]}
    assert manifest["counts"] == {"documents": 2, "frozen_packets": 1}
    assert ["evidence", "0001_initial"] in manifest["migrations"]

    new_store = tmp_path / "new-store"
    restored = _restore(tmp_path / "backup", second_database, new_store)

    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert "1 frozen packet(s) by content hash" in restored.stdout, restored.stdout
    assert "restored into" in restored.stdout
    for sha in shas:
        assert backup._sha256_file(new_store / sha[:2] / sha[2:4] / sha)[0] == sha
    assert _rows(second_database, "SELECT content_hash FROM evidence_packet") == [
        (packet.content_hash,)
    ]
    # The restored database is a working lexweb: no migration of this code is missing.
    check = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "migrate", "--check"],
        cwd=BASE_DIR,
        env={**os.environ, "DATABASE_URL": second_database, "LEXWEB_BLOB_ROOT": str(new_store)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.slow
def test_restore_reports_a_frozen_packet_whose_pages_no_longer_hash_to_its_content_hash(
    transactional_db: None, store: Path, tmp_path: Path, second_database: str, lawyer: User,
    case: Case,
) -> None:  # fmt: skip
    document = read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    packet = packet_of(case=case, user=lawyer, documents=[document])
    # A damaged row: the frozen packet's guard trigger set aside for this one write.
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE evidence_packet DISABLE TRIGGER USER")
        try:
            Packet.objects.filter(pk=packet.pk).update(content_hash="0" * 64)
        finally:
            cursor.execute("ALTER TABLE evidence_packet ENABLE TRIGGER USER")
    assert command_as_process("backup", str(tmp_path / "backup")).returncode == 0

    restored = _restore(tmp_path / "backup", second_database, tmp_path / "new-store")

    assert restored.returncode == 1
    assert f"frozen packet {packet.pk} does not match its content hash" in restored.stderr


@pytest.mark.product
def test_a_backup_taken_while_a_worker_reads_and_an_upload_commits_restores_consistently(
    clean_jobs: None, store: Path, tmp_path: Path, second_database: str, lawyer: User,
    case: Case,
) -> None:  # fmt: skip
    being_read = document_services.document_upload(
        case=case, uploaded_by=lawyer, filename="long.pdf",
        source=io.BytesIO(_pdf(["Deposit held in trust."] * 30, pages=40)), origin="client",
    ).document  # fmt: skip
    assert being_read is not None
    worker = start_worker(env=worker_env(blob_root=store))
    stored, release = threading.Event(), threading.Event()
    arriving: dict[str, str] = {}

    def upload_in_flight() -> None:
        # Its file is in the store and its row written but not committed at the snapshot; it
        # commits while pg_dump runs.
        try:
            with transaction.atomic():
                outcome = document_services.document_upload(
                    case=case, uploaded_by=lawyer, filename="late.pdf",
                    source=io.BytesIO(_pdf(["Notice served late."])), origin="client",
                )  # fmt: skip
                assert outcome.document is not None
                arriving["sha"] = outcome.document.blob.sha256
                stored.set()
                release.wait(timeout=60)
        finally:
            connection.close()

    uploader = threading.Thread(target=upload_in_flight)
    uploader.start()
    try:
        assert stored.wait(timeout=60)
        wait_until(
            lambda: _rows_here(
                "SELECT 1 FROM procrastinate_jobs WHERE status IN ('doing', 'succeeded')"
            ),
            timeout=60,
            what="the worker taking the first document",
        )

        def progress(line: str) -> None:
            if line.startswith("snapshot"):
                release.set()
                uploader.join(timeout=60)

        report = backup.backup_create(directory=tmp_path / "backup", progress=progress)
    finally:
        release.set()
        uploader.join(timeout=60)
        worker.stop()

    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    in_backup = {sha for sha, _ in manifest["blobs"]["files"]}
    assert storage.blob_path(arriving["sha"]).is_file()  # written, but after the snapshot
    assert arriving["sha"] not in in_backup
    assert being_read.blob.sha256 in in_backup
    assert report.documents == 1

    new_store = tmp_path / "new-store"
    restored = _restore(tmp_path / "backup", second_database, new_store)

    assert restored.returncode == 0, restored.stdout + restored.stderr
    # No row points at a file the restored store lacks.
    for (sha,) in _rows(second_database, "SELECT sha256 FROM documents_blob"):
        assert (new_store / sha[:2] / sha[2:4] / sha).is_file(), sha
    assert _rows(second_database, "SELECT filename FROM documents_document") == [("long.pdf",)]

    # `make run` on the restored install serves it: the document the worker was reading is
    # read to the end by the new install's worker, and its original downloads byte for byte.
    _serve_restored(second_database, new_store, case, being_read.pk, being_read.blob.sha256)


def _serve_restored(
    database_url: str, blob_root: Path, case: Case, document_id: int, sha256: str
) -> None:
    home = Path(tempfile.mkdtemp(prefix="lexweb-restored-"))
    home.chmod(0o755)
    product = Product(
        prepare_var(home / "var"), DATABASE_URL=database_url, LEXWEB_BLOB_ROOT=str(blob_root)
    )
    try:
        product.start()  # migrations (none left), the first admin, web and workers
        lawyer_token = product._make_token("lawyer@firm.test")
        headers = {"Authorization": f"Bearer {lawyer_token}"}
        base = f"{product.base}/api/v1/cases/{case.pk}/documents/{document_id}"
        with httpx.Client(headers=headers, timeout=30, trust_env=False) as client:

            def read() -> dict[str, Any] | None:
                answer = client.get(base)
                assert answer.status_code == 200, answer.text
                document: dict[str, Any] = answer.json()
                return document if document["status"] == "ready" else None

            document = wait_until(read, timeout=120, what="the restored document read")
            assert document["page_count"] == 40, document
            original = client.get(f"{base}/original")
            assert original.status_code == 200, original.text[:500]
            assert hashlib.sha256(original.content).hexdigest() == sha256
            ready = client.get(f"{product.base}/readyz")
            assert ready.status_code == 200, ready.text
    finally:
        product.close()
        stop_database(home / "var")
        shutil.rmtree(home, ignore_errors=True)


@pytest.mark.slow
def test_a_job_running_at_the_backup_is_queued_again_by_the_restored_installs_recovery(
    clean_jobs: None, store: Path, tmp_path: Path, second_database: str, lawyer: User,
    case: Case,
) -> None:  # fmt: skip
    job_id = case_services.case_worker_check_request(actor=lawyer, case=case)
    worker_id = _rows_here("SELECT worker_id FROM procrastinate_register_worker_v1()")[0][0]
    fetched = _rows_here(
        "SELECT id FROM procrastinate_fetch_job_v2(%s::varchar[], %s)", [["cpu"], worker_id]
    )
    assert fetched == [(job_id,)]  # running in a live worker (it beat just now) at the backup
    assert command_as_process("backup", str(tmp_path / "backup")).returncode == 0

    restored = _restore(tmp_path / "backup", second_database, tmp_path / "new-store")

    assert restored.returncode == 0, restored.stdout + restored.stderr
    assert "1 job(s) were running when the backup was taken" in restored.stdout
    # That worker does not work for the restored install: the first recovery there (a
    # worker's start) queues its job again at once, not once its heartbeat is old.
    assert _rows(second_database, "SELECT count(*) FROM procrastinate_workers") == [(0,)]
    recovered = subprocess.run(
        [sys.executable, str(BASE_DIR / "manage.py"), "shell", "-c",
         "from apps.operations.services import recovery; "
         "print('RETRIED', recovery.jobs_recover_stalled().retried)"],
        cwd=BASE_DIR,
        env={**os.environ, "DATABASE_URL": second_database,
             "LEXWEB_BLOB_ROOT": str(tmp_path / "new-store"), "LEXWEB_LOG_LEVEL": "WARNING"},
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert f"RETRIED [{job_id}]" in recovered.stdout, recovered.stdout + recovered.stderr
    assert _rows(
        second_database, "SELECT status FROM procrastinate_jobs WHERE id = %s", [job_id]
    ) == [("todo",)]


def _rows_here(sql: str, params: list[Any] | None = None) -> list[tuple[Any, ...]]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return list(cursor.fetchall())


# --- Refusals -------------------------------------------------------------------------------


@pytest.fixture
def made_backup(
    transactional_db: None, store: Path, tmp_path: Path, lawyer: User, case: Case
) -> Path:
    read_pdf(case=case, user=lawyer, lines=["The lease began on 3 March 2024."])
    ran = command_as_process("backup", str(tmp_path / "backup"))
    assert ran.returncode == 0, ran.stderr
    return tmp_path / "backup"


def _one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    return lines[0]


def test_restore_refuses_a_database_that_is_not_empty(
    made_backup: Path, settings: Any, tmp_path: Path
) -> None:
    settings.LEXWEB_BLOB_ROOT = tmp_path / "empty-store"

    ran = command_as_process("restore", str(made_backup))

    assert ran.returncode == 1
    line = _one_line(ran.stderr)
    assert f"Database {connection.settings_dict['NAME']} is not empty" in line
    assert "public." in line  # names what it found
    assert not (tmp_path / "empty-store").exists()  # nothing written


def test_restore_refuses_a_tampered_stored_file_before_touching_anything(
    made_backup: Path, settings: Any, tmp_path: Path
) -> None:
    manifest = json.loads((made_backup / "manifest.json").read_text())
    sha = manifest["blobs"]["files"][0][0]
    tampered = made_backup / "blobs" / sha[:2] / sha[2:4] / sha
    data = tampered.read_bytes()
    tampered.unlink()  # a hard link to the store's file: replace it, never write through it
    tampered.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    settings.LEXWEB_BLOB_ROOT = tmp_path / "empty-store"

    ran = command_as_process("restore", str(made_backup))

    assert ran.returncode == 1
    assert "does not match its SHA-256" in _one_line(ran.stderr)
    assert command_as_process("restore", "--verify-only", str(made_backup)).returncode == 1


def test_restore_refuses_a_tampered_dump(made_backup: Path) -> None:
    with (made_backup / "database.dump").open("ab") as dump:
        dump.write(b"\0")

    ran = command_as_process("restore", str(made_backup))

    assert ran.returncode == 1
    assert "database.dump is missing or does not match its SHA-256" in _one_line(ran.stderr)


def test_restore_refuses_a_folder_without_manifest_and_a_manifest_that_is_not_one(
    made_backup: Path,
) -> None:
    manifest = made_backup / "manifest.json"
    text = manifest.read_text()
    manifest.unlink()
    ran = command_as_process("restore", str(made_backup))
    assert ran.returncode == 1
    assert "manifest.json is missing" in _one_line(ran.stderr)

    broken = json.loads(text)
    broken["blobs"]["files"][0][0] = "../../etc/passwd"
    manifest.write_text(json.dumps(broken))
    ran = command_as_process("restore", str(made_backup))
    assert ran.returncode == 1
    assert "is not a valid backup manifest" in _one_line(ran.stderr)


def test_verify_only_checks_a_good_backup_and_changes_nothing(made_backup: Path) -> None:
    ran = command_as_process("restore", "--verify-only", str(made_backup))

    assert ran.returncode == 0, ran.stderr
    assert "backup is intact" in ran.stdout


def test_backup_refuses_a_folder_that_is_not_empty_or_cannot_be_made(
    transactional_db: None, store: Path, tmp_path: Path
) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "old.txt").write_text("x")
    ran = command_as_process("backup", str(tmp_path / "full"))
    assert ran.returncode == 1
    assert "is not empty" in _one_line(ran.stderr)

    (tmp_path / "a-file").write_text("x")
    ran = command_as_process("backup", str(tmp_path / "a-file"))
    assert ran.returncode == 1
    assert "is not a folder" in _one_line(ran.stderr)

    ran = command_as_process("backup", str(tmp_path / "a-file" / "below"))
    assert ran.returncode == 1
    assert "Cannot make" in _one_line(ran.stderr)

    ran = command_as_process("backup", str(store / "inside"))
    assert ran.returncode == 1
    assert "inside the store" in _one_line(ran.stderr)
    assert not (store / "inside").exists()

    ran = command_as_process("backup")
    assert ran.returncode == 1
    assert "the following arguments are required: DIR" in _one_line(ran.stderr)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_backup_refuses_a_folder_it_cannot_write(
    transactional_db: None, store: Path, tmp_path: Path
) -> None:
    (tmp_path / "locked").mkdir(mode=0o500)

    ran = command_as_process("backup", str(tmp_path / "locked"))

    assert ran.returncode == 1
    assert "is not writable" in _one_line(ran.stderr)
