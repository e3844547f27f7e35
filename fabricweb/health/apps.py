from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "fabricweb.health"
    verbose_name = "Health"
