from django.apps import AppConfig


class ApiConfig(AppConfig):
    name = "fabricweb.api"
    label = "api"
    verbose_name = "API"
