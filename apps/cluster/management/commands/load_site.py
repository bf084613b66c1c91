from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from apps.cluster.services import site


class Command(BaseCommand):
    help = (
        "Load a whole site description (hosts, GPUs, links, boards, backends, deployments, "
        "roles) from a YAML file, all or nothing. See examples/reference_site.yaml."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the site description (YAML)")

    def handle(self, *args: Any, **options: Any) -> None:
        path = Path(options["file"])
        try:
            if path.stat().st_size > site.MAX_SITE_FILE_BYTES:
                raise CommandError(f"{path} is over {site.MAX_SITE_FILE_BYTES:,} bytes.")
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise CommandError(f"{path}: no such file.") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"{path}: cannot read it as UTF-8 text ({exc}).") from None
        try:
            loaded = site.site_load(text=text)
        except site.SiteError as exc:
            raise CommandError(f"{path}: {exc.message} Nothing was changed.") from None
        self.stdout.write(
            f"Loaded {path}: {loaded.hosts} hosts, {loaded.gpus} GPUs, {loaded.boards} boards, "
            f"{loaded.backends} backends, {loaded.deployments} deployments, "
            f"{loaded.routes} role routes."
        )
