from django.apps import AppConfig


class DraftingConfig(AppConfig):
    name = "apps.drafting"
    label = "drafting"
    verbose_name = "Drafting"

    def ready(self) -> None:
        from apps.drafting import selectors
        from apps.verification import versions

        # The verifier, beneath drafting, finds the versions it is asked about through this.
        versions.register(selectors.version_in_case)
        # A stage whose worker died is announced on its run (stage.stalled) by the stalled-job
        # recovery, which knows no app above it.
        from apps.drafting.services import runs
        from apps.operations.services import recovery

        if runs.stage_job_stalled not in recovery.STALLED_HOOKS:
            recovery.STALLED_HOOKS.append(runs.stage_job_stalled)
        # After each periodic recovery: stages whose job failed without recording why, queued
        # again with the cause the recovery knows.
        if runs.stages_stranded_after_recovery not in recovery.AFTER_RECOVERY_HOOKS:
            recovery.AFTER_RECOVERY_HOOKS.append(runs.stages_stranded_after_recovery)
