from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from apps.documents import rendition_services


class Command(BaseCommand):
    help = (
        "Queue the rendering to PDF of every ready text, e-mail, Word, Excel and Outlook "
        "document that has none yet (read before rendering existed), and retry those whose "
        "rendering failed or was unavailable (--retry)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--retry", action="store_true", help="also failed and unavailable")

    def handle(self, *args: Any, **options: Any) -> None:
        queued = rendition_services.renditions_queue_missing(retry=options["retry"])
        self.stdout.write(f"Queued {queued} rendering job(s) on the cpu queue.")
