from django.apps import AppConfig


class ExporterConfig(AppConfig):
    name = "fabricweb.exporter"
    verbose_name = "Prometheus exporter"
