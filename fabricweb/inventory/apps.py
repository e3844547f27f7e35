from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "fabricweb.inventory"
    verbose_name = "Inventory"

    def ready(self) -> None:
        # Every central process (web, manage.py, workers) makes the project's Celery app the
        # current one, so shared tasks send through its broker and routes.
        import fabricweb.celery  # noqa: F401
