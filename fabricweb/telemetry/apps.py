from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class TelemetryConfig(AppConfig):
    name = "fabricweb.telemetry"
    verbose_name = "Telemetry"

    def ready(self) -> None:
        from fabricweb.inventory import readings
        from fabricweb.inventory.models import Device, Port

        from .storage.catchup import catch_up
        from .storage.rowcache import on_row_changed

        # Readers of a node's readings bring its history checkpoint up to its last poll with the samples since.
        readings.replay_with(catch_up)

        # Ingest processes reuse rows they wrote only while nobody else wrote them (rowcache).
        for model in (Device, Port):
            for signal in (post_save, post_delete):
                uid = f"fabricweb.telemetry.storage.rowcache.{id(signal)}.{model.__name__}"
                signal.connect(on_row_changed, sender=model, dispatch_uid=uid)
