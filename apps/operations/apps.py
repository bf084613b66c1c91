from django.apps import AppConfig


class OperationsConfig(AppConfig):
    """Keeping the product's own machinery honest: jobs whose worker died come back, stored
    files nothing refers to are swept, and readiness says what is stuck."""

    name = "apps.operations"
    label = "operations"
    verbose_name = "Operations"
