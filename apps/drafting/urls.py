from django.urls import path

from apps.drafting import views

app_name = "drafting"

_DRAFT = "cases/<int:case_id>/drafts/<int:draft_id>/"
_VERSION = _DRAFT + "versions/<int:number>/"
_RUN = "cases/<int:case_id>/runs/<int:run_id>/"

urlpatterns = [
    path("cases/<int:case_id>/drafts/", views.draft_list, name="list"),
    path("cases/<int:case_id>/drafts/new/", views.draft_new, name="new"),
    path(_DRAFT, views.draft_detail, name="detail"),
    path(_DRAFT + "versions/", views.version_add, name="version_add"),
    path(_VERSION, views.version_detail, name="version"),
    path(_VERSION + "verify/", views.version_verify, name="verify"),
    path(
        _VERSION + "findings/<int:finding_id>/override/",
        views.finding_override,
        name="override",
    ),
    path(_VERSION + "approve/", views.version_approve, name="approve"),
    path(_VERSION + "export/", views.version_export, name="export"),
    path(_VERSION + "diff/", views.version_diff, name="diff"),
    path("cases/<int:case_id>/runs/", views.run_list, name="runs"),
    path("cases/<int:case_id>/runs/new/", views.run_new, name="run_new"),
    path(_RUN, views.run_detail, name="run"),
    path(_RUN + "cancel/", views.run_cancel, name="run_cancel"),
    path(_RUN + "gate-override/", views.run_gate_override, name="run_gate_override"),
    path(_RUN + "reject/", views.run_reject, name="run_reject"),
]
