from django.apps import AppConfig


class InventoryConfig(AppConfig):
    name = "fabricweb.inventory"
    verbose_name = "Inventory"

    def ready(self) -> None:
        # Every central process (web, manage.py, workers) makes the project's Celery app the
        # current one, so shared tasks send through its broker and routes.
        # The site's own `check --deploy` warnings (node auth, broker users).
        from django.core import checks

        import fabricweb.celery  # noqa: F401
        from fabricweb.deploychecks import node_auth_and_broker_user

        checks.register(node_auth_and_broker_user, checks.Tags.security, deploy=True)
