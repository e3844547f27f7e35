from django.apps import AppConfig
from django.db.models.signals import post_delete, post_save


class HealthConfig(AppConfig):
    name = "fabricweb.health"
    verbose_name = "Health"

    def ready(self) -> None:
        from fabricweb.telemetry.signals import snapshots_ingested

        from .engine.engine import on_snapshots_ingested
        from .models import LinkPolicy
        from .records import context

        # Stable uids: a second ready() (tests, autoreload) must not judge every batch twice.
        snapshots_ingested.connect(on_snapshots_ingested, dispatch_uid="fabricweb.health.engine.engine")
        # A policy edited here takes effect here at once; other processes re-read within context.REFRESH_S.
        post_save.connect(context.forget, sender=LinkPolicy, dispatch_uid="fabricweb.health.policy_saved")
        post_delete.connect(context.forget, sender=LinkPolicy, dispatch_uid="fabricweb.health.policy_deleted")
