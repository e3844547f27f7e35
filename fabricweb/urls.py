"""URL routes. The dashboard, API, /metrics and /healthz are added by their apps."""

from django.contrib import admin
from django.urls import path

urlpatterns = [
    path("admin/", admin.site.urls),
]
