"""The project's 403 page: why the request was refused, and the way back.

Rendered by the project's handler403 (fabricweb.api.errors.permission_denied) for every path but /api/ and
/healthz, which are answered in JSON there, as the other error handlers."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from .common import can_operate

DEFAULT_REASON = "your login may not open this page"


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    reason = str(exception or "") or DEFAULT_REASON
    # Back where the user came from, if that is this site (never an outside address); else the overview.
    back = request.META.get("HTTP_REFERER", "")
    if (
        not back
        or back == request.build_absolute_uri()
        or not url_has_allowed_host_and_scheme(
            back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        back = reverse("dashboard:overview")
    user = request.user if hasattr(request, "user") else None
    role = None
    if user is not None and user.is_authenticated:
        role = "operator" if can_operate(user) else "viewer"
    context = {"reason": reason, "back": back, "role": role}
    return render(request, "403.html", context, status=403)
