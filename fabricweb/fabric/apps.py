from django.apps import AppConfig


class FabricConfig(AppConfig):
    name = "fabricweb.fabric"
    verbose_name = "Fabric"
