"""A case's feed (issue 22 req 2): the events sent to a case's group are stored with the rows
they tell of, numbered per case in commit order, listed (`GET /cases/{id}/events`, a long poll
with `?wait=`) and streamed as Server-Sent Events (`.../events/stream`), resumable, closed when
access ends."""

import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.db import connection, transaction
from django.test import Client
from django.utils import timezone

from apps.accounts.models import AuditEvent, User
from apps.cases import events as case_events
from apps.cases.events import publish_to_case
from apps.cases.models import Case, CaseEvent
from apps.cases.selectors import MAX_EVENTS_PAGE
from apps.documents.models import Document
from tests.conftest import ws_connect
from tests.factories import UserFactory
from tests.harness.sse import (
    Frame,
    events_until,
    open_stream,
    read_frames,
    served_asgi,
    token_for,
)

pytestmark = pytest.mark.django_db(transaction=True, databases="__all__")


def _notice(case: Case, message: str) -> None:
    event: case_events.CaseNotice = {
        "type": "cases.notice",
        "case_id": case.pk,
        "level": "info",
        "message": message,
        "at": timezone.now().isoformat(),
    }
    publish_to_case(case_id=case.pk, event=event)


def _feed(case: Case) -> list[tuple[int | None, str]]:
    rows = CaseEvent.objects.filter(case=case).order_by("id")
    return [(e.seq, str(e.payload.get("message", e.kind))) for e in rows]


def _url(base: str, case: Case, tail: str = "") -> str:
    return f"{base}/api/v1/cases/{case.pk}/events{tail}"


def _joins(base: str, case: Case, lawyer_secret: str, name: str) -> str:
    """A new person added to the case through the served API: its `cases.notice` ("<name>
    joined the case ...") is published by the web process, as in production (a test thread's
    own publishes would share the channel layer's pool with the server's event loop)."""
    user = UserFactory(full_name=name)
    answer = httpx.post(
        f"{base}/api/v1/cases/{case.pk}/members",
        json={"email": user.email, "role": "staff"},
        headers={"Authorization": f"Bearer {lawyer_secret}"},
        timeout=30,
    )
    assert answer.status_code == 201, answer.content
    return name


# --- Stored and numbered -------------------------------------------------------------------------


def test_events_are_stored_with_their_transaction_and_numbered_in_commit_order(
    case: Case, other_case: Case
) -> None:
    _notice(case, "one")  # no transaction open: stored and numbered at once
    with transaction.atomic():
        _notice(case, "two")
        _notice(case, "three")
        # Not numbered before the commit: no reader can see it yet.
        assert _feed(case)[1:] == [(None, "two"), (None, "three")]
    with pytest.raises(RuntimeError), transaction.atomic():
        _notice(case, "rolled back")
        raise RuntimeError
    _notice(other_case, "elsewhere")
    case_services_revoke = {"type": "cases.membership_revoked", "case_id": case.pk, "user_id": 1}
    publish_to_case(case_id=case.pk, event=case_services_revoke)  # a control message: not stored

    assert _feed(case) == [(1, "one"), (2, "two"), (3, "three")]
    assert _feed(other_case) == [(1, "elsewhere")]


def test_characters_postgresql_cannot_store_do_not_fail_the_work_the_event_tells_of(
    case: Case,
) -> None:
    """A file name or an error text with NUL or a lone surrogate (from a file, a parser): the
    transaction that stores the event with its work commits, the event holds the rest."""
    with transaction.atomic():
        Case.objects.filter(pk=case.pk).update(title="Renamed with its event")
        publish_to_case(
            case_id=case.pk,
            event={
                "type": "documents.progress",
                "case_id": case.pk,
                "filename": "scan\x00\ud800.pdf",
                "error": ["bad\x00", {"k\x00": "v\udfff"}],
            },
        )
    (stored,) = CaseEvent.objects.filter(case=case)
    assert stored.seq == 1
    assert stored.payload["filename"] == "scan.pdf"
    assert stored.payload["error"] == ["bad", {"k": "v"}]
    assert Case.objects.get(pk=case.pk).title == "Renamed with its event"


