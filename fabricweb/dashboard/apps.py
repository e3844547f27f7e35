from django.apps import AppConfig


class DashboardConfig(AppConfig):
    name = "fabricweb.dashboard"
    label = "dashboard"
    verbose_name = "Dashboard"
