"""The job queues page follows the queues (issue 25 req 3): a worker says, at most once a
second, that they changed; an admin's cluster socket hears it (no one else's does) and the page
reads its figures again (`?part=1`, the same template as the page, not audited again)."""

import asyncio
import re
import time
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from django.db import OperationalError, transaction
from django.test import Client

from apps.accounts.models import AuditEvent, User
from apps.operations import jobs_pulse
from lexweb.jobs import job_defer
from tests.cluster.test_cluster_alive import _jobs, _worker
from tests.cluster.test_dashboard import _stream_ready, ws_db
from tests.conftest import session_client, ws_connect

WS = "/ws/cluster/"
JOBS = "/cluster/jobs/"


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_workers_changes_are_coalesced_into_one_message_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sent: list[float] = []
    loop = asyncio.get_running_loop()
    monkeypatch.setattr(jobs_pulse, "jobs_changed_send", lambda: sent.append(loop.time()))
    pulse = jobs_pulse.JobsPulse(interval=0.5)
    start = loop.time()

    async def sends(count: int) -> None:
        """Until `count` messages were sent (a busy machine runs the timers late)."""
        deadline = loop.time() + 10
        while len(sent) < count:
            assert loop.time() < deadline, sent
            await asyncio.sleep(0.02)

    for _ in range(20):  # a burst: jobs start and end together
        pulse.changed()
    await sends(1)  # the first change, once it settled
    assert sent[0] - start >= jobs_pulse.SETTLE_SECONDS
    for _ in range(5):
        pulse.changed()
    await sends(2)  # the later ones together, an interval after the first
    assert sent[1] - sent[0] >= 0.5 - 0.01
    await asyncio.sleep(0.6)
    assert len(sent) == 2  # 25 changes in two bursts were two messages; quiet: nothing more


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_change_while_a_message_is_being_sent_gets_a_message_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A job that starts or ends while the pulse is sending may not be in that message: one
    more follows (it was dropped, and the test above failed now and then on it)."""
    sent: list[float] = []

    def slow_send() -> None:
        time.sleep(0.3)
        sent.append(time.monotonic())

    monkeypatch.setattr(jobs_pulse, "jobs_changed_send", slow_send)
    pulse = jobs_pulse.JobsPulse(interval=0.2)
    pulse.changed()
    deadline = time.monotonic() + 10
    while not pulse._sending:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    pulse.changed()  # during the send
    while len(sent) < 2:
        assert time.monotonic() < deadline, sent
        await asyncio.sleep(0.02)
    await asyncio.sleep(0.5)
    assert len(sent) == 2


@pytest.mark.asyncio
@pytest.mark.slow
async def test_a_send_while_the_database_is_away_is_one_line_and_a_later_one_goes_out(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A worker keeps running its jobs while PostgreSQL restarts: the pulse it could not send
    is one warning line (no traceback for each second of the outage), and it pulses again."""
    outcomes: list[str] = []

    def send() -> None:
        if not outcomes:
            outcomes.append("failed")
            raise OperationalError("connection to server on socket failed: Connection refused")
        outcomes.append("sent")

    monkeypatch.setattr(jobs_pulse, "jobs_changed_send", send)
    pulse = jobs_pulse.JobsPulse(interval=0.2)
    with caplog.at_level("WARNING", logger="apps.operations.jobs_pulse"):
        pulse.changed()
        await asyncio.sleep(0.4)
        pulse.changed()
        await asyncio.sleep(0.4)
    assert outcomes == ["failed", "sent"]
    [record] = caplog.records
    assert record.getMessage() == (
        "Job-queue pages not told of a change: connection to server on socket failed: "
        "Connection refused"
    )
    assert record.exc_info is None


@pytest.mark.asyncio
@ws_db
async def test_an_admins_cluster_socket_hears_that_the_queues_changed(
    admin_user: User, lawyer: User
) -> None:
    admin, admin_state = await ws_connect(WS, cookie_user=admin_user)
    await _stream_ready()
    other, other_state = await ws_connect(WS, cookie_user=lawyer)
    assert admin_state == other_state == (True, None)

    await sync_to_async(jobs_pulse.jobs_changed_send)()

    assert await admin.receive_json_from(timeout=10) == {"type": "operations.jobs_changed"}
    assert await other.receive_nothing(timeout=0.5)
    await admin.disconnect()
    await other.disconnect()


@pytest.mark.django_db
def test_the_figures_read_again_are_the_pages_own_and_not_audited_again(
    admin_user: User, lawyer_client: Client
) -> None:
    alive = _worker(timedelta(seconds=3))
    _jobs("cpu", 3)
    client = session_client(admin_user)
    page = client.get(JOBS).content.decode()
    assert 'data-jobs-stream="/ws/cluster/"' in page and "lexweb/jobs.js" in page
    assert "reload for fresh figures" not in page
    _jobs("cpu", 2)  # two more queued since the page opened

    response = client.get(JOBS, {"part": "1"})

    part = response.content.decode()
    assert response.status_code == 200
    assert part.lstrip().startswith('<div id="jobs-live"') and "<html" not in part
    row = re.search(r'<tr data-queue="cpu">.*?</tr>', part, re.S)
    assert row and '<td class="num" data-field="queued">5</td>' in row.group(0)
    assert f'data-worker-id="{alive}"' in part and "data-heartbeat-age" in part
    assert AuditEvent.objects.filter(action="cluster.jobs_view").count() == 1
    assert lawyer_client.get(JOBS, {"part": "1"}).status_code == 404


@pytest.mark.asyncio
async def test_a_worker_marks_a_change_when_a_job_starts_and_when_it_ends() -> None:
    from types import SimpleNamespace
    from typing import Any

    from apps.operations.worker import WorkerRunner

    runner = WorkerRunner(queues=None, concurrency=1, grace_seconds=0, say=lambda _line: None)
    marks: list[str] = []
    runner._pulse = SimpleNamespace(changed=lambda: marks.append("changed"))  # type: ignore[assignment]

    async def job() -> str:
        marks.append("job")
        return "done"

    async def failing() -> None:
        marks.append("job")
        raise RuntimeError("the job failed")

    context: Any = SimpleNamespace(job=SimpleNamespace(id=7, task_name="documents.render"))
    assert await runner._track(job, context, None) == "done"  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        await runner._track(failing, context, None)  # type: ignore[arg-type]

    assert marks == ["changed", "job", "changed"] * 2
    assert runner._running == {}


@pytest.mark.django_db(transaction=True)
def test_a_job_queued_tells_the_pages_once_per_transaction_and_never_if_it_rolls_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no worker taking or finishing jobs, a queued job still changes the page."""
    sent: list[str] = []
    monkeypatch.setattr(jobs_pulse, "jobs_changed_send", lambda: sent.append("sent"))
    args = {"case_id": 1, "requested_by": 1, "queued_at": "x"}

    with transaction.atomic():
        job_defer("cases.worker_check", **args)
        job_defer("cases.worker_check", **args)
        assert sent == []  # not before the jobs are there to be read
    assert sent == ["sent"]  # two jobs, one message

    class RolledBack(Exception):
        pass

    with pytest.raises(RolledBack), transaction.atomic():
        job_defer("cases.worker_check", **args)
        raise RolledBack
    assert sent == ["sent"]  # nothing for jobs that were never queued

    with transaction.atomic():
        job_defer("cases.worker_check", **args)
    assert sent == ["sent", "sent"]  # the next transaction tells them again
    job_defer("cases.worker_check", **args)  # no transaction: at once
    assert sent == ["sent", "sent", "sent"]
