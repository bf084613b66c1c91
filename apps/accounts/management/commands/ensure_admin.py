import secrets
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from apps.accounts import services
from apps.accounts.models import User
from lexweb.errors import DomainError


class Command(BaseCommand):
    help = "Create the first admin if there is none (LEXWEB_ADMIN_EMAIL / LEXWEB_ADMIN_PASSWORD)."

    def handle(self, *args: Any, **options: Any) -> None:
        if User.objects.filter(role=User.Role.ADMIN).exists():
            return
        password = settings.LEXWEB_ADMIN_PASSWORD
        generated = not password
        if generated:
            password = secrets.token_urlsafe(15)
        try:
            admin = services.user_create(
                email=settings.LEXWEB_ADMIN_EMAIL,
                full_name="Administrator",
                role=User.Role.ADMIN,
                password=password,
                actor=None,
            )
        except DomainError as exc:
            raise CommandError(f"Cannot create the first admin: {exc.message}") from None
        if generated:
            self.stdout.write(
                f"\nFirst admin created. Sign in as {admin.email} with password:\n\n"
                f"    {password}\n\nIt is shown this once; change it in the admin.\n"
            )
        else:
            self.stdout.write(
                f"First admin created: {admin.email} (password from the environment)."
            )
