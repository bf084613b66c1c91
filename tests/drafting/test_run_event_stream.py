"""A run's events over HTTP without polling, against a real uvicorn serving the real ASGI
application on 127.0.0.1 (real channel layer on PostgreSQL): the Server-Sent Events stream
(backlog then live, resumable, keep-alives, ends after the run finished, closes when access
ends, refuses outsiders and bad input, a per-person budget) and the long poll `?wait=`."""

import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from django.db import transaction
from django.test import Client

from apps.accounts import services as account_services
from apps.accounts import streams
from apps.accounts.models import AuditEvent, User
from apps.cases.models import Case, Membership
from apps.drafting.models import Run
from apps.drafting.services import events as event_writer
from apps.drafting.services import runs
from apps.evidence.models import Packet
from tests.harness.sse import events_until, open_stream, read_frames, served_asgi, token_for
from tests.harness.waiting import wait_until

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")

KEEP_ALIVE_SECONDS = 0.4
RECHECK_SECONDS = 1


@pytest.fixture
def base_url(transactional_db: None, settings: object) -> Iterator[str]:
    """The product's ASGI application served by uvicorn in a thread of this process."""
    settings.LEXWEB_SSE_KEEPALIVE_SECONDS = KEEP_ALIVE_SECONDS  # type: ignore[attr-defined]
    settings.LEXWEB_WS_RECHECK_SECONDS = RECHECK_SECONDS  # type: ignore[attr-defined]
    with served_asgi() as url:
        yield url


def _run(case: Case, user: User, events: int = 0) -> Run:
    packet = Packet.objects.create(
        case=case,
        title="Stream packet",
        status=Packet.Status.FROZEN,
        content_hash="0" * 64,
        created_by=user,
    )
    run = Run.objects.create(
        case=case, kind=Run.Kind.SUMMARY, packet=packet, instructions="Stream", created_by=user
    )
    for n in range(events):
        _append(run, text=f"t{n + 1}")
    return run


def _append(run: Run, **payload: object) -> int:
    with transaction.atomic():
        return event_writer.run_event_append(run=run.pk, kind="stage.tokens", payload=payload).seq


def _finish(run: Run, status: str = Run.Status.SUCCEEDED) -> None:
    with transaction.atomic():
        locked = Run.objects.select_for_update().get(pk=run.pk)
        runs.run_status_set(run=locked, status=status)


def _url(base_url: str, case: Case, run: Run, tail: str = "/stream") -> str:
    return f"{base_url}/api/v1/cases/{case.pk}/runs/{run.pk}/events{tail}"


# --- The stream --------------------------------------------------------------------------------


def test_the_stream_sends_the_backlog_after_the_number_then_live_events(
    base_url: str, lawyer: User, case: Case
) -> None:
    run = _run(case, lawyer, events=3)
    secret, _ = token_for(lawyer)

    with open_stream(_url(base_url, case, run) + "?after=1", secret) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        assert "no-store" in response.headers["cache-control"]
        frames = read_frames(response)
        backlog = events_until(frames, 2)
        _append(run, text="live")
        (live,) = events_until(frames, 1)

    assert [f.id for f in backlog] == ["2", "3"]
    assert backlog[0].event == "stage.tokens"
    assert backlog[0].json["seq"] == 2 and backlog[0].json["payload"] == {"text": "t2"}
    assert set(backlog[0].json) == {"seq", "kind", "payload", "created_at"}
    assert (live.id, live.json["payload"]) == ("4", {"text": "live"})
    assert AuditEvent.objects.filter(action="run.stream", target_id=str(run.pk)).count() == 1


def test_last_event_id_wins_over_after_and_nothing_is_sent_twice(
    base_url: str, lawyer: User, case: Case
) -> None:
    run = _run(case, lawyer, events=4)
    secret, _ = token_for(lawyer)

    with open_stream(_url(base_url, case, run) + "?after=0", secret, **{"Last-Event-ID": "2"}) as r:
        frames = read_frames(r)
        first = events_until(frames, 2)
        # A late publication of an event already sent (seq 4 again) is dropped.
        _append(run, text="five")
        rest = events_until(frames, 1)
        _finish(run)
        tail = events_until(frames, 2)

    ids = [f.id for f in first + rest + tail if f.id is not None]
    assert ids == ["3", "4", "5", "6"]
    assert tail[0].event == "run.status" and tail[1].event == "end"


def test_quiet_streams_get_keep_alive_comments(base_url: str, lawyer: User, case: Case) -> None:
    run = _run(case, lawyer, events=1)
    secret, _ = token_for(lawyer)

    with open_stream(_url(base_url, case, run), secret) as response:
        frames = read_frames(response)
        first = next(frames)
        started = time.monotonic()
        comment = next(frames)
        waited = time.monotonic() - started

    assert first.id == "1"
    assert comment.comment == "keep-alive" and comment.id is None
    assert KEEP_ALIVE_SECONDS * 0.5 <= waited < 5


