from django.urls import path

from apps.documents import production_views, viewer_views, views

app_name = "documents"

urlpatterns = [
    path("cases/<int:case_id>/documents/", views.document_list, name="list"),
    path(
        "cases/<int:case_id>/documents/<int:document_id>/",
        viewer_views.document_detail,
        name="detail",
    ),
    path("cases/<int:case_id>/documents/bulk/", views.documents_bulk, name="bulk"),
    path("cases/<int:case_id>/documents/rows/", views.document_rows, name="rows"),
    path(
        "cases/<int:case_id>/documents/<int:document_id>/restore/",
        views.document_restore,
        name="restore",
    ),
    path(
        "cases/<int:case_id>/documents/<int:document_id>/flag-clearance/",
        views.document_flag_clear,
        name="flag_clear",
    ),
    path("cases/<int:case_id>/search/", views.search, name="search"),
    path("cases/<int:case_id>/bates/", views.bates_lookup, name="bates"),
    path(
        "cases/<int:case_id>/productions/",
        production_views.production_list,
        name="production_list",
    ),
    path(
        "cases/<int:case_id>/productions/new/",
        production_views.production_new,
        name="production_new",
    ),
    path(
        "cases/<int:case_id>/productions/preview/<int:document_id>.png",
        production_views.production_preview_png,
        name="production_preview",
    ),
    path(
        "cases/<int:case_id>/productions/<int:production_id>/",
        production_views.production_detail,
        name="production_detail",
    ),
    path(
        "cases/<int:case_id>/productions/<int:production_id>/exports/",
        production_views.production_export,
        name="production_export",
    ),
]
