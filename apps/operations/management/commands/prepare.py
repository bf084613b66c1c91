from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = (
        "What `make run` does before it starts the web and the workers, in one process: apply "
        "the migrations, collect the static files, make the first admin (ensure_admin) and, "
        "with --demo, seed the demo case and cluster. Each step is the command of that name; a "
        "step that fails stops the rest with its own message."
    )
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--demo", action="store_true", help="also seed_demo and seed_demo_site")

    def handle(self, *args: Any, **options: Any) -> None:
        # One interpreter for every step: each separate `manage.py` start costs seconds.
        call_command("migrate", interactive=False, verbosity=0)
        call_command("collectstatic", interactive=False, verbosity=0)
        call_command("ensure_admin")
        if options["demo"]:
            call_command("seed_demo")
            call_command("seed_demo_site")
