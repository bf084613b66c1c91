import sys
import time
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.operations.services import backup


class Command(BaseCommand):
    help = (
        "Back up this install into DIR (new or empty): the database (pg_dump, custom format) "
        "and every stored original it refers to, consistent with each other while the product "
        "runs (one database snapshot). Stored files are hard-linked when DIR is on the store's "
        "filesystem (copy the folder elsewhere to keep it safe), else copied; --copy always "
        "copies. Writes DIR/manifest.json last."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("directory", metavar="DIR", type=Path, help="new or empty folder")
        parser.add_argument(
            "--copy", action="store_true", help="copy stored files, never hard-link them"
        )
        parser.add_argument(
            "--pg-bin", type=Path, default=None, help="folder holding the pg_dump to use"
        )

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.monotonic()

        def progress(line: str) -> None:
            self.stdout.write(f"backup: [{time.monotonic() - started:6.1f} s] {line}")
            sys.stdout.flush()

        try:
            backup.backup_create(
                directory=options["directory"],
                progress=progress,
                pg_bin=options["pg_bin"],
                copy=options["copy"],
            )
        except backup.BackupError as exc:
            raise CommandError(exc.message) from None
