"""Covers collectors/roce.py, collectors/snapshot.py, collectors/text.py and collectors/sim/roce.py (the recording):
a RoCE port's lossless counters in the snapshot, read every poll, typed, each failure costing only its values with
the reason in the snapshot's errors; and on the wire (collectors/wire.py)."""

from __future__ import annotations

import os
import shutil
from dataclasses import fields
from pathlib import Path

import pytest

from collectors import ethnl, read_host, roce, to_dict
from collectors.sim import Fabric
from collectors.sysfs import SysfsReader
from collectors.wire import decode, encode
from tests.collectors.ethtool_support import FakeKernel, FakeNetlink, netlink_bytes

RECORDING = Path(__file__).resolve().parents[1] / "fixtures" / "ethtool" / "mlx5-connectx6dx-roce.txt"
NETLINK = ethnl.Netlink  # the class itself, before a test puts one answering recorded bytes in its place


@pytest.fixture
def roce_node(tmp_path) -> Path:
    """cn006 of a simulated fabric: a ConnectX-6 Dx on RoCE, two one-port cards, its recorded `ethtool -S`."""
    Fabric.create(str(tmp_path), 6)
    return tmp_path / "cn006"


def _recording(node: Path, device: str = "mlx5_0") -> Path:
    net = node / "class" / "infiniband" / device / "device" / "net"
    (ifname,) = os.listdir(net)
    return net / ifname / roce.RECORDED


def _port(snap, device: str = "mlx5_0"):
    return next(d for d in snap.devices if d.name == device).ports[0]


def test_a_roce_port_carries_its_netdevs_statistics_and_its_cnp_counters(roce_node):
    _recording(roce_node).write_text(RECORDING.read_text())  # the mlx5 recording in place of the simulator's
    snap = read_host(str(roce_node), host="cn006", use_verbs=False, hw_counters=False)
    lossless = _port(snap).lossless
    assert isinstance(lossless, roce.Lossless)
    assert lossless.netdev == "enp59s0f0np0" and lossless.source == "`ethtool -S enp59s0f0np0` recorded (ethtool-S)"
    assert lossless.rx_pause[3] == 3311907 and lossless.rx_pause_duration[3] == 165595350
    assert lossless.tx_pause[3] == 918234 and lossless.tx_pause_duration[3] == 45911700
    assert (lossless.pause_storm_warnings, lossless.pause_storm_errors, lossless.rx_discards_phy) == (2, 0, 1842)
    # hw_counters/ was not read this poll (hw_counters=False), its lossless files were.
    assert lossless.cnp_sent is not None and lossless.out_of_sequence == 0
    port = to_dict(snap)["devices"][0]["ports"][0]
    assert port["hw_counters"]["ethtool.tx_prio3_pause_duration"] == 45911700
    assert port["hw_counters"]["np_cnp_sent"] == lossless.cnp_sent
    assert list(port["hw_counters"]) == list(roce.WIRE_NAMES)  # nothing else of hw_counters/ this poll
    assert snap.errors == []


def test_every_field_names_where_it_comes_from():
    for f in fields(roce.Lossless):
        assert f.metadata["file"], f.name


def test_a_bad_recording_costs_only_the_ethtool_values(roce_node):
    where = _recording(roce_node)
    where.write_text("NIC statistics:\n     rx_prio3_pause: lots\n")
    snap = read_host(str(roce_node), host="cn006", use_verbs=False)
    broken, fine = _port(snap, "mlx5_0").lossless, _port(snap, "mlx5_1").lossless
    assert broken.rx_pause == (None,) * 8 and broken.pause_storm_errors is None
    assert broken.cnp_sent is not None  # its hw_counters files read as ever
    assert fine.rx_pause_duration[3] is not None
    assert [(e.path, e.reason) for e in snap.errors] == [(str(where), "rx_prio3_pause: not a 64-bit count: 'lots'")]
    hw = to_dict(snap)["devices"][0]["ports"][0]["hw_counters"]
    assert hw["ethtool.rx_prio3_pause"] is None and hw["np_cnp_sent"] is not None


