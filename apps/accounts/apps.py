from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "apps.accounts"
    label = "accounts"
    verbose_name = "Accounts and audit"

    def ready(self) -> None:
        from apps.accounts import audit_words, receivers  # noqa: F401  (receivers: auth signals)

        audit_words.register_words(audit_words.ACCOUNTS_WORDS)
