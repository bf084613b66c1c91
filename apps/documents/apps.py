from django.apps import AppConfig


class DocumentsConfig(AppConfig):
    name = "apps.documents"
    label = "documents"
    verbose_name = "Documents"

    def ready(self) -> None:
        # Registers the event types this app sends to a case's members (apps.cases.events).
        from apps.documents import events  # noqa: F401