def test_asking_the_kernel_for_an_interface_it_does_not_have_is_an_error_per_port(roce_node):
    """This machine has no enp59s0f0np0: through the real SIOCETHTOOL each port's statistics are unknown,
    said once per port, and the rest of the snapshot is whole."""
    reader = SysfsReader(str(roce_node))
    devices = reader.devices()
    roce.read_ports(reader, devices, kernel=True)
    reasons = sorted(e.reason for e in reader.errors)
    assert reasons == ["ethtool statistics: ENODEV (no such network interface)"] * 2
    assert sorted(e.path for e in reader.errors) == [
        "/sys/class/net/enp134s0f0np0 (SIOCETHTOOL)",
        "/sys/class/net/enp59s0f0np0 (SIOCETHTOOL)",
    ]
    for dev in devices:
        assert dev.ports[0].lossless.tx_pause == (None,) * 8
        assert dev.ports[0].lossless.cnp_handled is not None


def test_an_infiniband_port_has_none(tmp_path):
    Fabric.create(str(tmp_path), 6)
    snap = read_host(str(tmp_path / "cn001"), host="cn001", use_verbs=False)
    assert all(p.lossless is None for d in snap.devices for p in d.ports)
    assert not any(k.startswith(roce.PREFIX) for d in to_dict(snap)["devices"] for k in d["ports"][0]["hw_counters"])


def test_the_lossless_counters_travel_in_the_wire_form_and_come_back_the_same(roce_node):
    _recording(roce_node).write_text(RECORDING.read_text())
    snap = to_dict(read_host(str(roce_node), host="cn006", use_verbs=False))
    wire = encode(snap)
    assert "ethtool.rx_prio3_pause" in wire["names"]["hw_counters"].split(",")
    assert (
        len(wire["names"]["hw_counters"].split(",")) < 100
    )  # mlx5's port files and the 43 lossless names, well in the cap
    assert decode(wire) == snap


def test_through_the_kernel_a_port_without_device_net_finds_its_netdev_in_gid_attrs(roce_node, monkeypatch):
    """The kernel path end to end, with the kernel's replies made by ethtool_support's FakeKernel: mlx5_0's
    interface is named by its GID table (ports/1/gid_attrs/ndevs/0, as on a bonded or SR-IOV port) once
    device/net is gone; mlx5_1 has neither, which is an error of its own."""

    for device in ("mlx5_0", "mlx5_1"):
        shutil.rmtree(_recording(roce_node, device).parents[1])
    ndevs = roce_node / "class" / "infiniband" / "mlx5_0" / "ports" / "1" / "gid_attrs" / "ndevs"
    ndevs.mkdir(parents=True)
    (ndevs / "0").write_text("enp59s0f0np0\n")
    fake = FakeKernel({"rx_prio3_pause": 7, "tx_pause_storm_error_events": 1, "rx_packets": 99})
    seen = []

    class Kernel:
        def call(self, ifname, request):
            seen.append(ifname)
            fake.call(ifname, request)

        def close(self):
            pass

    monkeypatch.setattr(roce.ethtool, "Kernel", Kernel)
    netlink = FakeNetlink("pause-get-eth0-eopnotsupp")  # this driver has no link-wide pause statistics
    monkeypatch.setattr(roce.ethnl, "Netlink", lambda: NETLINK(call=netlink.call))
    reader = SysfsReader(str(roce_node))
    devices = reader.devices()
    roce.read_ports(reader, devices, kernel=True)
    first, second = (d.ports[0].lossless for d in devices)
    assert set(seen) == set(netlink.asked) == {"enp59s0f0np0"}
    assert first.netdev == "enp59s0f0np0" and first.source == "SIOCETHTOOL ETHTOOL_GSTATS"
    assert first.rx_link_pause is None and first.tx_link_pause is None
    assert first.rx_pause[3] == 7 and first.pause_storm_errors == 1 and first.rx_discards_phy is None
    assert second.netdev is None and second.tx_pause == (None,) * 8
    assert [e.reason for e in reader.errors] == ["no network interface found"]


def _through_the_kernel(roce_node, monkeypatch, driver: dict[str, int], pause: str | bytes):
    """mlx5_0 read through the kernel path, the driver's statistics from FakeKernel and netlink's replies
    from FakeNetlink; its Lossless and the reader's errors."""
    shutil.rmtree(_recording(roce_node, "mlx5_1").parents[1])  # one port: mlx5_1 has no interface now
    fake = FakeKernel(driver)

    class Kernel:
        call = staticmethod(fake.call)

        def close(self):
            pass

    monkeypatch.setattr(roce.ethtool, "Kernel", Kernel)
    monkeypatch.setattr(roce.ethnl, "Netlink", lambda: NETLINK(call=FakeNetlink(pause).call))
    reader = SysfsReader(str(roce_node))
    devices = reader.devices()
    roce.read_ports(reader, devices, kernel=True)
    errors = [(e.path, e.reason) for e in reader.errors if e.reason != "no network interface found"]
    return devices[0].ports[0].lossless, errors


