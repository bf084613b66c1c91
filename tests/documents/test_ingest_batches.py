"""Ingest in batches, fair across cases, safe to kill (issue 8, requirement 7).

One ingest job reads LEXWEB_INGEST_BATCH_PAGES pages and queues the rest as a new job, behind
what other cases queued meanwhile; a case with many waiting documents does not hold back
another case's first one. A re-run (a retried job, a second job for the same document, a
worker killed mid-batch) continues after the stored pages and never writes a page twice.
"""

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.db import connection
from django.test import Client
from procrastinate.contrib.django import app
from procrastinate.contrib.django.models import ProcrastinateEvent, ProcrastinateJob

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents import services
from apps.documents.models import Document, Page
from tests.conftest import database_url_for_tests, ws_connect
from tests.documents.files import real, scanned_pdf, upload

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

TEN_PAGES = "ca5_st-pierre-v-standard-ins_21-50498.pdf"
FIVE_PAGES = "azd_order_bard-ivc-mdl_15-02641.pdf"
DEADLINE = 300  # seconds: OCR on a busy two-core machine is slow


def upload_to(client: Client, case: Case, name: str, data: bytes) -> int:
    response = client.post(
        f"/api/v1/cases/{case.pk}/documents", {"files": [upload(name, data)], "origin": "client"}
    )
    assert response.status_code == 201, response.content
    document_id: int = response.json()["results"][0]["document"]["id"]
    return document_id


def note(text: str) -> bytes:
    return f"Memo to file: {text}\n".encode()


# Ingest's jobs only: a text file's rendering to PDF follows as a job of its own.
INGEST_TASK = "documents.extract_text"


def jobs_of(document_id: int) -> list[ProcrastinateJob]:
    return list(
        ProcrastinateJob.objects.filter(
            task_name=INGEST_TASK, args={"document_id": document_id}
        ).order_by("id")
    )


def started_order(*document_ids: int) -> list[int]:
    """The documents whose ingest jobs started, in the order they started (one per job)."""
    events = (
        ProcrastinateEvent.objects.filter(
            type="started",
            job__task_name=INGEST_TASK,
            job__args__document_id__in=list(document_ids),
        )
        .order_by("id")
        .values_list("job__args", flat=True)
    )
    return [args["document_id"] for args in events]


def finished_last(document_ids: list[int]) -> list[int]:
    """The documents in the order their last ingest job succeeded."""
    last: dict[int, int] = {}
    for event_id, args in (
        ProcrastinateEvent.objects.filter(
            type="succeeded", job__task_name=INGEST_TASK, job__args__document_id__in=document_ids
        )
        .order_by("id")
        .values_list("id", "job__args")
    ):
        last[args["document_id"]] = event_id
    return sorted(last, key=lambda document_id: last[document_id])


def assert_pages_exactly_once(document_id: int, count: int) -> None:
    numbers = list(
        Page.objects.filter(document_id=document_id)
        .order_by("number")
        .values_list("number", flat=True)
    )
    assert numbers == list(range(1, count + 1))
    assert not Page.objects.filter(document_id=document_id, search_vector__isnull=True).exists()


# --- Fair across cases -----------------------------------------------------------------------


@pytest.mark.slow
def test_small_document_of_another_case_queued_after_a_large_one_finishes_first(
    lawyer_api: Client,
    outsider_api: Client,
    case: Case,
    other_case: Case,
    blob_root: Any,
    run_jobs: Callable[[], None],
    settings: Any,
) -> None:
    settings.LEXWEB_INGEST_BATCH_PAGES = 2
    large = upload_to(lawyer_api, case, "st-pierre.pdf", real(TEN_PAGES))
    small = upload_to(outsider_api, other_case, "note.txt", note("the other case"))

    run_jobs()

    assert finished_last([large, small]) == [small, large]
    # The large one's first batch ran, then the small one, then the large one's other four.
    assert started_order(large, small) == [large, small, large, large, large, large]
    for document_id, pages in ((large, 10), (small, 1)):
        document = Document.objects.get(pk=document_id)
        assert (document.status, document.pages_done, document.page_count) == (
            "ready",
            pages,
            pages,
        )
        assert_pages_exactly_once(document_id, pages)
    assert {job.status for job in jobs_of(large)} == {"succeeded"}


