"""A worker SIGKILLed in the middle of real work: recovery and a new worker finish it.

Real `manage.py worker` processes on the test database, real Tesseract, real stamping, a real
SIGKILL. The dead worker's row keeps its last heartbeat, as after a power cut; the next worker
starts once that row is silent past LEXWEB_JOB_STALLED_SECONDS (5 s here) and its start-up
recovery queues the job again from the start.
"""

import hashlib
import json
import re
import socket
import threading
import zipfile
from pathlib import Path

import pymupdf
import pytest
from django.test import Client
from procrastinate.contrib.django import app

from apps.cases.models import Case
from apps.documents import storage
from apps.documents.models import BatesPage, Document, Page, Production, ProductionExport
from tests.cluster.dispatch_fixtures import backend_make
from tests.documents.conftest import blob_root  # noqa: F401 (a fixture)
from tests.documents.files import scanned_pdf
from tests.operations.processes import (
    WorkerProcess,
    clean_jobs,  # noqa: F401 (a fixture)
    job_of,
    job_row,
    start_worker,
    upload_document,
    wait_until,
    worker_env,
    worker_silent_for,
)

pytestmark = [
    pytest.mark.product,  # starts worker processes to kill, signal or outwait them
    pytest.mark.django_db(transaction=True, databases="__all__"),
    pytest.mark.usefixtures("clean_jobs"),
]

STALLED = "5"


def _kill_then_restart(
    first: WorkerProcess, job_id: int, env: dict[str, str], queues: str = "cpu"
) -> WorkerProcess:
    """SIGKILL `first` (which runs `job_id`), wait until its row is silent, start another."""
    worker_id = job_row(job_id)["worker_id"]
    assert isinstance(worker_id, int), job_row(job_id)
    first.kill()
    assert job_row(job_id)["status"] == "doing"  # nothing on its own would ever finish it
    wait_until(
        lambda: worker_silent_for(worker_id, float(STALLED) + 1),
        timeout=60,
        what="the dead worker's heartbeat to age",
    )
    second = start_worker(queues=queues, concurrency=16 if queues == "cluster" else 1, env=env)
    second.wait_for_line(f"Stalled job {job_id}", timeout=120)
    return second


def test_a_worker_killed_during_ocr_is_replaced_and_the_document_is_read_once(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,  # noqa: F811
) -> None:
    pages = 5
    document_id = upload_document(
        lawyer_api,
        case.pk,
        "scan.pdf",
        scanned_pdf("azd_order_bard-ivc-mdl_15-02641.pdf", pages=pages),
    )
    job_id = job_of("documents.extract_text", "document_id", document_id)
    env = worker_env(blob_root=blob_root, LEXWEB_JOB_STALLED_SECONDS=STALLED)
    first = start_worker(env=env)
    second = None
    try:
        wait_until(
            lambda: Document.objects.get(pk=document_id).pages_done >= 2,
            timeout=240,
            what="two pages read by OCR",
        )
        second = _kill_then_restart(first, job_id, env)
        assert Document.objects.get(pk=document_id).status == Document.Status.PROCESSING
        wait_until(
            lambda: Document.objects.get(pk=document_id).status != Document.Status.PROCESSING,
            timeout=300,
            what="the document read by the second worker",
        )
        wait_until(
            lambda: job_row(job_id)["status"] in ("succeeded", "failed"),
            timeout=60,
            what="the job's end",
        )
    finally:
        first.stop()
        if second is not None:
            second.stop()

    document = Document.objects.get(pk=document_id)
    assert document.status == Document.Status.READY, document.error
    numbers = list(Page.objects.filter(document=document).values_list("number", flat=True))
    assert sorted(numbers) == list(range(1, pages + 1))  # each page once, none missing
    assert all(p.source == Page.Source.OCR and p.text.strip() for p in document.pages.all())
    row = job_row(job_id)
    assert (row["status"], row["attempts"]) == ("succeeded", 2)  # the killed one, the rerun


def _long_pdf(pages: int, label: str) -> bytes:
    with pymupdf.open() as document:
        for number in range(1, pages + 1):
            page = document.new_page()
            page.insert_text((72, 72), f"{label} page {number} of {pages}.", fontsize=11)
        return document.tobytes()


def _partial_volumes(root: Path) -> list[Path]:
    return [p for p in (root / "tmp").rglob("*.pdf") if p.is_file() and p.stat().st_size > 0]


def test_a_worker_killed_during_stamping_leaves_a_partial_volume_and_the_retry_stamps_all(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,  # noqa: F811
) -> None:
    sizes = [900, 900]
    document_ids = [
        upload_document(lawyer_api, case.pk, f"d{i}.pdf", _long_pdf(n, f"Exhibit {i}"))
        for i, n in enumerate(sizes)
    ]
    env = worker_env(blob_root=blob_root, LEXWEB_JOB_STALLED_SECONDS=STALLED)
    first = start_worker(env=env)
    second = None
    try:
        wait_until(
            lambda: Document.objects.filter(pk__in=document_ids, status="ready").count() == 2,
            timeout=600,
            what="both documents ingested",
        )
        response = lawyer_api.post(
            f"/api/v1/cases/{case.pk}/productions",
            json.dumps({"volume": "VOL001", "prefix": "KILL", "document_ids": document_ids}),
            content_type="application/json",
        )
        assert response.status_code == 201, response.content
        production_id = response.json()["id"]
        job_id = job_of("documents.stamp_production", "production_id", production_id)
        # Killed once the volume has been flushed to disk part-way (every 500 pages).
        wait_until(
            lambda: _partial_volumes(blob_root), timeout=300, what="a partial volume", every=0.02
        )
        assert Production.objects.get(pk=production_id).status == Production.Status.PROCESSING
        second = _kill_then_restart(first, job_id, env)
        left_behind = _partial_volumes(blob_root)
        wait_until(
            lambda: Production.objects.get(pk=production_id).status != Production.Status.PROCESSING,
            timeout=300,
            what="the production stamped by the second worker",
        )
        wait_until(
            lambda: job_row(job_id)["status"] in ("succeeded", "failed"),
            timeout=60,
            what="the job's end",
        )
    finally:
        first.stop()
        if second is not None:
            second.stop()

    production = Production.objects.select_related("output").get(pk=production_id)
    assert production.status == Production.Status.READY, production.error
    total = sum(sizes)
    numbers = list(
        BatesPage.objects.filter(production=production)
        .order_by("number")
        .values_list("number", flat=True)
    )
    assert numbers == list(range(1, total + 1))  # complete and unique
    assert production.output is not None
    path = storage.blob_path(production.output.sha256)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == production.output.sha256
    assert path not in left_behind
    with pymupdf.open(path) as volume:
        assert volume.page_count == total
        stamps = [re.findall(r"KILL\d{6}", page.get_text()) for page in volume]
    assert stamps == [[f"KILL{n:06d}"] for n in range(1, total + 1)]  # each page once, in order
    row = job_row(job_id)
    assert (row["status"], row["attempts"]) == ("succeeded", 2)  # the killed one, the rerun


