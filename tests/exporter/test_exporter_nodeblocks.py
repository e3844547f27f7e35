"""Covers fabricweb/exporter/nodeblocks.py, fabricweb/exporter/tables.py, fabricweb/exporter/selection.py.

`?set=health` on PostgreSQL keeps each node's health rows across scrapes and reads again only the nodes
whose rows changed (fabricweb/exporter/nodeblocks.py). Whatever changes, by ingest or by hand, the next
scrape says what the row-by-row path says, sample for sample; and a scrape with nothing changed reads no
port row at all.

Each test commits as it goes (transaction=True): row versions are transactions, as in production, where a
scrape never runs inside the transaction that wrote its rows.
"""

from __future__ import annotations

import os

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabricweb.exporter import nodeblocks, tables
from fabricweb.exporter.selection import Selection
from fabricweb.inventory.models import Device, Node, Port
from tests.exporter.exporter_support import LiveWorld, by_name, port, scrape

pytestmark = [
    pytest.mark.skipif(
        not os.environ.get("TEST_POSTGRES_URL") and not os.environ.get("CI"), reason="TEST_POSTGRES_URL is not set"
    ),
    pytest.mark.django_db(transaction=True, databases=["postgres"]),
]


@pytest.fixture
def world(tmp_path, postgres):
    """Hosts on two leaves and a spine, a host port trained below what both ends support, two polls."""
    nodeblocks.forget()
    fabric = LiveWorld(tmp_path / "sim", polls=4, start_faults=("cn003/mlx5_0/1:speed=DDR",))
    fabric.polls(2)
    yield fabric
    nodeblocks.forget()


def lines(text: str) -> list[str]:
    """The exposition's sample lines but the exporter's own (its timing) and the broker's memory (live), sorted:
    families may come in another order, each family's samples may not."""
    return sorted(
        line for line in text.splitlines() if not line.startswith(("fabricweb_exporter", "fabricweb_broker", "# EOF"))
    )


def row_by_row(client, monkeypatch) -> list[str]:
    with monkeypatch.context() as patch:
        patch.setattr(tables, "has_row_versions", lambda: False)
        return lines(scrape(client, set="health"))


def read_again(scrape_once) -> set[str]:
    """The nodes whose rows a scrape read (the others: appended as kept)."""
    kept = dict(nodeblocks.KEPT.blocks)
    scrape_once()
    names = dict(Node.objects.values_list("id", "name"))
    return {names[node_id] for node_id, block in nodeblocks.KEPT.blocks.items() if kept.get(node_id) is not block}


def test_it_serves_a_kept_fabric_as_the_row_by_row_path_does_and_reads_no_port_row(client, world, monkeypatch):
    assert nodeblocks.serves(Selection("health"))
    first = scrape(client, set="health")  # reads every row, keeps every node
    scraped = []
    with CaptureQueriesContext(connection) as queries:
        assert read_again(lambda: scraped.append(scrape(client, set="health"))) == set()
    second = scraped[0]
    # Nothing was written: the tables' sums say so, and no node's versions are read.
    assert not [q for q in queries if "inventory_port" in q["sql"] and "txid_current_if_assigned" not in q["sql"]]
    assert lines(first) == lines(second) == row_by_row(client, monkeypatch)
    assert by_name(second, "infiniband_port_degraded")[port("cn003", "mlx5_0", 1)] == 1
    assert by_name(second, "infiniband_switch_port_up")  # the switches' ports are kept too
    assert not nodeblocks.serves(Selection())  # the default set reads its counters row by row


def test_a_port_that_retrains_shows_at_the_next_scrape_and_only_its_node_is_read_again(client, world, monkeypatch):
    scrape(client, set="health")
    world.sim.add_fault("cn001/mlx5_0/1:down")
    world.polls(1)  # ingest writes the port's row
    scraped = []
    assert read_again(lambda: scraped.append(scrape(client, set="health"))) == {"cn001"}
    text = scraped[0]
    assert by_name(text, "infiniband_port_up")[port("cn001", "mlx5_0", 1)] == 0
    assert port("cn001", "mlx5_0", 1) not in by_name(text, "infiniband_rate_bytes_per_second")  # no link
    assert lines(text) == row_by_row(client, monkeypatch)


def test_a_node_gone_stale_renamed_or_with_a_device_removed_is_never_served_from_what_was_kept(
    client, world, monkeypatch
):
    scrape(client, set="health")
    Node.objects.filter(name="cn002").update(stale=True)
    text = scrape(client, set="health")
    assert port("cn002", "mlx5_0", 1) not in by_name(text, "infiniband_port_up")  # unknown: no sample
    assert by_name(text, "infiniband_node_up")[frozenset({("node", "cn002")})] == 0
    assert lines(text) == row_by_row(client, monkeypatch)

    # The far end of the leaves' uplinks, whose series the leaves' port rows make: none of those rows changes.
    Node.objects.filter(name="spine01").update(name="spineA")
    text = scrape(client, set="health")
    peers = {dict(labels)["peer_node"] for labels in by_name(text, "infiniband_link_up")}
    assert "spineA" in peers and "spine01" not in peers
    assert lines(text) == row_by_row(client, monkeypatch)

    Device.objects.filter(node__name="cn004", name="mlx5_1").delete()
    text = scrape(client, set="health")
    assert not any(
        ("device", "mlx5_1") in labels and ("node", "cn004") in labels for labels in by_name(text, "infiniband_port_up")
    )
    assert lines(text) == row_by_row(client, monkeypatch)

    Port.objects.filter(device__node__name="cn005").update(expected_speed="NDR")  # as a link policy writes it
    text = scrape(client, set="health")
    degraded = {
        labels: v for labels, v in by_name(text, "infiniband_port_degraded").items() if ("node", "cn005") in labels
    }
    assert degraded and set(degraded.values()) == {1}
    assert lines(text) == row_by_row(client, monkeypatch)
