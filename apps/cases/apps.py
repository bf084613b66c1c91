from django.apps import AppConfig


class CasesConfig(AppConfig):
    name = "apps.cases"
    label = "cases"
    verbose_name = "Cases"

    def ready(self) -> None:
        # The accounts app beneath asks who belongs to which case through a registry, not an
        # import of this app (docs/architecture/modules.md, "The order of the apps").
        from apps.accounts import audit_words, case_access
        from apps.cases import activity
        from apps.cases.selectors import CaseAccessForAccounts

        case_access.register(CaseAccessForAccounts())
        # The admin's audit log tells a case's codes with the activity's own sentences.
        audit_words.register(activity.TOLD_CODES, activity.event_text)
