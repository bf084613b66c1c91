from django.apps import AppConfig


class LexwebDevConfig(AppConfig):
    name = "lexweb_dev"
    label = "lexweb_dev"
    verbose_name = "Development and demo tools"
