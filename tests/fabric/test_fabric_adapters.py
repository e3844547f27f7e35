"""Covers fabricweb/scheduling.py, fabricweb/env.py, fabricweb/fabric/adapters.py, fabricweb/fabric/naming.py,
fabricweb/fabricagent/tasks.py.

Which channel adapters the fabric collectors read (fabricweb/fabric/adapters.py): FABRIC_CA_COUNTERS,
never an adapter a host's agent reports, told to each collector with its poll; an adapter is never polled itself.
The reading itself, on ibsim: test_fabric_adapters_ibsim.py."""

from __future__ import annotations

import base64
import json
import uuid
from datetime import timedelta

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone

from fabricweb import scheduling
from fabricweb.celery import app
from fabricweb.env import Env
from fabricweb.fabric import adapters, naming
from fabricweb.fabric.models import FabricNode
from fabricweb.inventory.models import Device, Node
from fabricweb.names import collector_queue, node_queue

AGENT, STORAGE, GATEWAY, GONE = "0x0c42a10300bcf003", "0x0c42a10300bcf00b", "0x0c42a10300bcf013", "0x0c42a10300bcf01b"


@pytest.fixture
def fabric(each_db):
    """Four adapters the sweeps reached: cn042's (its agent reports it), a storage server's, a gateway's, and one
    the last full sweep no longer reached."""
    now = timezone.now() - timedelta(hours=1)  # reached by the sweeps for an hour
    for guid, description in ((AGENT, "cn042 mlx5_0"), (STORAGE, "nfs01 mlx5_0"), (GATEWAY, "gw01 mlx5_1")):
        FabricNode.objects.create(guid=guid, node_type=1, num_ports=1, description=description, first_seen_at=now)
    FabricNode.objects.create(guid=GONE, node_type=1, num_ports=1, first_seen_at=now, missing_since=now)
    host = Node.objects.create(name="cn042", first_seen_at=now)
    Device.objects.create(node=host, name="mlx5_0", node_guid="0c42:a103:00bc:f003", first_seen_at=now)


def test_by_default_every_reached_adapter_no_agent_reports_is_read(fabric):
    assert adapters.to_read() == [STORAGE, GATEWAY]


def test_a_hosts_card_that_vanished_from_its_view_is_not_taken_for_agentless_until_it_retires(fabric):
    # cn042's driver lost mlx5_0; its firmware still answers the sweeps, so the fabric reaches it as before.
    card = Device.objects.get(node__name="cn042", name="mlx5_0")
    card.vanished_at = timezone.now() - timedelta(minutes=30)
    card.save(update_fields=["vanished_at"])
    assert adapters.to_read() == [STORAGE, GATEWAY]
    card.delete()  # retired (FABRIC_VANISHED_RETIRE_AFTER): nobody speaks for it now
    assert adapters.to_read() == [AGENT, STORAGE, GATEWAY]


def test_an_adapter_first_reached_within_three_polls_or_a_minute_waits_for_its_agent(fabric, settings):
    new, now = "0x0c42a10300bcf023", timezone.now()
    FabricNode.objects.create(guid=new, node_type=1, num_ports=1, first_seen_at=now)
    assert adapters.to_read(now) == [STORAGE, GATEWAY]
    settings.FABRIC_POLL_INTERVAL = 30.0
    assert adapters.to_read(now + timedelta(seconds=89)) == [STORAGE, GATEWAY]
    assert adapters.to_read(now + timedelta(seconds=90)) == [STORAGE, GATEWAY, new]
    settings.FABRIC_POLL_INTERVAL = 2.0  # a lab's fast polls: a minute still, for the agents' workers to start
    assert adapters.to_read(now + timedelta(seconds=59)) == [STORAGE, GATEWAY]
    assert adapters.to_read(now + timedelta(seconds=60)) == [STORAGE, GATEWAY, new]


