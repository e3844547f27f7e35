"""Covers fabricweb/exporter/collector.py, fabricweb/exporter/encoder.py, fabricweb/exporter/selection.py,
fabricweb/exporter/views.py.

A scrape runs with the cyclic garbage collector paused (views.py): whatever it builds must be freed by
reference counting alone when it ends, or each scrape would leave its rows behind (at 20,000 ports ~30 MB a
scrape) until the collector happens to run."""

from __future__ import annotations

import gc

from django.utils import timezone
from prometheus_client.exposition import choose_encoder

from fabricweb.exporter.collector import FabricCollector
from fabricweb.exporter.encoder import encode_chunks
from fabricweb.exporter.selection import Selection
from fabricweb.exporter.views import PROMETHEUS_ACCEPT
from tests.exporter.exporter_support import small_fabric


def test_a_scrape_leaves_nothing_for_the_cyclic_collector(each_db):
    small_fabric()
    encoder, _ = choose_encoder(PROMETHEUS_ACCEPT)
    for series in ("all", "health", "detail", "all"):  # the second `all` from the rows kept
        gc.collect()
        body = b"".join(encode_chunks(FabricCollector(Selection(series), timezone.now()).families(), encoder))
        assert body.endswith(b"# EOF\n")
        assert gc.collect() == 0, f"set={series}: objects in reference cycles"
