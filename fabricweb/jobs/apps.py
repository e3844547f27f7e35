from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "fabricweb.jobs"
    verbose_name = "Jobs"
