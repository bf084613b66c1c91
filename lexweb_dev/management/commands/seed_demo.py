from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from lexweb_dev import demo


class Command(BaseCommand):
    help = "Create the demo case and a demo lawyer, once. Does nothing if LEXWEB_DEMO_DATA=false."

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.LEXWEB_DEMO_DATA:
            return
        case = demo.demo_case_create()
        if case is not None:
            self.stdout.write(f"Demo case {case.number} created; the first admin is a member.")
