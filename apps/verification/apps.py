from django.apps import AppConfig


class VerificationConfig(AppConfig):
    name = "apps.verification"
    label = "verification"
    verbose_name = "Verification"

    def ready(self) -> None:
        from django.conf import settings

        from apps.verification import dates

        # Numeric dates ("3/7/24") are read in the deployment's order (read on each use, so a
        # test's override_settings holds).
        dates.read_order_from(lambda: getattr(settings, "LEXWEB_DATE_ORDER", "mdy"))