def test_an_event_left_unnumbered_by_a_failure_is_numbered_with_the_next_one(case: Case) -> None:
    # As if the process died between the commit and the numbering.
    CaseEvent.objects.create(case=case, kind="cases.notice", payload={"message": "orphan"})
    _notice(case, "next")
    assert _feed(case) == [(1, "orphan"), (2, "next")]


def test_concurrent_writers_get_every_number_once_in_commit_order(case: Case) -> None:
    writers, each = 4, 10
    errors: list[BaseException] = []

    def write(n: int) -> None:
        try:
            for k in range(each):
                with transaction.atomic():
                    _notice(case, f"{n}-{k}")
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)

    assert not errors
    numbers = sorted(seq for seq, _ in _feed(case) if seq is not None)
    assert numbers == list(range(1, writers * each + 1))
    # Each writer's own events keep its order.
    by_seq = sorted((seq or 0, message) for seq, message in _feed(case))
    for n in range(writers):
        mine = [m for _, m in by_seq if m.startswith(f"{n}-")]
        assert mine == [f"{n}-{k}" for k in range(each)]


def test_real_work_lands_in_the_feed(
    case: Case, lawyer: User, lawyer_api: Client, run_jobs: Any
) -> None:
    """An upload read by a real worker and a member added: their events, in order."""
    upload = ("feed-note.txt", b"A note for the case feed.\n")
    answer = lawyer_api.post(
        f"/api/v1/cases/{case.pk}/documents",
        {"origin": "client", "files": [_file(*upload)]},
    )
    assert answer.status_code == 201, answer.content
    run_jobs()
    document = Document.objects.get(case=case, filename="feed-note.txt")
    assert document.status == Document.Status.READY

    listed = lawyer_api.get(f"/api/v1/cases/{case.pk}/events").json()
    kinds = [item["kind"] for item in listed["items"]]
    assert [item["seq"] for item in listed["items"]] == list(range(1, len(kinds) + 1))
    progress = [i["payload"] for i in listed["items"] if i["kind"] == "documents.progress"]
    assert progress and progress[-1]["document_id"] == document.pk
    assert progress[-1]["status"] == "ready"
    assert listed["count"] == len(kinds) and listed["next"] is None


def _file(name: str, content: bytes) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content, content_type="text/plain")


# --- The list and the long poll ------------------------------------------------------------------


def test_the_list_pages_after_a_number_and_is_audited(
    case: Case, lawyer: User, lawyer_api: Client
) -> None:
    for n in range(5):
        _notice(case, f"n{n}")
    first = lawyer_api.get(f"/api/v1/cases/{case.pk}/events?after=1&limit=2").json()
    assert [i["seq"] for i in first["items"]] == [2, 3]
    assert first["count"] == 4
    assert first["next"] == f"/api/v1/cases/{case.pk}/events?after=3&limit=2"
    assert first["items"][0]["kind"] == "cases.notice"
    assert first["items"][0]["payload"]["message"] == "n1"
    assert set(first["items"][0]) == {"seq", "kind", "payload", "created_at"}
    last = lawyer_api.get(first["next"]).json()
    assert [i["seq"] for i in last["items"]] == [4, 5] and last["next"] is None
    assert AuditEvent.objects.filter(actor=lawyer, action="case.events", case=case).exists()


@pytest.mark.parametrize(
    "query",
    ["after=-1", "limit=0", "limit=1001", "after=x", "wait=61", "wait=-1", f"after={2**63}"],
)
def test_bad_numbers_are_a_422(case: Case, lawyer_api: Client, query: str) -> None:
    answer = lawyer_api.get(f"/api/v1/cases/{case.pk}/events?{query}")
    assert answer.status_code == 422, (query, answer.content)
    assert answer.json()["code"] == "invalid"


