"""Covers fabricweb/exporter/brokerseries.py, fabricweb/exporter/collector.py, fabricweb/exporter/encoder.py,
fabricweb/exporter/selection.py; through them fabricweb/exporter/congestion.py, fabricweb/exporter/counters.py,
fabricweb/exporter/jobseries.py, fabricweb/exporter/links.py, fabricweb/exporter/specs.py,
fabricweb/exporter/switchports.py, fabricweb/exporter/texts.py.

The broker's memory on /metrics (fabricweb/exporter/brokerseries.py, added by the view to the health set):
what FabricwebBrokerMemoryHigh reads."""

from __future__ import annotations

import redis
from prometheus_client.exposition import choose_encoder
from prometheus_client.parser import text_string_to_metric_families

from fabricweb.exporter.brokerseries import broker_memory
from fabricweb.exporter.collector import FabricCollector
from fabricweb.exporter.encoder import encode_chunks
from fabricweb.exporter.selection import Selection
from harness import free_port
from tests import loopback


def broker_series(now) -> dict[str, float]:
    families = FabricCollector(Selection(), now).families()
    broker_memory(families)
    encoder, _ = choose_encoder("")
    text = b"".join(encode_chunks(families, encoder)).decode()
    return {
        sample.name: sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name.startswith("fabricweb_broker_")
    }


def test_it_exports_the_brokers_memory_and_its_maxmemory(db, settings, tmp_path):
    from django.utils import timezone

    with loopback.redis_with_acl(tmp_path, "", "--maxmemory", "32mb") as (_, url):
        settings.CELERY_BROKER_URL = url
        redis.Redis.from_url(url).lpush("snapshots", b"x" * 4 * 2**20)
        series = broker_series(timezone.now())
    assert series["fabricweb_broker_memory_max_bytes"] == 32 * 2**20
    assert 4 * 2**20 < series["fabricweb_broker_memory_used_bytes"] < 32 * 2**20


def test_a_broker_that_does_not_answer_costs_its_series_not_the_scrape(db, settings):
    from django.utils import timezone

    settings.CELERY_BROKER_URL = f"redis://127.0.0.1:{free_port()}/0"
    assert broker_series(timezone.now()) == {}
