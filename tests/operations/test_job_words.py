"""The admin's job list and a job's page say the job system's codes in words (issue 25 req 6):
the task ("Read a document's text", not "documents.extract_text"), its status ("Queued", not
"todo"), its arguments ("Case: 7", not JSON) and what happened to it ("Queued 0 minutes ago"),
in the columns, filters, actions and the page's title; the task's name stays on its page."""

import re

import pytest
from django.test import Client
from procrastinate.contrib.django import app
from procrastinate.contrib.django.models import ProcrastinateJob

from apps.operations import job_words

JOBS_URL = "/admin/procrastinate/procrastinatejob/"
CELL = r'<td class="field-{}">(.*?)</td>'


def _queued_worker_check(case_id: int = 7) -> int:
    return int(
        app.configure_task(name="cases.worker_check").defer(
            case_id=case_id, requested_by=3, queued_at="2026-12-05T10:00:00+00:00"
        )
    )


def test_every_task_the_product_registers_has_words() -> None:
    # "builtin:<name>" is Procrastinate's second key for its own tasks.
    names = {name.removeprefix("builtin:") for name in app.tasks}
    missing = sorted(name for name in names if name not in job_words.TASK_WORDS)
    assert not missing, f"tasks without words (apps/operations/job_words.py): {missing}"
    assert not set(job_words.TASK_WORDS) - names, "words for a task nobody registers"
    for status in ProcrastinateJob.STATUSES:
        assert status in job_words.STATUS_WORDS, status


def test_arguments_are_said_by_name_and_a_schedule_as_a_time() -> None:
    told = job_words.arguments(
        {"document_id": 12, "requested_by": 3, "timestamp": 1_764_928_800, "force": True}
    )
    assert told == [
        ("Document", "12"),
        ("Asked by user", "3"),
        ("Scheduled for", "2025-12-05 10:00:00 UTC"),
        ("Force", "yes"),
    ]
    assert job_words.task_words("nobody.registered_this") == "nobody.registered_this"


@pytest.mark.django_db
def test_the_job_list_says_task_status_arguments_and_last_event_in_words(
    admin_client_: Client,
) -> None:
    job_id = _queued_worker_check()

    page = admin_client_.get(JOBS_URL).content.decode()

    row = page[page.index(f"/{job_id}/change/") :].split("</tr>")[0]
    assert re.findall(CELL.format("task"), row) == ["Check that a worker answers, for a case"]
    assert re.findall(CELL.format("job_status"), row) == ["Queued"]
    arguments = re.findall(CELL.format("arguments"), row, re.S)[0]
    assert "<div>Case: 7</div>" in arguments and "<div>Asked by user: 3</div>" in arguments
    assert re.findall(CELL.format("last_event"), row)[0].startswith("Queued ")
    for code in ("cases.worker_check", "todo", "Todo", "{&quot;", "{"):
        assert code not in row, code
    # The filters and actions in words; the filters still use the stored values.
    assert '<a href="?status__exact=todo">Queued</a>' in page
    assert '<a href="?status__exact=failed">Failed for good</a>' in page
    task = "Check that a worker answers, for a case"
    assert f'<a href="?task_name=cases.worker_check">{task}</a>' in page
    assert "Cancel queued jobs (those not started)" in page
    assert "Abort queued and running jobs" in page
    assert "&#x27;todo&#x27;" not in page and "'todo'" not in page
    for status in ("todo", "doing"):
        assert f">{status}<" not in page

    queued = admin_client_.get(JOBS_URL, {"status__exact": "todo"}).context["cl"].result_list
    done = admin_client_.get(JOBS_URL, {"status__exact": "succeeded"}).context["cl"].result_list
    assert job_id in [job.pk for job in queued] and job_id not in [job.pk for job in done]
    by_task = admin_client_.get(JOBS_URL, {"task_name": "operations.sweep"}).context["cl"]
    assert job_id not in [job.pk for job in by_task.result_list]
    # Found by its task's name in the search box; locks are searched, not listed as filters.
    searched = admin_client_.get(JOBS_URL, {"q": "cases.worker_check"}).context["cl"]
    assert job_id in [job.pk for job in searched.result_list]
    assert "By lock" not in page and "By queueing lock" not in page


@pytest.mark.django_db
def test_a_jobs_page_is_titled_by_its_task_in_words_and_keeps_its_name(
    admin_client_: Client,
) -> None:
    job_id = _queued_worker_check()

    page = admin_client_.get(f"{JOBS_URL}{job_id}/change/").content.decode()

    title = f"Job {job_id}: Check that a worker answers, for a case"
    found = re.search(r"<title>(.*?)</title>", page, re.S)
    assert found and found.group(1).startswith(f"{title} | "), found
    assert f"<h2>{title}</h2>" in page
    breadcrumb = re.search(r'<div class="breadcrumbs">(.*?)</div>', page, re.S)
    assert breadcrumb and breadcrumb.group(1).rstrip().endswith(title)
    assert "ProcrastinateJob object" not in page and "ProcrastinateEvent object" not in page
    assert "cases.worker_check" in page  # the task's name, its own field
    assert "<div>Case: 7</div>" in page
    history = re.search(
        r'field-history.*?<div class="readonly">((?:<div>[^<]*</div>)+)</div>', page, re.S
    )
    assert history and re.fullmatch(r"<div>[\d-]+ [\d:]+: Queued</div>", history.group(1))
    assert 'style="' not in page.split('id="content-main"')[1]

    changes = admin_client_.get(f"{JOBS_URL}{job_id}/history/").content.decode()
    assert f"<h1>Change history: {title}</h1>" in changes
    assert f'/{job_id}/change/">{title}</a>' in changes
    assert "ProcrastinateJob object" not in changes


@pytest.mark.django_db
def test_cancelling_queued_jobs_still_cancels_them(admin_client_: Client) -> None:
    job_id = _queued_worker_check()

    response = admin_client_.post(
        JOBS_URL, {"action": "cancel_queued", "_selected_action": [job_id]}, follow=True
    )

    assert response.status_code == 200
    assert ProcrastinateJob.objects.get(pk=job_id).status == "cancelled"
    page = admin_client_.get(f"{JOBS_URL}{job_id}/change/").content.decode()
    assert re.search(r"<div>[\d-]+ [\d:]+: Cancelled</div>", page)
