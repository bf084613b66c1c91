from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "apps.api"
    label = "api"
    verbose_name = "Agent API"

    def ready(self) -> None:
        # Each periodic sweep also removes stored Idempotency-Key answers older than 24 hours;
        # the sweep (apps.operations) knows no app above it.
        from apps.api import idempotency
        from apps.operations.services import sweeper

        if idempotency.idempotency_expired_delete not in sweeper.SWEEP_HOOKS:
            sweeper.SWEEP_HOOKS.append(idempotency.idempotency_expired_delete)
