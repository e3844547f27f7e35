from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "fabricweb.jobs"
    verbose_name = "Jobs"

    def ready(self) -> None:
        from fabricweb.health.signals import events_changed

        from .impact import on_events_changed

        events_changed.connect(on_events_changed, dispatch_uid="fabricweb.jobs.impact")
