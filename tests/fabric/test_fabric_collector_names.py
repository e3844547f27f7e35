"""Covers collectors/mads/netfile.py, fabricweb/nodeauth.py, fabricweb/fabric/ingest.py,
fabricweb/telemetry/validation/auth.py, fabricweb/telemetry/validation/checks.py.

Fabric collectors are known by an operator's act, FABRIC_COLLECTORS: a sweep of any other name is
refused on its name, before its signature is computed or its text read (telemetry/validation/auth.py, where the
ingest consumer checks every signed message; fabric/ingest.py for unsigned ones). Four validly signed sweeps of
65,536 switches under a name no one set up once cost the consumer 2.1 to 3.3 s each before their last row refused
them, while honest messages queued behind them."""

from __future__ import annotations

import time

import pytest
from django.utils import timezone

from collectors.mads import netfile
from fabricweb import nodeauth
from fabricweb.fabric.ingest import ingest_fabric
from fabricweb.inventory.models import Node
from fabricweb.telemetry.validation.auth import NotAuthenticated, authenticated
from fabricweb.telemetry.validation.checks import SnapshotRejected
from tests.fabric.fabric_support import SweepBuilder, one_leaf_net
from tests.fabric.growth_support import with_new_switches

SECRET = "site-secret-for-tests-" + "k" * 40
NET = one_leaf_net("cn001 mlx5_0", "0x0c42a10300000010")
REFUSED_WITHIN_S = 0.05  # a name looked up; the same sweep took 2-3 s to refuse at its last row before


@pytest.fixture
def auth(settings):
    settings.FABRIC_NODE_KEY_SECRET = SECRET
    settings.FABRIC_NODE_AUTH = "required"
    settings.FABRIC_COLLECTORS = ("fabric-a",)
    return settings


def sweep_of(collector: str) -> dict:
    return SweepBuilder(netfile.parse(NET), collector).snapshot(timezone.now())


def signed(collector: str, snap: dict) -> dict:
    return nodeauth.signed_kwargs(nodeauth.collector_key(SECRET, collector), snap, nodeauth.COLLECTOR)


@pytest.fixture(scope="module")
def huge() -> dict:
    """A sweep of 65,536 switches (an 18 MiB text), invalid at its very last row."""
    snap = with_new_switches(sweep_of("fabric-evil"), 65_535, ports=2)
    snap["ports"]["rows"][-1][6] = 3  # lanes 3
    return snap


def test_it_refuses_a_sweep_of_an_unknown_collector_on_its_name_before_reading_it(auth, huge):
    evil = signed("fabric-evil", huge)  # signed with that name's key: as a leaked site secret could
    assert len(evil["snapshot"]) > 16 * 2**20
    started = time.perf_counter()
    with pytest.raises(NotAuthenticated) as refused:
        authenticated(evil, nodeauth.COLLECTOR)
    took = time.perf_counter() - started
    assert str(refused.value) == (
        "fabric collector 'fabric-evil' is not one of FABRIC_COLLECTORS (fabric-a): its sweeps are not read; "
        "add its name there if it is one of this site's"
    )
    assert took < REFUSED_WITHIN_S, f"took {took:.3f} s"
    assert authenticated(signed("fabric-a", sweep_of("fabric-a")), nodeauth.COLLECTOR)["collector"] == "fabric-a"


def test_an_unsigned_sweep_of_an_unknown_collector_is_refused_before_it_is_validated(each_db, settings, huge):
    settings.FABRIC_NODE_AUTH = "off"
    settings.FABRIC_COLLECTORS = ("fabric-a",)
    started = time.perf_counter()
    with pytest.raises(SnapshotRejected, match="'fabric-evil' is not one of FABRIC_COLLECTORS"):
        ingest_fabric(huge)
    assert time.perf_counter() - started < REFUSED_WITHIN_S
    assert not Node.objects.exists()


def test_with_no_collector_named_a_site_that_requires_signatures_reads_no_sweep(auth):
    auth.FABRIC_COLLECTORS = ()
    with pytest.raises(NotAuthenticated, match=r"'fabric-a' is not one of FABRIC_COLLECTORS \(unset\)"):
        authenticated(signed("fabric-a", sweep_of("fabric-a")), nodeauth.COLLECTOR)


def test_unsigned_sweeps_follow_the_same_names_once_they_are_set(each_db, settings):
    settings.FABRIC_NODE_AUTH = "off"
    settings.FABRIC_COLLECTORS = ("fabric-a",)
    with pytest.raises(SnapshotRejected, match="'fabric-z' is not one of FABRIC_COLLECTORS"):
        ingest_fabric(sweep_of("fabric-z"))
    assert ingest_fabric(sweep_of("fabric-a")).status == "stored"
    settings.FABRIC_COLLECTORS = ()  # a lab's: none named, unsigned, any
    assert ingest_fabric(sweep_of("fabric-z")).status == "standby"
    assert set(Node.objects.filter(kind=Node.Kind.COLLECTOR).values_list("name", flat=True)) == {"fabric-a", "fabric-z"}