def test_the_stream_ends_once_the_run_finished_and_its_last_event_was_sent(
    base_url: str, lawyer: User, case: Case
) -> None:
    run = _run(case, lawyer, events=2)
    secret, _ = token_for(lawyer)

    with open_stream(_url(base_url, case, run), secret) as response:
        frames = read_frames(response)
        events_until(frames, 2)
        _finish(run, Run.Status.FAILED)
        rest = list(frames)  # ends: the server closes the response
    with open_stream(_url(base_url, case, run) + "?after=1", secret) as response:
        again = list(read_frames(response))  # a finished run: its backlog, then the end

    events = [f for f in rest if f.comment is None]
    assert [f.event for f in events] == ["run.status", "end"]
    assert events[1].json["reason"] == "run_finished" and events[1].id is None
    assert [f.id for f in again if f.comment is None] == ["2", "3", None]
    assert again[-1].event == "end"


def test_a_run_waiting_for_approval_keeps_its_stream_open(
    base_url: str, lawyer: User, case: Case
) -> None:
    run = _run(case, lawyer, events=1)
    secret, _ = token_for(lawyer)

    with open_stream(_url(base_url, case, run), secret) as response:
        frames = read_frames(response)
        _finish(run, Run.Status.WAITING_FOR_APPROVAL)
        events_until(frames, 2)
        assert next(frames).comment == "keep-alive"  # not ended
        _finish(run, Run.Status.SUCCEEDED)
        events = events_until(frames, 2)

    assert [f.event for f in events] == ["run.status", "end"]


def test_revoking_the_token_ends_the_stream_at_once(
    base_url: str, lawyer: User, case: Case
) -> None:
    run = _run(case, lawyer, events=1)
    secret, token_id = token_for(lawyer)

    with open_stream(_url(base_url, case, run), secret) as response:
        frames = read_frames(response)
        events_until(frames, 1)
        started = time.monotonic()
        account_services.token_revoke(user=lawyer, token_id=token_id)
        rest = list(frames)
        took = time.monotonic() - started
        _append(run, text="after revocation")

    ends = [f for f in rest if f.event == "end"]
    assert len(ends) == 1 and ends[0].json["reason"] == "token_revoked"
    assert not [f for f in rest if f.id is not None]
    assert took < RECHECK_SECONDS + 3


@pytest.mark.slow
def test_leaving_the_case_unannounced_ends_the_stream_within_the_recheck_interval(
    base_url: str, staff: User, case: Case
) -> None:
    run = _run(case, staff, events=1)
    secret, _ = token_for(staff)

    with open_stream(_url(base_url, case, run), secret) as response:
        frames = read_frames(response)
        events_until(frames, 1)
        started = time.monotonic()
        # Deleted in the shell: no event announces it; the watch's round finds it.
        Membership.objects.filter(case=case, user=staff).delete()
        rest = list(frames)
        took = time.monotonic() - started

    assert [f.json["reason"] for f in rest if f.event == "end"] == ["membership_ended"]
    assert took < RECHECK_SECONDS + 3


def test_outsiders_missing_runs_and_bad_numbers_are_refused(
    base_url: str, lawyer: User, outsider: User, case: Case
) -> None:
    run = _run(case, lawyer, events=1)
    outsider_secret, _ = token_for(outsider)
    secret, _ = token_for(lawyer)
    url = _url(base_url, case, run)
    headers = {"Authorization": f"Bearer {secret}"}

    with httpx.Client(timeout=10) as client:
        outsider_answer = client.get(url, headers={"Authorization": f"Bearer {outsider_secret}"})
        missing = client.get(_url(base_url, case, Run(pk=run.pk + 1000)), headers=headers)
        anonymous = client.get(url)
        answers = [
            client.get(url, headers={**headers, "Last-Event-ID": bad})
            for bad in ("abc", "-1", "1.5", "٣".encode(), "9" * 30)
        ]
        negative = client.get(url + "?after=-1", headers=headers)
        word = client.get(url + "?after=x", headers=headers)

    assert outsider_answer.status_code == missing.status_code == 404
    assert outsider_answer.json()["code"] == "not_found"
    assert anonymous.status_code == 401
    assert [a.status_code for a in answers] == [422] * 5
    assert "Last-Event-ID" in answers[0].json()["detail"]
    assert negative.status_code == word.status_code == 422


