from django.urls import path

from apps.cases.consumers import CaseEventsConsumer
from apps.cluster.consumers import ClusterStatusConsumer
from apps.drafting.consumers import RunEventsConsumer

websocket_urlpatterns = [
    path("ws/cases/<int:case_id>/events/", CaseEventsConsumer.as_asgi()),
    path("ws/cluster/", ClusterStatusConsumer.as_asgi()),
    path(
        "ws/cases/<int:case_id>/runs/<int:run_id>/events/",
        RunEventsConsumer.as_asgi(),
    ),
]