def test_outsiders_get_404_and_see_nothing(
    case: Case, outsider_api: Client, outsider: User
) -> None:
    _notice(case, "private: settlement-draft.pdf")
    for tail in ("", "?wait=1", "/stream"):
        answer = outsider_api.get(f"/api/v1/cases/{case.pk}/events{tail}")
        assert answer.status_code == 404
        assert b"settlement" not in answer.content
    assert not AuditEvent.objects.filter(actor=outsider, case=case).exists()


@pytest.mark.slow
def test_the_long_poll_answers_at_the_first_new_event(case: Case, lawyer: User) -> None:
    _notice(case, "before")
    secret, _ = token_for(lawyer)
    with served_asgi() as base:
        timer = threading.Timer(1.0, _joins, args=(base, case, secret, "Della During"))
        started = time.monotonic()
        timer.start()
        answer = httpx.get(
            _url(base, case, "?after=1&wait=20"),
            headers={"Authorization": f"Bearer {secret}"},
            timeout=30,
        )
        took = time.monotonic() - started
        timer.join()
        quiet = httpx.get(
            _url(base, case, "?after=2&wait=1"),
            headers={"Authorization": f"Bearer {secret}"},
            timeout=30,
        )
    assert answer.status_code == 200
    messages = [i["payload"]["message"] for i in answer.json()["items"]]
    assert len(messages) == 1 and messages[0].startswith("Della During joined")
    assert took < 15  # it answered when the event came, not at the end of the wait
    assert quiet.json() == {"items": [], "count": 0, "next": None}


# --- The stream ----------------------------------------------------------------------------------


@pytest.fixture
def base_url(settings: Any) -> Iterator[str]:
    settings.LEXWEB_SSE_KEEPALIVE_SECONDS = 0.4
    settings.LEXWEB_WS_RECHECK_SECONDS = 1
    with served_asgi() as url:
        yield url


@pytest.mark.slow
def test_the_stream_sends_the_backlog_then_live_events_and_resumes_from_last_event_id(
    base_url: str, case: Case, lawyer: User
) -> None:
    for n in range(3):
        _notice(case, f"s{n}")
    secret, _ = token_for(lawyer)
    with open_stream(_url(base_url, case, "/stream?after=1"), secret) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = read_frames(response)
        backlog = events_until(frames, 2)
        _joins(base_url, case, secret, "Lee Live")
        (live,) = events_until(frames, 1)
        keep_alive = next(frames)
    assert [f.id for f in backlog] == ["2", "3"] and backlog[0].event == "cases.notice"
    assert backlog[0].json["payload"]["message"] == "s1"  # type: ignore[index]
    assert live.id == "4" and live.json["payload"]["message"].startswith("Lee Live joined")  # type: ignore[index,union-attr]
    assert keep_alive.comment == "keep-alive"

    # Reconnecting with the last number it saw: what came since, and nothing twice (no stream
    # is open now: this thread may publish).
    _notice(case, "while away")
    with open_stream(_url(base_url, case, "/stream"), secret, **{"Last-Event-ID": "4"}) as again:
        (missed,) = events_until(read_frames(again), 1)
    assert missed.id == "5" and missed.json["payload"]["message"] == "while away"  # type: ignore[index]


def test_the_stream_ends_when_the_member_leaves_the_case(
    base_url: str, case: Case, lawyer: User, staff: User
) -> None:
    secret, _ = token_for(staff)
    lawyer_secret, _ = token_for(lawyer)
    with open_stream(_url(base_url, case, "/stream"), secret) as response:
        frames = read_frames(response)
        _joins(base_url, case, lawyer_secret, "Hal Hello")
        events_until(frames, 1)
        removed = httpx.delete(
            f"{base_url}/api/v1/cases/{case.pk}/members/{staff.pk}",
            headers={"Authorization": f"Bearer {lawyer_secret}"},
            timeout=30,
        )
        assert removed.status_code == 204
        _joins(base_url, case, lawyer_secret, "Amy After")
        rest = _until_end(frames, seconds=20)
    ends = [f for f in rest if f.event == "end"]
    assert len(ends) == 1 and ends[0].json["reason"] == "membership_ended"
    assert "Amy After" not in "".join(f.data for f in rest)


