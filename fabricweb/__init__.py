"""fabricweb: the central side (storage, health, dashboard, metrics) of the fabric monitor."""

from .celery import app as celery_app

__all__ = ["celery_app"]
