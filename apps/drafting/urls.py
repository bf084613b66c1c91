from django.urls import path

from apps.drafting.views import drafts, runs, versions

app_name = "drafting"

_DRAFT = "cases/<int:case_id>/drafts/<int:draft_id>/"
_VERSION = _DRAFT + "versions/<int:number>/"
_RUN = "cases/<int:case_id>/runs/<int:run_id>/"

urlpatterns = [
    path("cases/<int:case_id>/drafts/", drafts.draft_list, name="list"),
    path("cases/<int:case_id>/drafts/new/", drafts.draft_new, name="new"),
    path(_DRAFT, drafts.draft_detail, name="detail"),
    path(_DRAFT + "versions/", drafts.version_add, name="version_add"),
    path(_VERSION, versions.version_detail, name="version"),
    path(_VERSION + "verify/", versions.version_verify, name="verify"),
    path(
        _VERSION + "findings/<int:finding_id>/override/",
        versions.finding_override,
        name="override",
    ),
    path(_VERSION + "approve/", versions.version_approve, name="approve"),
    path(_VERSION + "export/", versions.version_export, name="export"),
    path(_VERSION + "diff/", versions.version_diff, name="diff"),
    path("cases/<int:case_id>/runs/", runs.run_list, name="runs"),
    path("cases/<int:case_id>/runs/new/", runs.run_new, name="run_new"),
    path(_RUN, runs.run_detail, name="run"),
    path(_RUN + "cancel/", runs.run_cancel, name="run_cancel"),
    path(_RUN + "gate-override/", runs.run_gate_override, name="run_gate_override"),
    path(_RUN + "reject/", runs.run_reject, name="run_reject"),
]
