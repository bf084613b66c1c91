"""Every API token expires. A token made before without an expiry gets one now:
LEXWEB_TOKEN_MAX_DAYS from this migration (so no agent stops working at the upgrade)."""

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import migrations, models
from django.utils import timezone


def give_every_token_an_expiry(apps: Any, schema_editor: Any) -> None:
    token = apps.get_model("accounts", "ApiToken")
    expires_at = timezone.now() + timedelta(days=settings.LEXWEB_TOKEN_MAX_DAYS)
    token.objects.filter(expires_at__isnull=True).update(expires_at=expires_at)


class Migration(migrations.Migration):
    dependencies = [("accounts", "0005_auditevent_no_truncate")]

    operations = [
        migrations.RunPython(give_every_token_an_expiry, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="apitoken", name="expires_at", field=models.DateTimeField()
        ),
    ]
