from django.urls import path

from apps.cases.consumers import CaseEventsConsumer

websocket_urlpatterns = [
    path("ws/cases/<int:case_id>/events/", CaseEventsConsumer.as_asgi()),
]
