"""`manage.py board_queues`: the drafting stage queues of this site (one per board, `board.<id>`),
grouped by GPU host, one line per host: the host's id, a tab, its boards' queues joined by
commas, a tab, the jobs its worker should take at once. The launcher starts one worker per line,
as a real site runs one worker per GPU host serving that host's boards.

The jobs at once are the slots of the host's boards' enabled backends (at least 1 per board)
plus STAGES_WAITING. A stage job that finds its board's slots taken waits inside the worker, in
the cluster's admission queue (by priority, then first come), and holds one of the worker's
jobs meanwhile. Were the worker's jobs only the slots, a backlog on one board (say four gates
waiting for the gate board) would fill them, and a stage queued for another board of the host
would wait in the database queue while that board stood idle. With the extra room, up to
STAGES_WAITING stages of the host can wait for their boards and every other board still gets
its stages at once (tests/drafting/test_runs_scheduling.py, bench/bench_scheduling.py)."""

from itertools import groupby
from typing import Any

from django.core.management.base import BaseCommand
from django.db.models import Q, Sum

from apps.cluster.models import Board
from apps.drafting.services import runs

# Stage jobs of one host that may wait in its worker for a slot of their board. A waiting job
# costs a coroutine and a place in its worker's one watch query (every 0.2 s, pipeline.watch).
STAGES_WAITING = 32


class Command(BaseCommand):
    help = "List the drafting stage queues (one per board) by host, with worker concurrency."

    def handle(self, *args: Any, **options: Any) -> None:
        boards = Board.objects.annotate(
            slots=Sum("backends__slots", filter=Q(backends__enabled=True))
        ).order_by("host_id", "pk")
        for host_id, group in groupby(boards, key=lambda board: board.host_id):
            members = list(group)
            queues = ",".join(runs.board_queue(board.pk) for board in members)
            slots = sum(max(1, board.slots or 0) for board in members)
            self.stdout.write(f"{host_id}\t{queues}\t{slots + STAGES_WAITING}")
