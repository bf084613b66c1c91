from django.urls import path

from apps.documents import views

app_name = "documents"

urlpatterns = [
    path("cases/<int:case_id>/documents/", views.document_list, name="list"),
    path(
        "cases/<int:case_id>/documents/<int:document_id>/",
        views.document_detail,
        name="detail",
    ),
    path("cases/<int:case_id>/documents/bulk/", views.documents_bulk, name="bulk"),
    path(
        "cases/<int:case_id>/documents/<int:document_id>/restore/",
        views.document_restore,
        name="restore",
    ),
    path("cases/<int:case_id>/search/", views.search, name="search"),
    path("cases/<int:case_id>/bates/", views.bates_lookup, name="bates"),
]
