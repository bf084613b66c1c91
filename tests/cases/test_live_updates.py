"""The whole live-update path: API -> job row -> real worker process -> channel layer ->
websocket of the right user, and of nobody else."""

import asyncio
import subprocess

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from django.test import Client

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import services
from apps.cases.events import case_group
from apps.cases.models import Case
from tests.conftest import ws_connect

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True, databases="__all__")]

WORKER_TIMEOUT = 60


def _events_path(case: Case) -> str:
    return f"/ws/cases/{case.pk}/events/"


@pytest.mark.slow
async def test_job_in_real_worker_reaches_member_and_not_a_user_of_another_case(
    lawyer: User,
    outsider: User,
    case: Case,
    other_case: Case,
    lawyer_api: Client,
    worker_process: subprocess.Popen[bytes],
) -> None:
    member, member_state = await ws_connect(_events_path(case), cookie_user=lawyer)
    other, other_state = await ws_connect(_events_path(other_case), cookie_user=outsider)
    assert member_state[0] and other_state[0]

    response = await sync_to_async(lawyer_api.post)(f"/api/v1/cases/{case.pk}/worker-check")
    assert response.status_code == 202

    event = await member.receive_json_from(timeout=WORKER_TIMEOUT)
    assert event["type"] == "cases.notice"
    assert event["case_id"] == case.pk
    assert "ran the live-update check" in event["message"]
    assert worker_process.poll() is None
    assert await other.receive_nothing(timeout=1)
    await member.disconnect()
    await other.disconnect()


async def test_non_member_and_anonymous_are_refused_with_the_same_code(
    outsider: User, case: Case, other_case: Case
) -> None:
    _, as_outsider = await ws_connect(_events_path(case), cookie_user=outsider)
    _, as_anonymous = await ws_connect(_events_path(case))
    _, no_such_case = await ws_connect("/ws/cases/987654321/events/", cookie_user=outsider)

    assert as_outsider == as_anonymous == no_such_case == (False, 4404)


async def test_session_from_another_origin_is_refused(lawyer: User, case: Case) -> None:
    _, state = await ws_connect(_events_path(case), cookie_user=lawyer, origin="https://evil.test")

    assert state[0] is False


async def test_bearer_token_opens_the_stream_without_an_origin(lawyer: User, case: Case) -> None:
    issued = await sync_to_async(account_services.token_create)(user=lawyer, name="agent")

    communicator, state = await ws_connect(_events_path(case), bearer=issued.secret, origin=None)
    _, bad_state = await ws_connect(_events_path(case), bearer="lxw_bad_token", origin=None)

    assert state == (True, None)
    assert bad_state == (False, 4404)
    await communicator.disconnect()


@pytest.mark.parametrize(
    "frame",
    [
        {"text_data": '{"type": "cases.notice"}'},
        {"text_data": "not json"},
        {"text_data": "x" * 1_000_000},
        {"bytes_data": b"\x00\xff" * 10},
    ],
)
async def test_anything_sent_by_the_client_closes_the_socket(
    lawyer: User, case: Case, frame: dict[str, str | bytes]
) -> None:
    communicator, _ = await ws_connect(_events_path(case), cookie_user=lawyer)

    await communicator.send_to(**frame)  # type: ignore[arg-type]

    assert await communicator.receive_output(timeout=5) == {"type": "websocket.close", "code": 4400}


async def test_removed_member_is_disconnected_at_once(
    lawyer: User, staff: User, case: Case
) -> None:
    communicator, _ = await ws_connect(_events_path(case), cookie_user=staff)

    await sync_to_async(services.member_remove)(actor=lawyer, case=case, user_id=staff.pk)

    closed = await communicator.receive_output(timeout=10)
    assert closed == {
        "type": "websocket.close",
        "code": 4403,
        "reason": "Access ended: you are no longer a member of this case.",
    }


async def test_group_messages_reach_every_member_socket(
    lawyer: User, staff: User, case: Case
) -> None:
    first, _ = await ws_connect(_events_path(case), cookie_user=lawyer)
    second, _ = await ws_connect(_events_path(case), cookie_user=staff)
    notice = {
        "type": "cases.notice",
        "case_id": case.pk,
        "level": "info",
        "message": "hi",
        "at": "now",
    }

    await get_channel_layer().group_send(case_group(case.pk), notice)

    received = await asyncio.gather(first.receive_json_from(10), second.receive_json_from(10))
    assert [r["message"] for r in received] == ["hi", "hi"]
    await first.disconnect()
    await second.disconnect()


async def test_every_event_type_the_apps_publish_is_relayed_and_keeps_the_socket_open(
    lawyer: User, case: Case
) -> None:
    """A case event with no handler would close every open socket of the case with an error;
    each app's event types reach the member, and the stream stays usable after them."""
    socket, _ = await ws_connect(_events_path(case), cookie_user=lawyer)
    events = [
        {"type": "documents.progress", "case_id": case.pk, "document_id": 1, "filename": "a",
         "status": "ready", "pages_done": 1, "page_count": 1, "error": "",
         "provenance": "clear"},
        {"type": "documents.production_progress", "case_id": case.pk, "production_id": 1,
         "volume": "V1", "status": "ready", "pages_done": 1, "page_count": 1, "error": ""},
        {"type": "documents.export_progress", "case_id": case.pk, "production_id": 1,
         "export_id": 1, "status": "ready", "error": ""},
        {"type": "verification.progress", "case_id": case.pk, "draft_id": 1, "version": 1,
         "verification_id": 1, "status": "done", "claims_done": 3, "claim_count": 3,
         "blocking": 0, "error": ""},
    ]  # fmt: skip
    for event in events:
        await get_channel_layer().group_send(case_group(case.pk), event)
        assert (await socket.receive_json_from(10))["type"] == event["type"]
    await socket.disconnect()