def test_none_reads_no_adapter_and_a_list_reads_those_of_it_no_agent_reports(fabric, settings):
    settings.FABRIC_CA_COUNTERS = "none"
    assert adapters.to_read() == []
    assert adapters.readable([STORAGE]) == set()
    settings.FABRIC_CA_COUNTERS = (AGENT, GATEWAY)
    assert adapters.to_read() == [GATEWAY]


def test_the_setting_is_a_word_or_node_guids_read_strictly():
    def read(value: str):
        return Env({"FABRIC_CA_COUNTERS": value}).word_or_guids(
            "FABRIC_CA_COUNTERS", "agentless", words=("agentless", "none")
        )

    assert read("None") == "none"
    assert read(f"{STORAGE.upper().replace('0X', '0x')}, {GATEWAY}") == (STORAGE, GATEWAY)
    with pytest.raises(ImproperlyConfigured, match=r"'nfs01' is neither one of agentless, none nor a node GUID"):
        read(f"{STORAGE},nfs01")
    assert Env({}).word_or_guids("FABRIC_CA_COUNTERS", "agentless", words=("agentless", "none")) == "agentless"


def test_an_adapter_is_named_from_its_description_as_a_switch_is():
    assert naming.device_name("nfs01 mlx5_0") == "mlx5_0"
    assert naming.device_name("nfs01 HCA-1") == "ca"
    assert naming.device_name(None) == "ca"
    assert naming.switch_name("nfs01 mlx5_0", STORAGE, {"nfs01"}.__contains__, "ca") == "nfs01-f00b"
    assert naming.switch_name("<>", STORAGE, set().__contains__, "ca") == "ca-0c42a10300bcf00b"


def test_dispatch_tells_each_collector_the_adapters_to_read_and_polls_no_adapter(fabric):
    collector, adapter = f"fabric-{uuid.uuid4().hex[:8]}", f"nfs{uuid.uuid4().hex[:8]}"
    now = timezone.now()
    Node.objects.create(name=collector, kind=Node.Kind.COLLECTOR, first_seen_at=now)
    Node.objects.create(name=adapter, kind=Node.Kind.ADAPTER, guid=STORAGE, first_seen_at=now)
    client = scheduling.broker_redis(app.conf.broker_url)
    queues = [collector_queue(collector), node_queue(adapter), node_queue("cn042")]
    try:
        assert scheduling.dispatch_collect.apply().get() == {"sent": 2, "waiting": 0}  # cn042 and the collector
        message = json.loads(client.lindex(collector_queue(collector), 0))
        body = message["body"]
        if message["properties"].get("body_encoding") == "base64":
            body = base64.b64decode(body)
        _, kwargs, _ = json.loads(body)
        assert kwargs == {"collector": collector, "adapters": [STORAGE, GATEWAY]}
        assert client.llen(node_queue(adapter)) == 0
    finally:
        client.delete(*queues, *(f"_kombu.binding.{q}" for q in queues))


def test_the_collector_reads_the_adapters_its_poll_names_by_guid_and_drops_anything_else():
    from collectors.mads.model import FabricSweep
    from fabricweb.fabricagent.config import FabricAgentConfig
    from fabricweb.fabricagent.tasks import FabricAgent

    asked = []

    class Sweeper:
        def sweep(self, mode: str, adapters: frozenset[int]) -> FabricSweep:
            asked.append(adapters)
            return FabricSweep("fabric-a", 0.0, mode=mode)

    agent = FabricAgent(None, FabricAgentConfig(broker_url="redis://localhost", collector="fabric-a"))
    agent._sweeper, agent.deliver = Sweeper(), lambda snap: None
    assert agent.sweep("fabric-a", [STORAGE, "nfs01", 7, None, GATEWAY])["adapters"] == 2
    assert asked == [frozenset({0x0C42A10300BCF00B, 0x0C42A10300BCF013})]
    assert agent.sweep("fabric-a")["adapters"] == 0  # a poll naming none: the switches alone
    assert asked[-1] == frozenset()
