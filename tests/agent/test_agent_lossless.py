"""Covers fabricweb/agent/poll.py: a RoCE port's lossless counters are read at every poll of the agent, though the
rest of hw_counters/ is read every Nth poll and repeated between."""

from __future__ import annotations

import os

from collectors import roce
from collectors.sim import Fabric
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.poll import Poller


def test_the_lossless_counters_are_fresh_at_every_poll_and_the_rest_repeated(tmp_path):
    Fabric.create(str(tmp_path), 6)
    node = tmp_path / "cn006"  # the RoCE node
    port_dir = node / "class" / "infiniband" / "mlx5_0" / "ports" / "1"
    net = node / "class" / "infiniband" / "mlx5_0" / "device" / "net"
    (ifname,) = os.listdir(net)
    poller = Poller(AgentConfig(broker_url="redis://", node_name="cn006", sysfs_root=str(node), hw_counters_every=3))

    def hw(snap: dict) -> dict:
        return next(d for d in snap["devices"] if d["name"] == "mlx5_0")["ports"][0]["hw_counters"]

    first = hw(poller.snapshot("cn006"))
    (port_dir / "hw_counters" / "out_of_buffer").write_text(f"{first['out_of_buffer'] + 7}\n")
    (port_dir / "hw_counters" / roce.CNP_SENT).write_text(f"{first[roce.CNP_SENT] + 5}\n")
    (net / ifname / roce.RECORDED).write_text("NIC statistics:\n     tx_pause_storm_error_events: 4\n")
    second = hw(poller.snapshot("cn006"))
    assert second["out_of_buffer"] == first["out_of_buffer"]  # repeated until the 4th poll
    assert second[roce.CNP_SENT] == first[roce.CNP_SENT] + 5  # read again
    assert second[roce.wire(roce.STORM_ERROR)] == 4
    assert second[roce.wire(roce.pause("rx", 3))] is None  # not in the recording now: unknown, not 0
    assert set(second) == set(first)  # the same shape at every poll
