import signal
import socket
import sys
import threading
from types import FrameType
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.cluster import agent
from apps.cluster.nvml import open_nvml
from lexweb.errors import DomainError


class Command(BaseCommand):
    help = (
        "Run on each GPU host: read NVML every few seconds (utilisation, memory, temperature, "
        "power, clocks, processes), record it and push it to the cluster dashboard. Without "
        "NVML it says so in one line and keeps retrying. Stops cleanly on Ctrl-C or SIGTERM."
    )
    # A long-running reader of NVML, not a web process: the web checks are not its business.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--host", default=None, help="host name to report as (default: this machine's name)"
        )
        # Parsed in handle() so that a bad value gets one line, not argparse's usage block.
        parser.add_argument(
            "--interval",
            default="5",
            help=f"seconds between samples, {agent.MIN_INTERVAL_S:g} to "
            f"{agent.MAX_INTERVAL_S:g} (default 5)",
        )
        parser.add_argument(
            "--once",
            action="store_true",
            help="read once and exit: 0 when recorded, 1 when there is no NVML",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        host_name = socket.gethostname() if options["host"] is None else options["host"]
        try:
            interval = agent.interval_parse(options["interval"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        stop = threading.Event()

        def request_stop(signum: int, frame: FrameType | None) -> None:
            stop.set()

        # Restored afterwards, for callers that run the command in their own process.
        previous = {
            signum: signal.signal(signum, request_stop)
            for signum in (signal.SIGINT, signal.SIGTERM)
        }
        try:
            status = agent.run_agent(
                host_name=host_name,
                interval=interval,
                nvml_factory=open_nvml,
                once=options["once"],
                stop_event=stop,
                say=self._say,
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)
        if status:
            sys.exit(status)

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        # Read live by systemd's journal or a pipe: a block buffer would hold lines back.
        self.stdout.flush()
