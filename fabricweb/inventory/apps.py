from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "fabricweb.inventory"
    verbose_name = "Inventory"
