"""Covers fabricweb/exporter/encoder.py, fabricweb/exporter/hostports.py, fabricweb/exporter/selection.py,
fabricweb/exporter/views.py.

fabricweb.exporter.views and selection.served_shards: a web process given FABRIC_METRICS_SHARDS renders and keeps
only the series of its shards at start-up, answers their scrapes, and refuses every other scrape (421) in words."""

from __future__ import annotations

import pytest

from fabricweb.exporter import encoder, hostports
from fabricweb.exporter.selection import SelectionError, served_shards, shard_of
from fabricweb.exporter.views import warm_up
from tests.exporter.exporter_support import by_name, scrape, small_fabric

NODES = [f"cn{i:03d}" for i in range(8)]  # small_fabric(8)'s, two ports each


def _shard_with_nodes(shards: int) -> int:
    """A shard of `shards` holding some but not all of NODES."""
    counts = [sum(1 for n in NODES if shard_of(n, shards) == k) for k in range(shards)]
    return next(k for k, c in enumerate(counts) if 0 < c < len(NODES))


@pytest.fixture
def fresh_process(monkeypatch):
    for memo in (hostports.port_memo, hostports.device_memo):
        monkeypatch.setattr(memo, "entries", {})
    monkeypatch.setattr(encoder.KEPT, "row_lines", {})


def test_it_warms_up_only_the_shards_it_serves(settings, each_db, fresh_process):
    small_fabric(8)
    shard = _shard_with_nodes(4)
    mine = {n for n in NODES if shard_of(n, 4) == shard}
    settings.FABRIC_METRICS_SHARDS = f"{shard}/4"
    warm_up()
    # Its nodes' devices and ports, and none of the other shards' (the whole fabric is 8 devices, 16 ports).
    assert {key[0] for key in hostports.device_memo.entries} == mine
    assert len(hostports.port_memo) == 2 * len(mine) < 2 * len(NODES)


def test_it_answers_its_own_shard_and_refuses_the_others_in_words(client, settings, each_db, fresh_process):
    small_fabric(8)
    shard = _shard_with_nodes(4)
    settings.FABRIC_METRICS_SHARDS = f"{shard}/4"
    up = by_name(scrape(client, set="health", shard=f"{shard}/4"), "infiniband_port_up")
    assert {dict(labels)["node"] for labels in up} == {n for n in NODES if shard_of(n, 4) == shard}

    other = client.get("/metrics", {"set": "health", "shard": f"{(shard + 1) % 4}/4"})
    assert other.status_code == 421
    assert other.content.decode() == (
        f"this process serves /metrics shards {shard}/4 only (FABRIC_METRICS_SHARDS), "
        f"not shard={(shard + 1) % 4}/4: scrape the process that serves it\n"
    )
    whole = client.get("/metrics", {"set": "counters"})
    assert whole.status_code == 421
    assert "not the whole fabric (no shard)" in whole.content.decode()


def test_a_process_serving_two_shards_keeps_both(client, settings, each_db, fresh_process):
    small_fabric(8)
    settings.FABRIC_METRICS_SHARDS = "0/2,1/2"
    warm_up()
    assert len(hostports.port_memo) == 16
    for k in (0, 1):
        up = by_name(scrape(client, set="health", shard=f"{k}/2"), "infiniband_port_up")
        assert {dict(labels)["node"] for labels in up} == {n for n in NODES if shard_of(n, 2) == k}


def test_without_the_setting_it_serves_the_whole_fabric(client, settings, each_db, fresh_process):
    small_fabric(8)
    settings.FABRIC_METRICS_SHARDS = None
    warm_up()
    assert len(hostports.port_memo) == 16
    assert len(by_name(scrape(client, set="health"), "infiniband_port_up")) == 16


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("0/4,1/3", "every shard of one N"),
        ("4/4", "FABRIC_METRICS_SHARDS='4/4': K/N with 0 <= K < N <= 1024"),
        ("0/0", "K/N with 0 <= K < N"),
    ],
)
def test_a_shard_setting_that_no_scrape_could_ask_for_is_refused(text, words):
    with pytest.raises(SelectionError, match=words):
        served_shards(text)