@pytest.mark.slow
def test_a_case_with_many_waiting_documents_does_not_hold_back_another_case(
    lawyer_api: Client,
    outsider_api: Client,
    case: Case,
    other_case: Case,
    blob_root: Any,
    run_jobs: Callable[[], None],
) -> None:
    busy = [upload_to(lawyer_api, case, f"memo-{n}.txt", note(f"memo {n}")) for n in range(3)]
    quiet = upload_to(outsider_api, other_case, "letter.txt", note("the quiet case"))

    # Each job is queued behind its own case's waiting documents: 0, -1, -2; the quiet case's
    # first document has none ahead of it.
    assert [jobs_of(d)[0].priority for d in [*busy, quiet]] == [0, -1, -2, 0]
    assert [jobs_of(d)[0].lock for d in busy] == [f"document:{d}" for d in busy]

    run_jobs()

    assert started_order(*busy, quiet) == [busy[0], quiet, busy[1], busy[2]]
    assert set(Document.objects.values_list("status", flat=True)) == {"ready"}


@pytest.mark.parametrize(
    ("batch", "jobs"), [(4, 2), (5, 1), (6, 1)], ids=["just-below", "at", "just-above"]
)
def test_a_document_of_batch_size_pages_takes_one_job_and_one_more_page_takes_two(
    lawyer_api: Client,
    case: Case,
    blob_root: Any,
    run_jobs: Callable[[], None],
    settings: Any,
    batch: int,
    jobs: int,
) -> None:
    settings.LEXWEB_INGEST_BATCH_PAGES = batch
    document_id = upload_to(lawyer_api, case, "order.pdf", real(FIVE_PAGES))

    run_jobs()

    assert [job.status for job in jobs_of(document_id)] == ["succeeded"] * jobs
    assert Document.objects.get(pk=document_id).status == "ready"
    assert_pages_exactly_once(document_id, 5)


# --- Safe to run again -----------------------------------------------------------------------


def test_each_run_continues_after_the_stored_pages_and_queues_the_rest(
    lawyer_api: Client, case: Case, blob_root: Any, settings: Any
) -> None:
    settings.LEXWEB_INGEST_BATCH_PAGES = 4
    document_id = upload_to(lawyer_api, case, "st-pierre.pdf", real(TEN_PAGES))
    first_pages: list[int] = []

    # The job's service, run by hand three times (what a worker does with each queued job).
    for done in (4, 8, 10):
        services.document_extract_text(document_id=document_id)
        document = Document.objects.get(pk=document_id)
        assert document.pages_done == done
        assert_pages_exactly_once(document_id, done)  # searchable as soon as stored
        if not first_pages:
            first_pages = list(document.pages.values_list("pk", flat=True))
    assert Document.objects.get(pk=document_id).status == "ready"
    # Pages once stored are kept, not read again.
    assert set(first_pages) <= set(Page.objects.values_list("pk", flat=True))
    # Upload's job plus one for each batch still to do when a batch ended.
    assert len(jobs_of(document_id)) == 3

    # Run once more (a retried job): nothing changes.
    services.document_extract_text(document_id=document_id)
    assert_pages_exactly_once(document_id, 10)
    assert len(jobs_of(document_id)) == 3


def test_two_jobs_for_one_document_write_every_page_once(
    lawyer_api: Client,
    case: Case,
    blob_root: Any,
    run_jobs: Callable[[], None],
    settings: Any,
) -> None:
    settings.LEXWEB_INGEST_BATCH_PAGES = 3
    document_id = upload_to(lawyer_api, case, "st-pierre.pdf", real(TEN_PAGES))
    # A second job for the same document, as a hand retry from the admin would queue.
    app.configure_task(name="documents.extract_text").defer(document_id=document_id)

    run_jobs()

    document = Document.objects.get(pk=document_id)
    assert (document.status, document.pages_done) == ("ready", 10)
    assert_pages_exactly_once(document_id, 10)
    assert {job.status for job in jobs_of(document_id)} == {"succeeded"}


# --- A real worker, killed -------------------------------------------------------------------


