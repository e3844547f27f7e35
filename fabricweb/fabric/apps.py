from django.apps import AppConfig


class FabricConfig(AppConfig):
    name = "fabricweb.fabric"
    verbose_name = "Fabric"

    def ready(self) -> None:
        # The fabric app builds on telemetry and health: it hands them what they need of it, and neither
        # imports it (tests/test_imports.py, the layer order).
        from django.db.models.signals import post_delete, post_save

        from fabricweb.health.records.context import CABLING
        from fabricweb.telemetry.handed import HANDED

        from .adapters import to_read
        from .hostnames import yield_to_host
        from .ingest import ingest_fabric_batch
        from .models import ExpectedLink, FabricNode
        from .nodes import on_fabric_node_changed

        HANDED.store_sweeps = ingest_fabric_batch
        HANDED.yield_to_host = yield_to_host
        HANDED.read_adapters = to_read
        CABLING.ends = ExpectedLink.ends
        # A FabricNode written elsewhere than by fabric ingest: no ingest process may reuse the ones it holds.
        post_save.connect(on_fabric_node_changed, sender=FabricNode, dispatch_uid="fabric-node-saved")
        post_delete.connect(on_fabric_node_changed, sender=FabricNode, dispatch_uid="fabric-node-deleted")
