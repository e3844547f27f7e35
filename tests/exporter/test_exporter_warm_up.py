"""Covers fabricweb/exporter/encoder.py, fabricweb/exporter/hostports.py, fabricweb/exporter/selection.py,
fabricweb/exporter/views.py.

A web worker renders /metrics' health series once as it starts (gunicorn.conf.py, views.warm_up): its first
scrape then serves the lines kept, the same bytes as prometheus_client, and a worker whose database cannot
be read still starts."""

from __future__ import annotations

import logging

from fabricweb.exporter import encoder, hostports
from fabricweb.exporter.selection import Selection
from fabricweb.exporter.views import PROMETHEUS_ACCEPT, warm_up
from tests.exporter.exporter_support import assert_scrapes_match, by_name, small_fabric


def test_a_warmed_worker_serves_its_first_health_scrape_from_the_rows_it_kept(client, each_db, monkeypatch):
    for memo in (hostports.port_memo, hostports.device_memo):
        monkeypatch.setattr(memo, "entries", {})  # a fresh process's
    monkeypatch.setattr(encoder.KEPT, "row_lines", {})
    small_fabric()  # 2 nodes, 4 ports
    warm_up()
    assert len(hostports.port_memo) == 4 and len(hostports.device_memo) == 2
    kept = {family[1]: lines for family, lines in encoder.KEPT.row_lines.items()}
    assert len(kept["infiniband_port_up"]) == 4  # Prometheus's format: the first scrape's lines are there

    built = []
    with monkeypatch.context() as scraping:
        for memo in (hostports.port_memo, hostports.device_memo):
            counted = lambda key, context, build=memo.build: built.append(key) or build(key, context)  # noqa: E731
            scraping.setattr(memo, "build", counted)
        first = client.get("/metrics", {"set": "health"}, HTTP_ACCEPT=PROMETHEUS_ACCEPT).getvalue().decode()
    # Only each family's first row, which every scrape renders through prometheus_client too (encoder.py).
    assert len(set(built)) == 2
    assert first.endswith("# EOF\n")
    up = by_name(first, "infiniband_port_up")
    assert len(up) == 4 and set(up.values()) == {1.0}
    assert_scrapes_match(Selection("health"))  # prometheus_client's bytes (its reference builds the rows)


def test_a_worker_that_cannot_read_its_database_still_starts_and_says_why(caplog):
    # No database mark: pytest-django refuses every query, as a database not reachable yet would.
    with caplog.at_level(logging.WARNING, logger="fabricweb.exporter.views"):
        warm_up()
    assert any(r.getMessage().startswith("/metrics warm-up skipped: ") for r in caplog.records)