PFC = {"rx_prio3_pause": 7, "tx_prio3_pause_duration": 90, "tx_pause_storm_error_events": 1}


def test_netlink_gives_the_link_wide_pause_and_the_ioctl_the_per_priority_counters(roce_node, monkeypatch):
    """The mlx5-like PAUSE_GET reply (built by hand from the uapi layout) over the driver's own values for
    the same counters; PFC per priority and the storm events from the driver's statistics."""
    driver = {**PFC, "rx_pause_ctrl_phy": 1, "tx_pause_ctrl_phy": 2}
    lossless, errors = _through_the_kernel(roce_node, monkeypatch, driver, "pause-get-mlx5-stats")
    assert errors == []
    assert lossless.source == "ethtool netlink PAUSE_GET, SIOCETHTOOL ETHTOOL_GSTATS"
    assert (lossless.rx_link_pause, lossless.tx_link_pause) == (3311907, 918234)
    assert lossless.rx_pause[3] == 7 and lossless.tx_pause_duration[3] == 90 and lossless.pause_storm_errors == 1
    hw = lossless.counters()
    assert hw["ethtool.rx_pause_ctrl_phy"] == 3311907 and hw["ethtool.tx_pause_ctrl_phy"] == 918234


def test_where_netlink_has_no_pause_statistics_the_drivers_are_read(roce_node, monkeypatch):
    driver = {**PFC, "rx_pause_ctrl_phy": 11, "tx_pause_ctrl_phy": 12}
    lossless, errors = _through_the_kernel(roce_node, monkeypatch, driver, "pause-get-eth0-eopnotsupp")
    assert errors == [] and lossless.source == "SIOCETHTOOL ETHTOOL_GSTATS"
    assert (lossless.rx_link_pause, lossless.tx_link_pause, lossless.rx_pause[3]) == (11, 12, 7)


def test_a_malformed_netlink_reply_costs_only_the_link_wide_pause(roce_node, monkeypatch):
    truncated = netlink_bytes("pause-get-mlx5-stats")[:100]
    lossless, errors = _through_the_kernel(roce_node, monkeypatch, PFC, truncated)
    assert errors == [
        (
            "/sys/class/net/enp59s0f0np0 (ethtool netlink)",
            "pause statistics: ETHTOOL_MSG_PAUSE_GET: netlink message says 112 bytes, 100 received",
        )
    ]
    assert lossless.rx_link_pause is None and lossless.tx_link_pause is None
    assert lossless.rx_pause[3] == 7 and lossless.pause_storm_errors == 1 and lossless.cnp_sent is not None
    assert lossless.source == "SIOCETHTOOL ETHTOOL_GSTATS"


def test_it_asks_the_ethtool_family_of_the_kernel_once_over_several_polls(roce_node, monkeypatch):
    shutil.rmtree(_recording(roce_node, "mlx5_1").parents[1])  # one port: mlx5_1 has no interface now
    fake, kernel = FakeKernel(PFC), FakeNetlink("pause-get-mlx5-stats")

    class Kernel:
        call = staticmethod(fake.call)

        def close(self):
            pass

    monkeypatch.setattr(roce.ethtool, "Kernel", Kernel)
    monkeypatch.setattr(roce.ethnl, "Netlink", lambda: NETLINK(call=kernel.call))
    for _ in range(3):
        reader = SysfsReader(str(roce_node))
        devices = reader.devices()
        roce.read_ports(reader, devices, kernel=True)
        assert (devices[0].ports[0].lossless.rx_link_pause, devices[0].ports[0].lossless.rx_pause[3]) == (3311907, 7)
    # The controller once (0x10), then PAUSE_GET to the family's id at each poll.
    assert kernel.types == [0x10, 0x15, 0x15, 0x15] and kernel.asked == ["enp59s0f0np0"] * 3


def test_the_text_summary_shows_a_roce_ports_lossless_counters(roce_node):
    from collectors.text import render_text

    _recording(roce_node).write_text(RECORDING.read_text())
    text = render_text(read_host(str(roce_node), host="cn006", use_verbs=False))
    line = next(x for x in text.splitlines() if "Lossless Ethernet" in x)
    assert line.startswith(
        "\t\tLossless Ethernet: PFC pause received: prio3 3311907 (165.6 s); PFC pause sent: prio3 918234 (45.9 s); "
        "pause storms: 2 warning, 0 error; CNPs sent "
    )
    assert line.endswith("; rx_discards_phy 1842")
