from django.urls import path

from apps.cluster import views

app_name = "cluster"

urlpatterns = [
    path("cluster/", views.dashboard, name="dashboard"),
    path("cluster/jobs/", views.jobs, name="jobs"),
]
