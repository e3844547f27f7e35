"""GET /metrics: Prometheus text or OpenMetrics, as the scraper's Accept header asks.

prometheus_client negotiates the format; encoder.encode_chunks renders the collector's families in
it, the same bytes as that encoder run on FabricCollector, ~10x faster (docs/metrics.md), streamed.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.http import HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client.exposition import choose_encoder

from . import auth
from .brokerseries import broker_memory
from .collector import FabricCollector
from .encoder import encode_chunks
from .selection import SelectionError, parse

log = logging.getLogger(__name__)
# What Prometheus 2 (the shipped one, deploy/) asks for first: the format whose lines warm_up keeps.
PROMETHEUS_ACCEPT = "application/openmetrics-text;version=1.0.0"


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
    with _gc_paused():
        families = FabricCollector(selection, timezone.now()).families()
    if selection.health:
        # Read here, not in the collector: a redis-py command leaves a small reference cycle behind, and the
        # collector's scrape leaves none (tests/exporter/test_exporter_no_cycles.py).
        broker_memory(families)
    # Streamed, rendered as the server writes it out: the whole body (~110 MB at 20,000 ports) is never held.
    return StreamingHttpResponse(_paused(encode_chunks(families, encoder)), content_type=content_type)


def warm_up() -> None:
    """Render `?set=health` once, into the void, as a web worker starts (gunicorn.conf.py), before it serves:
    the health rows' lines are then kept (grouped.py, encoder.py) and Prometheus's first scrape of a fresh
    process costs what a warm one does (at 20,000 ports they were ~0.6 s of it). The default scrape's
    counters reuse the same rows. Never fatal: a worker with no database yet serves the error later."""
    started = time.perf_counter()
    try:
        encoder, _ = choose_encoder(PROMETHEUS_ACCEPT)
        with _gc_paused():
            families = FabricCollector(parse(QueryDict("set=health")), timezone.now()).families()
            size = sum(map(len, encode_chunks(families, encoder)))
    except Exception as e:  # the worker must start; its first scrape reports the fault
        log.warning("/metrics warm-up skipped: %s: %s", type(e).__name__, e)
        return
    log.info("/metrics warm-up: the health series (%d bytes) rendered in %.2f s", size, time.perf_counter() - started)


def _paused(chunks: Iterator[bytes]) -> Iterator[bytes]:
    with _gc_paused():
        yield from chunks


@contextmanager
def _gc_paused() -> Iterator[None]:
    """A scrape builds about a million small objects, none in a cycle, all freed by reference
    counting when it ends: the cyclic collector would only walk them again and again as they
    pile up (BENCHMARKS.md: a third of the scrape's time at 20,000 ports)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
