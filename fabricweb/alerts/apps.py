from django.apps import AppConfig


class AlertsConfig(AppConfig):
    name = "fabricweb.alerts"
    verbose_name = "Alerts"

    def ready(self) -> None:
        from fabricweb.health.signals import events_changed

        from .outbox import on_events_changed

        events_changed.connect(on_events_changed, dispatch_uid="fabricweb.alerts.outbox")
