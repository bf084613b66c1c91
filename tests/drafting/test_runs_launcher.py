"""`manage.py board_queues`, which the launcher reads to start one worker per GPU host serving
its boards' drafting queues."""

import io

import pytest
from django.core.management import call_command

from apps.cluster.models import Backend
from apps.drafting.management.commands.board_queues import STAGES_WAITING
from tests.cluster.dispatch_fixtures import backend_make, board_make, closed_port_url

pytestmark = pytest.mark.django_db


def test_board_queues_lists_each_hosts_board_queues_with_their_slots_and_room_to_wait() -> None:
    a = backend_make(base_url=closed_port_url(), board="board-a", slots=3).board
    backend_make(base_url=closed_port_url(), board="board-a", slots=2)
    off = backend_make(base_url=closed_port_url(), board="board-b", slots=4)
    Backend.objects.filter(pk=off.pk).update(enabled=False)
    other = board_make("pair-0", host="ollama-host")
    out = io.StringIO()

    call_command("board_queues", stdout=out)

    assert [line.split("\t") for line in out.getvalue().splitlines()] == [
        # Enabled slots (at least one per board), plus room for stages waiting for a slot.
        [str(a.host_id), f"board.{a.pk},board.{off.board_id}", str(6 + STAGES_WAITING)],
        [str(other.host_id), f"board.{other.pk}", str(1 + STAGES_WAITING)],
    ]
