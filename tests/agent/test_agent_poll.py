"""Covers collectors/sysfs.py, fabricweb/agent/config.py, fabricweb/agent/poll.py, fabricweb/agent/tasks.py.

A poll of the agent: abandoned past its deadline, hw_counters read every Nth poll and repeated between."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from collectors.sim import Fabric
from collectors.sysfs import DeadlinePassed, SysfsReader
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.poll import Poller


@pytest.fixture
def tree(tmp_path) -> Path:
    Fabric.create(str(tmp_path), 1, 2, hcas=2)
    return tmp_path / "cn001"


def hw_file(tree: Path) -> Path:
    return tree / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "hw_counters" / "out_of_buffer"


def port_hw(snap: dict, device: str = "mlx5_0", port: int = 1) -> dict:
    dev = next(d for d in snap["devices"] if d["name"] == device)
    return next(p for p in dev["ports"] if p["port"] == port)["hw_counters"]


def test_hw_counters_are_read_every_nth_poll_and_the_last_values_sent_in_between(tree):
    assert hw_file(tree).exists()
    poller = Poller(AgentConfig(broker_url="redis://", node_name="cn001", sysfs_root=str(tree), hw_counters_every=3))
    first = poller.snapshot("cn001")
    read = port_hw(first)["out_of_buffer"]
    hw_file(tree).write_text(f"{read + 7}\n")
    # Polls 2 and 3 repeat what poll 1 read; every port and device keeps its hw_counters.
    for _ in range(2):
        snap = poller.snapshot("cn001")
        assert port_hw(snap)["out_of_buffer"] == read
        assert all(p["hw_counters"] for d in snap["devices"] for p in d["ports"])
        assert [d["hw_counters"] for d in snap["devices"]] == [d["hw_counters"] for d in first["devices"]]
    # Poll 4 reads them again; the other counters were read at every poll.
    assert port_hw(poller.snapshot("cn001"))["out_of_buffer"] == read + 7


def test_a_poll_past_its_deadline_stops_reading_and_names_the_file_it_reached(tree):
    reader = SysfsReader(str(tree), deadline=time.monotonic() - 1)
    with pytest.raises(DeadlinePassed, match=r"deadline passed before reading .*cn001/class/infiniband"):
        reader.devices()
    # Without a deadline, or within it, the same tree reads whole.
    assert len(SysfsReader(str(tree), deadline=time.monotonic() + 60).devices()) == 2


def test_the_agent_abandons_a_slow_poll_and_sends_nothing(tree, caplog, monkeypatch):
    from fabricweb.agent.tasks import Agent

    sent = []

    class Publisher:  # where the snapshot would go
        def send(self, name, queue, args=None, kwargs=None, **options):
            sent.append((name, queue, args[0]["host"]))

    config = AgentConfig(broker_url="redis://", node_name="cn001", sysfs_root=str(tree), poll_deadline_s=0.1)
    agent = Agent(config, Publisher())
    assert agent.collect("cn001") == {"node": "cn001", "devices": 2, "errors": 0}
    assert sent == [("fabricweb.telemetry.tasks.ingest_snapshot", "snapshots", "cn001")]

    # A driver that answers each file slowly: the reader passes its deadline part-way.
    real_read = SysfsReader._read

    def crawl(self, *args, **kwargs):
        time.sleep(0.01)
        return real_read(self, *args, **kwargs)

    monkeypatch.setattr(SysfsReader, "_read", crawl)
    result = agent.collect("cn001")
    assert result["node"] == "cn001" and result["abandoned"].startswith("deadline passed before reading")
    assert len(sent) == 1
    assert "collect cn001: abandoned after 0.1 s, deadline passed before reading" in caplog.text
