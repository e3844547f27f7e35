"""JSON error pages for /api/ and /healthz; Django's own pages everywhere else.

The project's handler400/403/404/500 point here (fabricweb/urls.py), so that even an
error raised outside an API view, or a bad Host header, answers an API client in JSON.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views import defaults
from django.views.decorators.csrf import csrf_exempt

from .http import error_response

JSON_PREFIXES = ("/api/", "/healthz")


def wants_json(request: HttpRequest) -> bool:
    return request.path.startswith(JSON_PREFIXES)


@csrf_exempt
def api_not_found(request: HttpRequest) -> HttpResponse:
    # Routing 404: says nothing about whether the caller is logged in, and nothing it did not send.
    return error_response(
        404, "no such API endpoint (see /api/v1/nodes, /api/v1/ports, /api/v1/switches, /api/v1/events)"
    )


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if wants_json(request):
        return error_response(400, "bad request")
    return defaults.bad_request(request, exception)


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if wants_json(request):
        return error_response(404, "not found")
    return defaults.page_not_found(request, exception)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if wants_json(request):
        return error_response(403, str(exception or "") or "forbidden")
    from fabricweb.dashboard.views.forbidden import forbidden  # the page: why, and the way back

    return forbidden(request, exception)


def server_error(request: HttpRequest) -> HttpResponse:
    if wants_json(request):
        return error_response(500, "internal error (details are in the server log)")
    return defaults.server_error(request)
