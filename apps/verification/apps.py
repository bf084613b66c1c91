from django.apps import AppConfig


class VerificationConfig(AppConfig):
    name = "apps.verification"
    label = "verification"
    verbose_name = "Verification"

    def ready(self) -> None:
        from django.conf import settings

        from apps.verification import dates, events  # noqa: F401 (events: see below)

        # Numeric dates ("3/7/24") are read in the deployment's order (read on each use, so a
        # test's override_settings holds).
        dates.read_order_from(lambda: getattr(settings, "LEXWEB_DATE_ORDER", "mdy"))
        # Importing events registers the event types this app sends to a case's members.
