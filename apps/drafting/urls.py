from django.urls import path

from apps.drafting import views

app_name = "drafting"

_DRAFT = "cases/<int:case_id>/drafts/<int:draft_id>/"
_VERSION = _DRAFT + "versions/<int:number>/"

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
]
