from django.apps import AppConfig


class ClusterConfig(AppConfig):
    name = "apps.cluster"
    label = "cluster"
    verbose_name = "Cluster"
