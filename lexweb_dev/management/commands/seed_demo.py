import secrets
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.accounts.models import User
from lexweb.errors import DomainError
from lexweb_dev import demo, demo_evidence


class Command(BaseCommand):
    help = (
        "Create the demo case and a demo lawyer, and upload its documents (their reading, "
        "Bates stamping and the frozen packet follow on the cpu worker), once. Does nothing if "
        "LEXWEB_DEMO_DATA=false or LEXWEB_DEMO_CASE=false (the demo cluster alone)."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.LEXWEB_DEMO_DATA or not settings.LEXWEB_DEMO_CASE:
            return
        # The demo lawyer signs in with LEXWEB_DEMO_LAWYER_PASSWORD, or with a password made
        # here and printed this once (like the first admin's).
        new_lawyer = not User.objects.filter(email=demo.DEMO_LAWYER).exists()
        password = settings.LEXWEB_DEMO_LAWYER_PASSWORD or secrets.token_urlsafe(15)
        try:
            case = demo.demo_case_create(lawyer_password=password)
        except DomainError as exc:
            raise CommandError(f"Cannot create the demo lawyer: {exc.message}") from None
        if case is not None:
            self.stdout.write(f"Demo case {case.number} created; the first admin is a member.")
            if new_lawyer and not settings.LEXWEB_DEMO_LAWYER_PASSWORD:
                self.stdout.write(
                    f"\nDemo lawyer created. Sign in as {demo.DEMO_LAWYER} with password:\n\n"
                    f"    {password}\n\nIt is shown this once; an admin can set another in the "
                    "admin (Users, Set a password).\n"
                )
            elif new_lawyer:
                self.stdout.write(
                    f"Demo lawyer created: {demo.DEMO_LAWYER} (password from the environment)."
                )
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
