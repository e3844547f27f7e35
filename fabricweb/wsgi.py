"""WSGI entry point (gunicorn fabricweb.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "fabricweb.settings")
application = get_wsgi_application()
