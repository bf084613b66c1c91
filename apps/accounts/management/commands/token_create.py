from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from apps.accounts import services
from apps.accounts.models import User
from lexweb.errors import DomainError


def _days(raw: str) -> int:
    try:
        days = int(raw)
    except ValueError:
        raise CommandError(f"--expires-days must be a whole number of days, not {raw!r}.") from None
    if not 1 <= days <= settings.LEXWEB_TOKEN_MAX_DAYS:
        raise CommandError(
            f"--expires-days must be from 1 to {settings.LEXWEB_TOKEN_MAX_DAYS} "
            f"(LEXWEB_TOKEN_MAX_DAYS), not {days}."
        )
    return days


class Command(BaseCommand):
    help = (
        "Make an API token for a person (e.g. the account an agent works as) and print its "
        "secret, once: it is stored only as a hash. Audited as made on the command line."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the person's e-mail")
        parser.add_argument("--name", required=True, help="what the token is for, e.g. 'claude'")
        parser.add_argument(
            "--expires-days",
            help="days it lives (default LEXWEB_TOKEN_DEFAULT_DAYS, at most LEXWEB_TOKEN_MAX_DAYS)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        email = options["user"].strip()
        user = User.objects.filter(email__iexact=email).first() if len(email) <= 254 else None
        if user is None:
            raise CommandError(f"No user with e-mail {email[:254]!r}.")
        raw_days = options["expires_days"]
        expires_at = None
        if raw_days is not None:
            expires_at = timezone.now() + timedelta(days=_days(raw_days))
        try:
            issued = services.token_create(
                user=user,
                name=options["name"],
                expires_at=expires_at,
                issuer_label="command line (manage.py token_create)",
            )
        except DomainError as exc:
            raise CommandError(exc.message) from None
        expiry = issued.token.expires_at.strftime("%Y-%m-%d %H:%M %Z")
        # The secret alone on stdout's last line, so that a script can take it.
        self.stderr.write(
            f"Token {issued.token.name!r} for {user.email}, valid until {expiry}. "
            "The secret is shown this once:"
        )
        self.stdout.write(issued.secret)
