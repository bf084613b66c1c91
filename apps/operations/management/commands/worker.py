from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.operations.worker import WorkerRunner


def _queues(raw: str) -> list[str]:
    return [queue.strip() for queue in raw.split(",") if queue.strip()]


class Command(BaseCommand):
    help = (
        "Run a job worker (Procrastinate). At start, and whenever the database comes back, it "
        "first queues again the jobs whose worker died. On SIGTERM or Ctrl-C it takes no new "
        "job and lets running ones finish within LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS, then "
        "leaves the rest to be retried at the next start; further signals only say it is still "
        "waiting. A database that goes away is waited for, with backoff; it never exits 0 on "
        "its own."
    )
    # A job runner, not a web process: the web checks are not its business.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "-q",
            "--queues",
            default="",
            help="comma-separated queues to take jobs from, e.g. cpu or cluster "
            "(default: all queues)",
        )
        parser.add_argument(
            "-c",
            "--concurrency",
            type=int,
            default=1,
            help="jobs run at once (default 1; sync jobs each take a thread)",
        )
        parser.add_argument(
            "-n", "--name", default="worker", help="worker name in the logs (default: worker)"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["concurrency"] < 1:
            raise CommandError(f"--concurrency must be at least 1, not {options['concurrency']}.")
        runner = WorkerRunner(
            queues=_queues(options["queues"]) or None,
            concurrency=options["concurrency"],
            grace_seconds=settings.LEXWEB_JOB_SHUTDOWN_GRACE_SECONDS,
            name=options["name"],
            say=self._say,
        )
        runner.run()

    def _say(self, line: str) -> None:
        self.stdout.write(line)
        # Read live by the launcher or systemd's journal: a block buffer would hold lines back.
        self.stdout.flush()