def _until_end(frames: Iterator[Frame], *, seconds: float) -> list[Frame]:
    """Frames up to and with `event: end`; fails (never hangs) if none comes in `seconds`."""
    deadline = time.monotonic() + seconds
    seen: list[Frame] = []
    for frame in frames:
        seen.append(frame)
        if frame.event == "end":
            return seen
        assert time.monotonic() < deadline, f"no end of the stream in {seconds} s: {seen}"
    return seen


def test_a_bad_last_event_id_is_a_422(base_url: str, case: Case, lawyer: User) -> None:
    secret, _ = token_for(lawyer)
    for bad in (b"abc", b"-3", b"1e3", "٣".encode(), b"9" * 30):
        answer = httpx.get(
            _url(base_url, case, "/stream"),
            headers={"Authorization": f"Bearer {secret}", "Last-Event-ID": bad},
            timeout=10,
        )
        assert answer.status_code == 422, bad
        assert answer.json()["code"] == "invalid", bad


# --- The websocket -------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_case_socket_gets_each_event_with_its_number(case: Case, lawyer: User) -> None:
    socket, (connected, _) = await ws_connect(f"/ws/cases/{case.pk}/events/", cookie_user=lawyer)
    assert connected
    try:
        await sync_to_async(_notice)(case, "numbered")
        message = await socket.receive_json_from(timeout=10)
    finally:
        await socket.disconnect()
    assert message["type"] == "cases.notice" and message["message"] == "numbered"
    assert message["seq"] == 1 and message["created_at"]


async def _messages(socket: Any, count: int) -> list[dict[str, Any]]:
    return [await socket.receive_json_from(timeout=10) for _ in range(count)]


@pytest.mark.asyncio
async def test_a_socket_opened_after_a_number_gets_the_missed_events_once_then_live_ones(
    case: Case, lawyer: User
) -> None:
    for n in (1, 2, 3):
        await sync_to_async(_notice)(case, f"before {n}")
    path = f"/ws/cases/{case.pk}/events/?after=1"
    socket, (connected, _) = await ws_connect(path, cookie_user=lawyer)
    assert connected
    try:
        missed = await _messages(socket, 3)
        await sync_to_async(_notice)(case, "live")
        live = await socket.receive_json_from(timeout=10)
        assert await socket.receive_nothing(timeout=0.5)
    finally:
        await socket.disconnect()
    assert [(m.get("seq"), m.get("message")) for m in missed[:2]] == [
        (2, "before 2"),
        (3, "before 3"),
    ]
    assert missed[2] == {"type": "stream.caught_up", "seq": 3, "complete": True}
    assert (live["seq"], live["message"]) == (4, "live")
    # Reading the stored events is a read of the case's events, audited as the list is.
    assert (
        await sync_to_async(AuditEvent.objects.filter(action="case.events", actor=lawyer).count)()
        == 1
    )


@pytest.mark.asyncio
async def test_a_socket_opened_at_the_latest_number_says_it_then_sends_only_new_events(
    case: Case, lawyer: User
) -> None:
    for n in (1, 2):
        await sync_to_async(_notice)(case, f"old {n}")
    path = f"/ws/cases/{case.pk}/events/?after=latest"
    socket, (connected, _) = await ws_connect(path, cookie_user=lawyer)
    assert connected
    try:
        first = await socket.receive_json_from(timeout=10)
        await sync_to_async(_notice)(case, "new")
        new = await socket.receive_json_from(timeout=10)
    finally:
        await socket.disconnect()
    assert first == {"type": "stream.caught_up", "seq": 2, "complete": True}
    assert (new["seq"], new["message"]) == (3, "new")


