from django.urls import path

from apps.evidence import views

app_name = "evidence"

_PACKET = "cases/<int:case_id>/packets/<int:packet_id>/"

urlpatterns = [
    path("cases/<int:case_id>/packets/", views.packet_list, name="list"),
    path(_PACKET, views.packet_detail, name="detail"),
    path(_PACKET + "items/", views.packet_items_add, name="items_add"),
    path(_PACKET + "items/<int:item_id>/remove/", views.packet_item_remove, name="item_remove"),
    path(_PACKET + "freeze/", views.packet_freeze, name="freeze"),
    path(_PACKET + "versions/", views.packet_versions, name="versions"),
    path(_PACKET + "compare/<int:other_id>/", views.packet_compare, name="compare"),
    path(_PACKET + "pages/", views.packet_pages, name="pages"),
]
