from django.apps import AppConfig


class TelemetryConfig(AppConfig):
    name = "fabricweb.telemetry"
    verbose_name = "Telemetry"