def test_a_person_gets_429_beyond_their_open_streams(
    base_url: str, lawyer: User, case: Case, settings: object
) -> None:
    settings.LEXWEB_SSE_STREAMS_PER_USER = 1  # type: ignore[attr-defined]
    run = _run(case, lawyer, events=1)
    secret, _ = token_for(lawyer)

    with open_stream(_url(base_url, case, run), secret) as response:
        frames = read_frames(response)  # kept: a generator let go closes the connection
        events_until(frames, 1)
        refused = httpx.get(
            _url(base_url, case, run), headers={"Authorization": f"Bearer {secret}"}, timeout=10
        )
    # The first stream closed: its place is free again once the server noticed.
    # (This person's entry only: another test's stream may still be on its way out.)
    wait_until(lambda: not streams.open_streams(lawyer.pk), 30, "the closed stream to be let go")
    with open_stream(_url(base_url, case, run), secret) as again:
        status = again.status_code

    assert refused.status_code == 429
    assert refused.json()["code"] == "too_many_streams" and refused.headers["Retry-After"]
    assert status == 200


# --- The long poll -----------------------------------------------------------------------------


def test_wait_answers_as_soon_as_an_event_is_stored(
    base_url: str, lawyer: User, case: Case
) -> None:
    run = _run(case, lawyer, events=2)
    secret, _ = token_for(lawyer)
    timer = threading.Timer(0.5, _append, args=(run,), kwargs={"text": "new"})

    started = time.monotonic()
    timer.start()
    answer = httpx.get(
        _url(base_url, case, run, tail="?after=2&wait=30"),
        headers={"Authorization": f"Bearer {secret}"},
        timeout=60,
    )
    took = time.monotonic() - started
    timer.join()

    assert answer.status_code == 200, answer.text
    assert [e["seq"] for e in answer.json()["items"]] == [3]
    assert 0.4 <= took < 10


def test_wait_answers_at_once_with_stored_events_or_a_finished_run(
    base_url: str, lawyer: User, case: Case
) -> None:
    run = _run(case, lawyer, events=2)
    secret, _ = token_for(lawyer)
    headers = {"Authorization": f"Bearer {secret}"}

    started = time.monotonic()
    stored = httpx.get(_url(base_url, case, run, tail="?after=1&wait=30"), headers=headers)
    _finish(run)
    finished = httpx.get(_url(base_url, case, run, tail="?after=3&wait=30"), headers=headers)
    took = time.monotonic() - started

    assert [e["seq"] for e in stored.json()["items"]] == [2]
    assert finished.status_code == 200
    assert finished.json() == {"items": [], "count": 0, "next": None}
    assert took < 5


@pytest.mark.slow
def test_wait_without_an_event_answers_an_empty_list_when_it_expires(
    base_url: str, lawyer: User, case: Case
) -> None:
    run = _run(case, lawyer, events=1)
    secret, _ = token_for(lawyer)

    started = time.monotonic()
    answer = httpx.get(
        _url(base_url, case, run, tail="?after=1&wait=1"),
        headers={"Authorization": f"Bearer {secret}"},
        timeout=30,
    )

    assert answer.status_code == 200
    assert answer.json() == {"items": [], "count": 0, "next": None}
    assert 0.9 <= time.monotonic() - started < 5


@pytest.mark.parametrize("wait", ["61", "-1", "x", "1.5", ""])
def test_wait_out_of_range_or_not_a_number_is_422(
    lawyer_api: Client, lawyer: User, case: Case, wait: str
) -> None:
    run = _run(case, lawyer, events=1)

    answer = lawyer_api.get(f"/api/v1/cases/{case.pk}/runs/{run.pk}/events?wait={wait}")

    assert answer.status_code == 422, answer.content
    assert answer.json()["code"] == "invalid"


def test_wait_is_for_members_only(outsider_api: Client, lawyer: User, case: Case) -> None:
    run = _run(case, lawyer, events=0)

    answer = outsider_api.get(f"/api/v1/cases/{case.pk}/runs/{run.pk}/events?wait=5")

    assert answer.status_code == 404


# --- The schema --------------------------------------------------------------------------------


def test_the_schema_documents_the_stream_and_wait(lawyer_api: Client) -> None:
    schema = lawyer_api.get("/api/v1/openapi.json").json()
    runs_path = "/api/v1/cases/{case_id}/runs/{run_id}/events"

    stream = schema["paths"][runs_path + "/stream"]["get"]
    listing = schema["paths"][runs_path]["get"]

    assert "text/event-stream" in stream["responses"]["200"]["content"]
    assert {"404", "422", "429"} <= set(stream["responses"])
    assert "after" in [p["name"] for p in stream["parameters"]]
    (wait,) = [p for p in listing["parameters"] if p["name"] == "wait"]
    assert wait["schema"]["maximum"] == 60 and wait["schema"]["minimum"] == 0
