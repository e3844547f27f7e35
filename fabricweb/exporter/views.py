"""GET /metrics: Prometheus text or OpenMetrics, as the scraper's Accept header asks."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client.exposition import choose_encoder

from . import auth
from .collector import FabricCollector
from .selection import SelectionError, parse


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not auth.allowed(request):
        response = HttpResponse("credentials required for /metrics\n", status=401, content_type="text/plain")
        response["WWW-Authenticate"] = auth.challenge()
        return response
    try:
        selection = parse(request.GET)
    except SelectionError as e:
        return HttpResponse(f"{e}\n", status=400, content_type="text/plain; charset=utf-8")
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    body = encoder(FabricCollector(selection, timezone.now()))
    return HttpResponse(body, content_type=content_type)
