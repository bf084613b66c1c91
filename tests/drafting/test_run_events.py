"""The run stream over a websocket (real ASGI stack, real channel layer on PostgreSQL): stored
events after the number a client saw, then live ones, every number once and in order; only
members of the run's case get in, and leaving the case closes the socket."""

from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.db import transaction

from apps.accounts.models import User
from apps.cases import services as case_services
from apps.cases.models import Case
from apps.drafting.models import Run, RunEvent
from apps.drafting.services import events as event_writer
from apps.evidence.models import Packet
from tests.conftest import ws_connect

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True, databases="__all__")]


def _run_with_events(case: Case, user: User, count: int) -> Run:
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
    for n in range(count):
        event_writer.run_event_append(run=run, kind="stage.tokens", payload={"text": f"t{n + 1}"})
    return run


def _path(case: Case, run: Run, after: object | None = None) -> str:
    path = f"/ws/cases/{case.pk}/runs/{run.pk}/events/"
    return path if after is None else f"{path}?after={after}"


async def _seqs(communicator: WebsocketCommunicator, count: int) -> list[int]:
    return [(await communicator.receive_json_from(timeout=10))["seq"] for _ in range(count)]


async def test_reconnecting_with_the_last_number_gets_the_rest_then_live_events(
    lawyer: User, case: Case
) -> None:
    run = await sync_to_async(_run_with_events)(case, lawyer, 5)

    first, state = await ws_connect(_path(case, run), cookie_user=lawyer)
    assert state == (True, None)
    assert await _seqs(first, 5) == [1, 2, 3, 4, 5]
    await first.disconnect()
    again, _ = await ws_connect(_path(case, run, after=3), cookie_user=lawyer)
    stored = await again.receive_json_from(timeout=10)
    await sync_to_async(event_writer.run_event_append)(run=run.pk, kind="run.status", payload={})

    assert stored["seq"] == 4 and stored["payload"] == {"text": "t4"}
    assert await _seqs(again, 2) == [5, 6]
    assert await again.receive_nothing(timeout=0.5)
    await again.disconnect()


def _event_stored_unpublished(run: Run) -> None:
    """An event whose group message is late (another transaction publishes after this one)."""
    with transaction.atomic():
        seq = Run.objects.filter(pk=run.pk).values_list("event_seq", flat=True).get() + 1
        Run.objects.filter(pk=run.pk).update(event_seq=seq)
        RunEvent.objects.create(run=run, seq=seq, kind="stage.tokens", payload={"late": True})


async def test_a_gap_in_the_live_numbers_is_filled_from_the_table_and_repeats_are_dropped(
    lawyer: User, case: Case
) -> None:
    run = await sync_to_async(_run_with_events)(case, lawyer, 1)
    socket, _ = await ws_connect(_path(case, run), cookie_user=lawyer)
    assert await _seqs(socket, 1) == [1]

    await sync_to_async(_event_stored_unpublished)(run)
    third = await sync_to_async(event_writer.run_event_append)(run=run.pk, kind="x", payload={})
    # The same message again (a layer that delivers twice): dropped.
    layer_message: dict[str, Any] = dict(event_writer.event_message(third))
    await get_channel_layer().group_send(f"run.{run.pk}", layer_message)

    received = [await socket.receive_json_from(timeout=10) for _ in range(2)]
    assert [m["seq"] for m in received] == [2, 3]
    assert received[0]["payload"] == {"late": True}
    assert await socket.receive_nothing(timeout=0.5)
    await socket.disconnect()


async def test_non_members_missing_runs_and_bad_numbers_are_refused(
    lawyer: User, outsider: User, case: Case, other_case: Case
) -> None:
    run = await sync_to_async(_run_with_events)(case, lawyer, 2)
    theirs = await sync_to_async(_run_with_events)(other_case, outsider, 1)

    answers = [
        (await ws_connect(_path(case, run), cookie_user=outsider))[1],
        (await ws_connect(_path(case, run)))[1],
        # A run of another case under this case's id: the same answer as a missing one.
        (await ws_connect(f"/ws/cases/{case.pk}/runs/{theirs.pk}/events/", cookie_user=lawyer))[1],
        (await ws_connect(f"/ws/cases/{case.pk}/runs/987654321/events/", cookie_user=lawyer))[1],
        (await ws_connect(_path(case, run, after="x"), cookie_user=lawyer))[1],
        (await ws_connect(_path(case, run, after=-1), cookie_user=lawyer))[1],
    ]

    assert answers == [(False, 4404)] * 4 + [(False, 4400)] * 2


async def test_a_member_removed_while_watching_is_disconnected_at_once(
    lawyer: User, staff: User, case: Case
) -> None:
    run = await sync_to_async(_run_with_events)(case, lawyer, 1)
    socket, _ = await ws_connect(_path(case, run), cookie_user=staff)
    assert await _seqs(socket, 1) == [1]

    await sync_to_async(case_services.member_remove)(actor=lawyer, case=case, user_id=staff.pk)
    await sync_to_async(event_writer.run_event_append)(run=run.pk, kind="after", payload={})

    assert await socket.receive_output(timeout=10) == {
        "type": "websocket.close",
        "code": 4403,
        "reason": "Access ended: you are no longer a member of this case.",
    }


def _membership_deleted_silently(case: Case, user: User) -> None:
    """The membership row gone without any event (as from the shell): only a check finds it."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM cases_membership WHERE case_id = %s AND user_id = %s", [case.pk, user.pk]
        )


@pytest.mark.slow
async def test_sockets_checked_before_every_event_share_batched_checks_that_still_end_access(
    lawyer: User, staff: User, case: Case, settings: Any
) -> None:
    from apps.accounts import access

    # Every event re-checked: each socket used to run its own queries on a new connection.
    settings.LEXWEB_WS_RECHECK_SECONDS = 0
    run = await sync_to_async(_run_with_events)(case, lawyer, 1)
    sockets = [(await ws_connect(_path(case, run), cookie_user=staff))[0] for _ in range(8)]
    for socket in sockets:
        assert await _seqs(socket, 1) == [1]
    watch = access._watch()
    rounds = watch.rounds

    await sync_to_async(event_writer.run_event_append)(run=run.pk, kind="x", payload={})
    for socket in sockets:
        assert await _seqs(socket, 1) == [2]
    # Checks of one batch each, shared: fewer rounds than sockets (the timer adds one or two).
    assert watch.rounds - rounds <= 4

    await sync_to_async(_membership_deleted_silently)(case, staff)
    await sync_to_async(event_writer.run_event_append)(run=run.pk, kind="secret", payload={})
    for socket in sockets:
        closed = await socket.receive_output(timeout=10)
        assert (closed["type"], closed["code"]) == ("websocket.close", 4403)
        assert await socket.receive_nothing(timeout=0.1)
