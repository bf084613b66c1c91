from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    verbose_name = "Accounts and audit"

    def ready(self) -> None:
        from apps.accounts import receivers  # noqa: F401  (connects Django's auth signals)
