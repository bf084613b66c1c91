"""`manage.py board_queues`: the drafting stage queues of this site (one per board, `board.<id>`),
grouped by GPU host, one line per host: the host's id, a tab, its boards' queues joined by
commas, a tab, the jobs its worker should run at once (the slots of its boards' enabled
backends, at least 1 per board). The launcher starts one worker per line, as a real site runs
one worker per GPU host serving that host's boards."""

from itertools import groupby
from typing import Any

from django.core.management.base import BaseCommand
from django.db.models import Q, Sum

from apps.cluster.models import Board
from apps.drafting import runs


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
            self.stdout.write(f"{host_id}\t{queues}\t{slots}")
