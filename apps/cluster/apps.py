from django.apps import AppConfig

# The codes the cluster writes to the audit log, in words for the admin's audit log
# (apps.accounts.audit_words); {target} is the event's target.
AUDIT_WORDS = {
    "cluster.site_load": "loaded the site description (hosts, boards, backends, deployments)",
    "cluster.jobs_view": "looked at the job queues",
    "cluster.board_proposal_accept": "accepted the proposed boards of host {target}",
    "cluster.deployment_create": "created deployment {target}",
    "cluster.deployment_update": "changed deployment {target}",
}


class ClusterConfig(AppConfig):
    name = "apps.cluster"
    label = "cluster"
    verbose_name = "Cluster"

    def ready(self) -> None:
        from apps.accounts import audit_words

        audit_words.register_words(AUDIT_WORDS)
