"""URL routes. /metrics is added by its app."""

from django.contrib import admin
from django.urls import include, path

from fabricweb.api.healthz import healthz

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("fabricweb.api.urls")),
    path("healthz", healthz, name="healthz"),
    path("", include("fabricweb.exporter.urls")),
    path("", include("fabricweb.dashboard.urls")),
]

# JSON under /api/ and /healthz, Django's pages elsewhere (fabricweb.api.errors).
handler400 = "fabricweb.api.errors.bad_request"
handler403 = "fabricweb.api.errors.permission_denied"  # JSON for the API; else why, and the way back (403.html)
handler404 = "fabricweb.api.errors.not_found"
handler500 = "fabricweb.api.errors.server_error"
