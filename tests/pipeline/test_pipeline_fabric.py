"""Covers collectors/mads/netfile.py, fabricweb/nodeauth.py, fabricweb/health/records/staleness.py,
fabricweb/telemetry/intake/messages.py, fabricweb/telemetry/intake/shards.py, fabricweb/fabric/ingest.py.

Fabric collectors' sweeps through the broker and the ingest consumer: signed with the collector's own key
(never a node's), stored in a transaction of their own between node snapshots; collectors polled and judged
stale like hosts, switches never."""

from __future__ import annotations

import logging
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from collectors.mads import netfile
from fabricweb import nodeauth
from fabricweb.fabric.models import Sweep
from fabricweb.health.records.staleness import check_stale
from fabricweb.inventory.models import Node
from fabricweb.telemetry.intake.consumer import BatchConsumer
from fabricweb.telemetry.intake.messages import FABRIC, ONE
from tests.fabric.fabric_support import SweepBuilder, one_leaf_net
from tests.fixture_trees import snapshot
from tests.pipeline.pipeline_support import consume, on_the_wire

pytestmark = pytest.mark.django_db(transaction=True)
SECRET = "site-secret-for-tests-" + "k" * 40
NET = one_leaf_net("cn001 mlx5_0", "0x0c42a10300000010")


@pytest.fixture
def auth(settings):
    settings.FABRIC_NODE_KEY_SECRET = SECRET
    settings.FABRIC_NODE_AUTH = "required"
    settings.FABRIC_COLLECTORS = ("fabric-a",)
    return settings


def sweep_of(collector: str) -> dict:
    return SweepBuilder(netfile.parse(NET), collector).snapshot(timezone.now())


def test_a_collectors_key_is_its_own_and_no_nodes_key_signs_a_sweep():
    assert nodeauth.collector_key(SECRET, "sm01") != nodeauth.node_key(SECRET, "sm01")
    signed = nodeauth.signed_kwargs(nodeauth.node_key(SECRET, "sm01"), sweep_of("sm01"), nodeauth.COLLECTOR)
    with pytest.raises(nodeauth.NotAuthenticated, match="bad signature for fabric collector 'sm01'"):
        nodeauth.verify(SECRET, signed, nodeauth.COLLECTOR)


def test_it_stores_a_signed_sweep_between_node_snapshots_and_refuses_forged_ones(each_db, auth, broker, caplog):
    good = nodeauth.signed_kwargs(nodeauth.collector_key(SECRET, "fabric-a"), sweep_of("fabric-a"), nodeauth.COLLECTOR)
    # A compromised node holds its own key: with it, it can sign nothing as a collector, even under a name the
    # site reads (any other name is refused on the name alone: tests/fabric/test_fabric_collector_names.py).
    auth.FABRIC_COLLECTORS = ("fabric-a", "cn002")
    node_signed = nodeauth.signed_kwargs(nodeauth.node_key(SECRET, "cn002"), sweep_of("cn002"), nodeauth.COLLECTOR)
    broker.send(ONE, **nodeauth.signed_kwargs(nodeauth.node_key(SECRET, "cn001"), on_the_wire(snapshot(host="cn001"))))
    broker.send(FABRIC, **good)
    broker.send(FABRIC, **node_signed)
    broker.send(FABRIC, sweep_of("fabric-z"))  # unsigned
    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consumer = consume(broker.url, lambda c: c.totals["batches"] + c.totals["unauthenticated"] >= 4)
    assert consumer.totals["unauthenticated"] == 2
    assert "bad signature for fabric collector 'cn002': not sent with that fabric collector's key" in caplog.text
    assert set(Node.objects.values_list("name", "kind")) == {
        ("cn001", "host"),
        ("fabric-a", "collector"),
        ("leaf01", "switch"),
    }
    assert Sweep.objects.get().applied and broker.left() == (0, 0)


def test_a_sharded_consumer_of_a_site_naming_its_collectors_reads_the_sweeps_on_their_own_lease(each_db, auth, broker):
    broker.send(ONE, **nodeauth.signed_kwargs(nodeauth.node_key(SECRET, "cn001"), on_the_wire(snapshot(host="cn001"))))
    broker.send(
        FABRIC,
        **nodeauth.signed_kwargs(nodeauth.collector_key(SECRET, "fabric-a"), sweep_of("fabric-a"), nodeauth.COLLECTOR),
    )
    consumer = BatchConsumer(100, 0.2, broker_url=broker.url, shards=2, lease_s=5.0)
    deadline = time.monotonic() + 20
    consumer.run(until=lambda: consumer.totals["batches"] >= 2 or time.monotonic() > deadline)
    assert consumer.leases.sweeps_apart and consumer.leases.held == (0, 1, 2)  # 2: the sweeps' own lease
    assert consumer.leases.queues() == ["snapshots", "snapshots.0", "snapshots.1", "sweeps"]
    assert Sweep.objects.get().applied
    assert set(Node.objects.values_list("name", flat=True)) == {"cn001", "fabric-a", "leaf01"}
    assert broker.left() == (0, 0)


def test_a_sweep_too_large_for_any_fabric_is_dropped_before_it_is_decoded(
    each_db, settings, broker, caplog, monkeypatch
):
    from fabricweb.telemetry.intake import messages

    settings.FABRIC_NODE_AUTH = "off"
    monkeypatch.setattr(messages, "MAX_FABRIC_MESSAGE_BYTES", 2000)
    broker.send(FABRIC, sweep_of("fabric-a"))
    with caplog.at_level(logging.WARNING, logger="fabricweb.telemetry.intake.consumer"):
        consume(broker.url, lambda c: c.totals["dropped"] >= 1)
    assert "more than the 2000 a sweep's snapshots take" in caplog.text
    assert not Node.objects.exists()


def test_collectors_go_stale_like_hosts_and_switches_never(each_db, settings):
    from fabricweb.fabric.ingest import ingest_fabric
    from fabricweb.health.models import Event

    settings.FABRIC_POLL_INTERVAL = 10
    long_ago = timezone.now() - timedelta(minutes=5)
    ingest_fabric(SweepBuilder(netfile.parse(NET), "fabric-a").snapshot(long_ago), now=long_ago)
    # The collector has missed 30 sweeps; leaf01 is in the ledger only by mistake: switches are judged by
    # sweeps, not polls.
    report = check_stale({"fabric-a": 30, "leaf01": 30})
    assert report.stale == ["fabric-a"]
    event = Event.objects.get(key="stale:fabric-a")
    assert event.message.startswith("fabric-a: no fabric sweep for 30 polls (~5 min): the fabric collector")