class _SilentServer:
    """A real TCP server that accepts connections and never answers: a hung backend."""

    def __init__(self) -> None:
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(16)
        self._held: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                self._held.append(self._listener.accept()[0])
            except OSError:
                return

    def close(self) -> None:
        self._listener.close()
        for sock in self._held:
            sock.close()


def test_a_health_check_killed_holding_its_lock_and_queueing_lock_does_not_stop_later_ones(
    tmp_path: Path,
) -> None:
    server = _SilentServer()
    backend_make(base_url=server.url)  # its check waits 10 s for an answer that never comes
    health = app.configure_task(name="cluster.health_check")
    env = worker_env(LEXWEB_JOB_STALLED_SECONDS=STALLED)
    dead = health.defer(timestamp=1)
    first = start_worker(queues="cluster", concurrency=16, env=env)
    second = None
    try:
        wait_until(lambda: job_row(dead)["status"] == "doing", timeout=120, what="the check")
        # The next scheduled check is queued while the first holds the lock.
        newer = health.defer(timestamp=2)
        second = _kill_then_restart(first, dead, env, queues="cluster")
        wait_until(
            lambda: job_row(newer)["status"] == "succeeded", timeout=120, what="the next check"
        )
        later = health.defer(timestamp=3)
        wait_until(
            lambda: job_row(later)["status"] == "succeeded", timeout=120, what="a later check"
        )
    finally:
        first.stop()
        if second is not None:
            second.stop()
        server.close()
    assert job_row(dead)["status"] == "aborted"
    assert f"job {newer}, queued later with the same queueing lock" in second.output()


def _partial_zips(root: Path) -> list[Path]:
    return [p for p in (root / "tmp").rglob("*.zip") if p.is_file() and p.stat().st_size > 0]


def test_a_worker_killed_while_building_an_export_is_replaced_and_the_volume_is_whole(
    lawyer_api: Client,
    case: Case,
    blob_root: Path,  # noqa: F811
) -> None:
    pages = 40
    document_id = upload_document(lawyer_api, case.pk, "e.pdf", _long_pdf(pages, "Exhibit"))
    env = worker_env(blob_root=blob_root, LEXWEB_JOB_STALLED_SECONDS=STALLED)
    first = start_worker(env=env)
    second = None
    base = f"/api/v1/cases/{case.pk}/productions"
    try:
        wait_until(
            lambda: Document.objects.get(pk=document_id).status == Document.Status.READY,
            timeout=300,
            what="the document ingested",
        )
        response = lawyer_api.post(
            base,
            json.dumps({"volume": "EXP001", "prefix": "EXP", "document_ids": [document_id]}),
            content_type="application/json",
        )
        assert response.status_code == 201, response.content
        production_id = response.json()["id"]
        wait_until(
            lambda: Production.objects.get(pk=production_id).status == Production.Status.READY,
            timeout=300,
            what="the production stamped",
        )
        response = lawyer_api.post(
            f"{base}/{production_id}/exports",
            json.dumps({"image_dpi": 300}),
            content_type="application/json",
        )
        assert response.status_code in (200, 201, 202), response.content
        export_id = response.json()["id"]
        job_id = job_of("documents.export_production", "export_id", export_id)
        # Killed with the zip part-written (the images come last, one per page).
        wait_until(lambda: _partial_zips(blob_root), timeout=300, what="a partial zip", every=0.02)
        second = _kill_then_restart(first, job_id, env)
        wait_until(
            lambda: job_row(job_id)["status"] in ("succeeded", "failed"),
            timeout=300,
            what="the rerun's end",
        )
    finally:
        first.stop()
        if second is not None:
            second.stop()

    export = ProductionExport.objects.select_related("output").get(pk=export_id)
    assert export.status == ProductionExport.Status.READY, export.error
    assert export.output is not None
    with zipfile.ZipFile(storage.blob_path(export.output.sha256)) as volume:
        names = volume.namelist()
        opt = volume.read("EXP001/EXP001.opt").decode("utf-8-sig").splitlines()
    bates = [f"EXP{n:06d}" for n in range(1, pages + 1)]
    assert [line.split(",")[0] for line in opt] == bates  # one line per page, in order
    tiffs = sorted(n.rsplit("/", 1)[-1] for n in names if n.endswith(".tif"))
    assert tiffs == [f"{b}.tif" for b in bates]
    assert len(names) == len(set(names))
    assert job_row(job_id)["status"] == "succeeded"
