from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from apps.accounts import services as account_services
from apps.accounts.models import User
from apps.cases import services
from apps.cases.models import Case

DEMO_NUMBER = "DEMO-2026-001"
DEMO_COURT = "Demonstration District Court"
DEMO_LAWYER = "dana.lawyer@lexweb.local"


class Command(BaseCommand):
    help = "Create the demo case and a demo lawyer, once. Does nothing if LEXWEB_DEMO_DATA=false."

    def handle(self, *args: Any, **options: Any) -> None:
        if not settings.LEXWEB_DEMO_DATA:
            return
        admin = User.objects.filter(role=User.Role.ADMIN, is_active=True).order_by("pk").first()
        if admin is None or Case.objects.filter(number=DEMO_NUMBER).exists():
            return
        lawyer = User.objects.filter(email=DEMO_LAWYER).first() or account_services.user_create(
            email=DEMO_LAWYER,
            full_name="Dana Lawyer (demo)",
            role=User.Role.LAWYER,
            password=None,
            actor=admin,
        )
        case = services.case_create(
            actor=admin,
            title="Acme Corp. v. Widget Ltd. (demo)",
            number=DEMO_NUMBER,
            court=DEMO_COURT,
            client="Acme Corp.",
        )
        services.member_add(actor=admin, case=case, email=lawyer.email, role="lawyer")
        self.stdout.write(f"Demo case {case.number} created; {admin.email} is a member.")
