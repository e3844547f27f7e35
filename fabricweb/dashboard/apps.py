from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "fabricweb.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"

    def ready(self) -> None:
        from . import globlookup  # noqa: F401  (registers the `__glob` lookup the filters use)
