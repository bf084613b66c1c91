from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from lexweb_dev import demo, demo_evidence


class Command(BaseCommand):
    help = (
        "Create the demo case and a demo lawyer, and upload its documents (their reading, "
        "Bates stamping and the frozen packet follow on the cpu worker), once. Does nothing if "
        "LEXWEB_DEMO_DATA=false."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.LEXWEB_DEMO_DATA:
            return
        case = demo.demo_case_create()
        if case is not None:
            self.stdout.write(f"Demo case {case.number} created; the first admin is a member.")
        try:
            uploaded = demo.demo_evidence_seed()
        except demo_evidence.DemoSeedError as exc:
            # The product starts without the demo's documents rather than not at all.
            self.stderr.write(f"seed_demo: {exc} The demo case has no packet; lexweb runs on.")
            return
        if uploaded:
            self.stdout.write(
                f"Demo case: {uploaded} documents uploaded; the cpu worker reads them, stamps "
                "them ACME000001 on and freezes the packet in a minute or so."
            )
