from django.urls import path

from apps.cases import views

app_name = "cases"

urlpatterns = [
    path("", views.case_list, name="list"),
    path("cases/new/", views.case_create, name="create"),
    path("cases/break-glass/", views.break_glass, name="break_glass"),
    path("cases/<int:case_id>/", views.case_detail, name="detail"),
    path("cases/<int:case_id>/members/", views.member_add, name="member_add"),
    path(
        "cases/<int:case_id>/members/candidates/",
        views.member_candidates,
        name="member_candidates",
    ),
    path("cases/<int:case_id>/members/<int:user_id>/role/", views.member_role, name="member_role"),
    path(
        "cases/<int:case_id>/members/<int:user_id>/remove/",
        views.member_remove,
        name="member_remove",
    ),
    path("cases/<int:case_id>/health/", views.case_health, name="health"),
    path("cases/<int:case_id>/worker-check/", views.worker_check, name="worker_check"),
]
