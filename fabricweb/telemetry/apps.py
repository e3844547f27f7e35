from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class TelemetryConfig(AppConfig):
    name = "fabricweb.telemetry"
    verbose_name = "Telemetry"

    def ready(self) -> None:
        from fabricweb.inventory.models import Device, Port

        from .rowcache import on_row_changed

        # Ingest processes reuse rows they wrote only while nobody else wrote them (rowcache).
        for model in (Device, Port):
            for signal in (post_save, post_delete):
                uid = f"fabricweb.telemetry.rowcache.{id(signal)}.{model.__name__}"
                signal.connect(on_row_changed, sender=model, dispatch_uid=uid)