@pytest.mark.asyncio
@pytest.mark.slow
async def test_an_event_published_out_of_order_brings_the_skipped_ones_from_the_table_first(
    case: Case, lawyer: User
) -> None:
    path = f"/ws/cases/{case.pk}/events/?after=latest"
    socket, (connected, _) = await ws_connect(path, cookie_user=lawyer)
    assert connected

    def store_two() -> list[CaseEvent]:
        for n in (1, 2):
            CaseEvent.objects.create(case=case, kind="cases.notice", payload={
                "type": "cases.notice", "case_id": case.pk, "level": "info",
                "message": f"stored {n}", "at": timezone.now().isoformat(),
            })  # fmt: skip
        return case_events.feed_number(case.pk)

    try:
        assert (await socket.receive_json_from(timeout=10))["seq"] == 0
        numbered = await sync_to_async(store_two)()
        # Only the second reaches the group (the first one's publish is late): the socket
        # sends the first from the table before it, and the late copy is dropped.
        layer = get_channel_layer()
        await layer.group_send(
            case_events.case_group(case.pk), case_events.feed_message(numbered[1])
        )
        got = await _messages(socket, 2)
        await layer.group_send(
            case_events.case_group(case.pk), case_events.feed_message(numbered[0])
        )
        assert await socket.receive_nothing(timeout=1)
    finally:
        await socket.disconnect()
    assert [(m["seq"], m["message"]) for m in got] == [(1, "stored 1"), (2, "stored 2")]


@pytest.mark.asyncio
async def test_a_number_past_the_feed_or_too_far_behind_asks_the_page_to_read_its_state(
    case: Case, lawyer: User
) -> None:
    def store(count: int) -> None:
        CaseEvent.objects.bulk_create(
            CaseEvent(case=case, seq=n, kind="cases.notice", payload={"type": "cases.notice"})
            for n in range(1, count + 1)
        )

    await sync_to_async(store)(MAX_EVENTS_PAGE + 2)
    for after, complete in ((MAX_EVENTS_PAGE + 5, False), (1, False), (2, True)):
        path = f"/ws/cases/{case.pk}/events/?after={after}"
        socket, (connected, _) = await ws_connect(path, cookie_user=lawyer)
        assert connected
        try:
            if complete:
                assert len(await _messages(socket, MAX_EVENTS_PAGE)) == MAX_EVENTS_PAGE
            last = await socket.receive_json_from(timeout=10)
        finally:
            await socket.disconnect()
        assert last == {
            "type": "stream.caught_up",
            "seq": MAX_EVENTS_PAGE + 2,
            "complete": complete,
        }


@pytest.mark.asyncio
@pytest.mark.parametrize("after", ["-1", "x", "1.5", str(2**63)])
async def test_a_bad_after_closes_the_socket(case: Case, lawyer: User, after: str) -> None:
    path = f"/ws/cases/{case.pk}/events/?after={after}"
    _, (connected, code) = await ws_connect(path, cookie_user=lawyer)
    assert (connected, code) == (False, 4400)


# --- The schema ----------------------------------------------------------------------------------


def test_the_schema_documents_the_feed_its_stream_and_wait(client: Client) -> None:
    schema = client.get("/api/v1/openapi.json").json()
    path = "/api/v1/cases/{case_id}/events"

    stream = schema["paths"][path + "/stream"]["get"]
    listing = schema["paths"][path]["get"]

    assert "text/event-stream" in stream["responses"]["200"]["content"]
    assert "keep-alive" in stream["responses"]["200"]["description"]
    assert {"404", "422", "429"} <= set(stream["responses"])
    assert "after" in [p["name"] for p in stream["parameters"]]
    assert "Last-Event-ID" in stream["description"]
    (wait,) = [p for p in listing["parameters"] if p["name"] == "wait"]
    assert wait["schema"]["maximum"] == 60 and wait["schema"]["minimum"] == 0
    page = listing["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    assert set(schema["components"]["schemas"][page.rsplit("/", 1)[1]]["properties"]) == {
        "items",
        "count",
        "next",
    }
