import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.operations.services import backup


class Command(BaseCommand):
    help = (
        "Restore a backup made by `backup` into this install, which must be empty (no table in "
        "its database, no file in its store): run it before the first `make run`. Checks the "
        "backup's SHA-256s first, then verifies every restored original and every frozen "
        "packet's content hash; exits 1 on any mismatch."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", metavar="DIR", type=Path, help="a backup folder")
        parser.add_argument(
            "--verify-only",
            action="store_true",
            help="only check the backup against its manifest; change nothing",
        )
        parser.add_argument(
            "--pg-bin", type=Path, default=None, help="folder holding the pg_restore to use"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()

        def progress(line: str) -> None:
            self.stdout.write(f"restore: [{time.monotonic() - started:6.1f} s] {line}")
            sys.stdout.flush()

        try:
            report = backup.backup_restore(
                directory=options["directory"],
                progress=progress,
                pg_bin=options["pg_bin"],
                verify_only=options["verify_only"],
            )
        except backup.BackupError as exc:
            raise CommandError(exc.message) from None
        if options["verify_only"]:
            progress(f"backup is intact ({report.seconds:.1f} s); nothing was changed")
            return
        progress(
            f"verified {report.blobs} stored file(s) by SHA-256, {report.documents} document(s), "
            f"{report.frozen_packets} frozen packet(s) by content hash"
        )
        if report.running_jobs:
            progress(
                f"{report.running_jobs} job(s) were running when the backup was taken: they run "
                "again from the start when the workers start"
            )
        if report.unapplied_migrations:
            progress(
                f"{report.unapplied_migrations} migration(s) of this code are newer than the "
                "backup: `make run` applies them"
            )
        if report.problems:
            for problem in report.problems:
                self.stderr.write(f"restore: MISMATCH {problem}")
            raise CommandError(
                f"{len(report.problems)} mismatch(es) after restoring into {report.database}."
            )
        progress(f"restored into {report.database} in {report.seconds:.1f} s")
