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

from django.conf import settings
from django.http import HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.utils import timezone
from django.views.decorators.http import require_GET
from prometheus_client.exposition import choose_encoder

from . import auth
from .brokerseries import broker_memory
from .collector import FabricCollector
from .encoder import encode_chunks
from .selection import Selection, SelectionError, parse, served_shards

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
    refused = _not_served(selection)
    if refused:
        return HttpResponse(f"{refused}\n", status=421, content_type="text/plain; charset=utf-8")
    encoder, content_type = choose_encoder(request.headers.get("Accept", ""))
    with _gc_paused():
        families = FabricCollector(selection, timezone.now()).families()
    if selection.health:
        # Read here, not in the collector: a redis-py command leaves a small reference cycle behind, and the
        # collector's scrape leaves none (tests/exporter/test_exporter_no_cycles.py).
        broker_memory(families)
    # Streamed, rendered as the server writes it out: the whole body (~110 MB at 20,000 ports) is never held.
    return StreamingHttpResponse(_paused(encode_chunks(families, encoder)), content_type=content_type)


def _not_served(selection: Selection) -> str | None:
    """Why this process does not answer `selection`, or None. A process given FABRIC_METRICS_SHARDS keeps the
    rows of its shards only (its memory is bounded by them): any other scrape, the whole fabric's included,
    goes to the process serving it (421, Misdirected Request: the scrape config names the wrong target)."""
    served = served_shards(settings.FABRIC_METRICS_SHARDS)
    if served is None or (selection.shard, selection.shards) in served:
        return None
    asked = f"shard={selection.shard}/{selection.shards}" if selection.shards > 1 else "the whole fabric (no shard)"
    return (
        f"this process serves /metrics shards {settings.FABRIC_METRICS_SHARDS} only (FABRIC_METRICS_SHARDS), "
        f"not {asked}: scrape the process that serves it"
    )


def warm_up() -> None:
    """Render `?set=health` once, into the void, as a web worker starts (gunicorn.conf.py), before it serves:
    the health rows' lines are then kept (grouped.py, encoder.py) and Prometheus's first scrape of a fresh
    process costs what a warm one does (at 20,000 ports they were ~0.6 s of it). The default scrape's
    counters reuse the same rows. A process given FABRIC_METRICS_SHARDS renders each of its shards, and
    nothing of the others. Never fatal: a worker with no database yet serves the error later."""
    served = served_shards(settings.FABRIC_METRICS_SHARDS)
    queries = ["set=health"] if served is None else [f"set=health&shard={k}/{n}" for k, n in sorted(served)]
    started = time.perf_counter()
    try:
        encoder, _ = choose_encoder(PROMETHEUS_ACCEPT)
        size = 0
        with _gc_paused():
            for query in queries:
                families = FabricCollector(parse(QueryDict(query)), timezone.now()).families()
                size += sum(map(len, encode_chunks(families, encoder)))
    except Exception as e:  # the worker must start; its first scrape reports the fault
        log.warning("/metrics warm-up skipped: %s: %s", type(e).__name__, e)
        return
    log.info(
        "/metrics warm-up: the health series of %s (%d bytes) rendered in %.2f s",
        "the whole fabric" if served is None else f"shards {settings.FABRIC_METRICS_SHARDS}",
        size,
        time.perf_counter() - started,
    )


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