@contextmanager
def worker(**env: str) -> Iterator[subprocess.Popen[bytes]]:
    """A real `manage.py procrastinate worker` for the cpu queue on the test database."""
    process = subprocess.Popen(
        [sys.executable, "manage.py", "procrastinate", "worker", "--queues", "cpu"],
        cwd=django_settings.BASE_DIR,
        env={
            **os.environ,
            "DATABASE_URL": database_url_for_tests(),
            "LEXWEB_LOG_LEVEL": "WARNING",
            "LEXWEB_CLUSTER_HEALTH_CRON": "",
            **env,
        },
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def wait_for(condition: Callable[[], bool], what: str, seconds: float = DEADLINE) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"Not within {seconds} s: {what}")
        time.sleep(0.05)


@pytest.mark.product  # a real worker process, killed
def test_worker_killed_mid_batch_leaves_a_document_that_a_rerun_finishes_without_duplicates(
    lawyer_api: Client, case: Case, blob_root: Any
) -> None:
    document_id = upload_to(lawyer_api, case, "scan.pdf", scanned_pdf(TEN_PAGES, pages=6, dpi=150))
    env = {"LEXWEB_INGEST_BATCH_PAGES": "4", "LEXWEB_BLOB_ROOT": str(blob_root)}

    def pages_done() -> int:
        return Document.objects.get(pk=document_id).pages_done

    with worker(**env) as first:
        wait_for(lambda: pages_done() >= 1, "the first OCR page stored")
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    kept = dict(Page.objects.filter(document_id=document_id).values_list("number", "pk"))
    document = Document.objects.get(pk=document_id)
    assert document.status == "processing" and 1 <= document.pages_done < 6
    assert sorted(kept) == list(range(1, document.pages_done + 1))
    (stalled,) = [job for job in jobs_of(document_id) if job.status == "doing"]

    # Queue it again from the start, as stalled-job recovery does.
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT procrastinate_retry_job_v2(%s, NOW(), NULL, NULL, NULL)", [stalled.pk]
        )
    with worker(**env):
        wait_for(
            lambda: Document.objects.get(pk=document_id).status == "ready", "the document ready"
        )

    document = Document.objects.get(pk=document_id)
    assert (document.pages_done, document.page_count, document.error) == (6, 6, "")
    assert_pages_exactly_once(document_id, 6)
    # The pages stored before the kill were kept, not read again.
    again = dict(Page.objects.filter(document_id=document_id).values_list("number", "pk"))
    assert {number: again[number] for number in kept} == kept
    assert (
        "court"
        in " ".join(Page.objects.get(document_id=document_id, number=1).text.split()).lower()
    )


# --- Progress across batches, as members see it ---------------------------------------------


async def _until_finished(socket: WebsocketCommunicator, document_id: int) -> list[Any]:
    events = []
    while True:
        event = await socket.receive_json_from(timeout=DEADLINE)
        events.append(event)
        if event.get("document_id") == document_id and event["status"] in ("ready", "failed"):
            return events


@pytest.mark.asyncio
@pytest.mark.slow
async def test_progress_over_several_batches_only_goes_forward_and_ends_ready_once(
    lawyer: User, case: Case, lawyer_api: Client, blob_root: Any
) -> None:
    socket, state = await ws_connect(f"/ws/cases/{case.pk}/events/", cookie_user=lawyer)
    assert state == (True, None)

    with worker(LEXWEB_INGEST_BATCH_PAGES="3", LEXWEB_BLOB_ROOT=str(blob_root)):
        document_id = await sync_to_async(upload_to)(
            lawyer_api, case, "st-pierre.pdf", real(TEN_PAGES)
        )
        events = await _until_finished(socket, document_id)

    steps = [(e["status"], e["pages_done"]) for e in events]
    assert steps[0] == ("queued", 0) and steps[-1] == ("ready", 10)
    assert [s for s in steps if s[0] == "ready"] == [("ready", 10)]
    done = [n for _, n in steps]
    assert done == sorted(done)
    # Every batch's end is reported (pages 3, 6 and 9), then the last page.
    assert {3, 6, 9, 10} <= {n for status, n in steps if status == "processing"}
    assert len({tuple(sorted(e.items())) for e in events}) == len(events), "no event twice"
    assert await socket.receive_nothing(timeout=1)
    await socket.disconnect()

    body = (
        await sync_to_async(lawyer_api.get)(f"/api/v1/cases/{case.pk}/documents/{document_id}")
    ).json()
    assert (body["status"], body["pages_done"], body["page_count"]) == ("ready", 10, 10)
    assert len(await sync_to_async(jobs_of)(document_id)) == 4
