from django.apps import AppConfig


class IdentityConfig(AppConfig):
    name = "fabricweb.identity"
    verbose_name = "Node identity and broker users"
