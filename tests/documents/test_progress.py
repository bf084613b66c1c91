"""Requirement 3's progress: stored on the document row and pushed, through a real worker
process and the channel layer, to the sockets of the case's members and nobody else."""

import subprocess
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.testing import WebsocketCommunicator
from django.test import Client

from apps.accounts.models import User
from apps.cases.models import Case
from apps.documents.models import Document
from tests.conftest import ws_connect
from tests.documents.files import real, upload

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.django_db(transaction=True, databases="__all__"),
]

WORKER_TIMEOUT = 60
TEN_PAGES = "ca5_st-pierre-v-standard-ins_21-50498.pdf"


def _events_path(case: Case) -> str:
    return f"/ws/cases/{case.pk}/events/"


async def _until_finished(socket: WebsocketCommunicator, document_id: int) -> list[Any]:
    """Every event this socket receives, up to the document's final one."""
    events = []
    while True:
        event = await socket.receive_json_from(timeout=WORKER_TIMEOUT)
        events.append(event)
        if event.get("document_id") == document_id and event["status"] in ("ready", "failed"):
            return events


async def _rendition_until_done(socket: WebsocketCommunicator) -> list[Any]:
    """Every event this socket receives up to a rendering's final one."""
    events = []
    while True:
        event = await socket.receive_json_from(timeout=WORKER_TIMEOUT)
        events.append(event)
        if event.get("type") == "documents.rendition_progress" and event["status"] in (
            "ready",
            "failed",
            "unavailable",
        ):
            return events


@pytest.mark.slow
async def test_member_sees_progress_pushed_by_a_real_worker_until_ready(
    lawyer: User,
    outsider: User,
    case: Case,
    other_case: Case,
    lawyer_api: Client,
    worker_process: subprocess.Popen[bytes],
) -> None:
    member, member_state = await ws_connect(_events_path(case), cookie_user=lawyer)
    other, other_state = await ws_connect(_events_path(other_case), cookie_user=outsider)
    _, refused = await ws_connect(_events_path(case), cookie_user=outsider)
    assert member_state == other_state == (True, None)
    assert refused == (False, 4404)

    response = await sync_to_async(lawyer_api.post)(
        f"/api/v1/cases/{case.pk}/documents",
        {"files": [upload("st-pierre.pdf", real(TEN_PAGES))], "origin": "court"},
    )
    assert response.status_code == 201, response.content
    document_id = response.json()["results"][0]["document"]["id"]

    events = await _until_finished(member, document_id)

    assert {e["type"] for e in events} == {"documents.progress"}
    assert {(e["case_id"], e["filename"], e["page_count"]) for e in events} == {
        (case.pk, "st-pierre.pdf", 10)
    }
    final = events[-1]
    assert (final["status"], final["pages_done"], final["error"]) == ("ready", 10, "")
    # The registry checked the text before the document became ready, and says so live.
    assert final["provenance"] == "clear"
    assert {e["provenance"] for e in events[:-1]} <= {"pending"}
    # Progress from the worker: never backwards, and at least one step between 0 and 10.
    worked = [e for e in events if e["status"] != "queued"]
    done = [e["pages_done"] for e in worked]
    assert done == sorted(done)
    assert len({tuple(sorted(e.items())) for e in events}) == len(events), "no event twice"
    assert any(0 < n < 10 for n in done), done
    assert {e["status"] for e in worked} == {"processing", "ready"}
    assert worker_process.poll() is None

    # The other case's member heard nothing of it.
    assert await other.receive_nothing(timeout=1)

    # The row is the truth: a reloaded page gets the same state over REST.
    stored = await Document.objects.aget(pk=document_id)
    assert (stored.status, stored.pages_done, stored.page_count) == ("ready", 10, 10)
    reloaded = await sync_to_async(lawyer_api.get)(
        f"/api/v1/cases/{case.pk}/documents/{document_id}"
    )
    body = reloaded.json()
    assert (body["status"], body["pages_done"], body["page_count"]) == ("ready", 10, 10)
    assert await stored.pages.acount() == 10

    await member.disconnect()
    await other.disconnect()


@pytest.mark.slow
async def test_every_member_socket_hears_the_upload_and_a_failed_file_sends_nothing(
    lawyer: User,
    staff: User,
    case: Case,
    lawyer_api: Client,
    worker_process: subprocess.Popen[bytes],
) -> None:
    lawyer_socket, _ = await ws_connect(_events_path(case), cookie_user=lawyer)
    staff_socket, _ = await ws_connect(_events_path(case), cookie_user=staff)

    response = await sync_to_async(lawyer_api.post)(
        f"/api/v1/cases/{case.pk}/documents",
        {
            "files": [
                upload("broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 4),
                upload("note.txt", b"A short note for the file."),
            ],
            "origin": "client",
        },
    )
    assert [r["status"] for r in response.json()["results"]] == ["error", "created"]
    document_id = response.json()["results"][1]["document"]["id"]

    for socket in (lawyer_socket, staff_socket):
        events = await _until_finished(socket, document_id)
        # Each step exactly once: queued (from the upload), then the worker's three.
        steps = [(e["status"], e["pages_done"], e["page_count"]) for e in events]
        assert sorted(steps) == sorted(
            [("queued", 0, 1), ("processing", 0, 1), ("processing", 1, 1), ("ready", 1, 1)]
        )
        assert [s for s in steps if s[0] != "queued"][-1] == ("ready", 1, 1)
        # Nothing at all about the refused file: no row, so no event.
        assert {(e["document_id"], e["filename"]) for e in events} == {(document_id, "note.txt")}
    # Then the note's rendering to PDF (a job of its own), and nothing more.
    rendering = await _rendition_until_done(lawyer_socket)
    assert {(e["document_id"], e["type"]) for e in rendering} == {
        (document_id, "documents.rendition_progress")
    }
    assert await lawyer_socket.receive_nothing(timeout=1)

    await lawyer_socket.disconnect()
    await staff_socket.disconnect()
