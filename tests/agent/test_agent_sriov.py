"""Covers fabricweb/agent/config.py, fabricweb/agent/poll.py.

The agent and SR-IOV virtual functions: left out of its snapshots unless FABRIC_INCLUDE_VIRTUAL_FUNCTIONS asks."""

from __future__ import annotations

import os

import pytest

from collectors.sim import Fabric
from fabricweb.agent.config import AgentConfig, ConfigError
from fabricweb.agent.poll import Poller


@pytest.fixture
def sim(tmp_path):
    """cn001 (two ConnectX-6) with 4 virtual functions on each."""
    fabric = Fabric.create(str(tmp_path), 1, seed=3)
    fabric.add_fault("cn001:vfs=4")
    fabric.step(10)
    return fabric


def poller(sim, **options) -> Poller:
    return Poller(AgentConfig(broker_url="redis://", node_name="head", sim_dir=sim.out, **options))


def test_virtual_functions_are_left_out_of_the_snapshot_by_default(sim):
    assert len(os.listdir(os.path.join(sim.out, "cn001", "class", "infiniband"))) == 10
    snap = poller(sim).snapshot("cn001")
    assert [(d["name"], d["virtual_function"]) for d in snap["devices"]] == [("mlx5_0", False), ("mlx5_1", False)]
    # Not read at all: none of their files (their N/A counters) shows as a read error either.
    assert snap["errors"] == []


def test_virtual_functions_are_sent_marked_when_the_setting_asks(sim):
    snap = poller(sim, include_virtual_functions=True).snapshot("cn001")
    marks = [(d["name"], d["virtual_function"], d["physical_function"]) for d in snap["devices"]]
    assert marks == [
        ("mlx5_0", False, None),
        ("mlx5_1", False, None),
        *((f"mlx5_{2 + i}", True, "0000:3b:00.0") for i in range(4)),
        *((f"mlx5_{6 + i}", True, "0000:86:00.0") for i in range(4)),
    ]
    assert {d["pci"]["address"] for d in snap["devices"][2:6]} == {f"0000:3b:00.{i}" for i in range(1, 5)}


@pytest.mark.parametrize(("value", "included"), [("true", True), ("1", True), ("Yes", True), ("off", False)])
def test_the_setting_is_read_from_the_environment(value, included):
    config = AgentConfig.from_env({"FABRIC_INCLUDE_VIRTUAL_FUNCTIONS": value, "FABRIC_NODE_NAME": "cn001"})
    assert config.include_virtual_functions is included
    assert AgentConfig.from_env({"FABRIC_NODE_NAME": "cn001"}).include_virtual_functions is False


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("maybe", "FABRIC_INCLUDE_VIRTUAL_FUNCTIONS='maybe': expected true or false (or 1/0, yes/no, on/off)"),
        (" ", "FABRIC_INCLUDE_VIRTUAL_FUNCTIONS is set but empty"),
    ],
)
def test_a_bad_setting_stops_the_agent_naming_the_variable(value, message):
    with pytest.raises(ConfigError) as caught:
        AgentConfig.from_env({"FABRIC_INCLUDE_VIRTUAL_FUNCTIONS": value, "FABRIC_NODE_NAME": "cn001"})
    assert str(caught.value) == message
