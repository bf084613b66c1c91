from django.apps import AppConfig


class EvidenceConfig(AppConfig):
    name = "apps.evidence"
    label = "evidence"
    verbose_name = "Evidence"

    def ready(self) -> None:
        from apps.documents import evidence_hooks
        from apps.evidence.documents_hooks import DocumentsHooks

        # The documents app, beneath this one, checks uploads against the registry, shows
        # matches and clearings and reaches packets through these.
        evidence_hooks.register(DocumentsHooks())
