"""Covers collectors/link.py, collectors/model.py.

Every real sysfs tree in tests/fixtures, read and asserted value by value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from collectors import read_host, to_dict
from collectors.link import Rate
from collectors.model import Enum
from tests.collectors.sysfs_fixtures import NODE_EXPORTER, PROCFS

ACTIVE = Enum(4, "ACTIVE")
LINK_UP = Enum(5, "LinkUp")


@pytest.fixture(scope="module")
def procfs():
    snap = read_host(str(PROCFS), host="cn001", use_verbs=False)
    return {d.name: d for d in snap.devices}, snap


@pytest.fixture(scope="module")
def node_exporter():
    snap = read_host(str(NODE_EXPORTER), host="cn002", use_verbs=False)
    return {d.name: d for d in snap.devices}, snap


def test_it_reads_every_procfs_device(procfs):
    devices, snap = procfs
    assert list(devices) == ["hfi1_0", "mlx4_0", "mlx5_0"]
    assert snap.errors == []


def test_it_reads_omnipath_without_hca_type(procfs):
    hfi = procfs[0]["hfi1_0"]
    assert hfi.hca_type is None  # hfi1 has no hca_type file: missing, not an error
    assert hfi.fw_ver == "1.27.0"
    assert hfi.board_id == "HPE 100Gb 1-port OP101 QSFP28 x16 PCIe Gen3 with Intel Omni-Path Adapter"
    (port,) = hfi.ports
    assert port.number == 1
    assert port.state == ACTIVE
    assert port.phys_state == LINK_UP
    assert port.rate == Rate(100.0, 4, "EDR")
    assert port.link_layer == "InfiniBand"
    c = port.counters
    assert c["port_rcv_data"] == 345091702026 * 4
    assert c["port_xmit_data"] == 273558326543 * 4
    assert c["port_rcv_packets"] == 638036947
    assert c["port_xmit_packets"] == 568318856
    assert c["symbol_error"] == 0
    assert c["VL15_dropped"] == 0
    assert len(c) == 17
    assert port.capped == []
    assert port.hw_counters == {}


def test_it_reads_connectx3_dual_port(procfs):
    mlx4 = procfs[0]["mlx4_0"]
    assert (mlx4.hca_type, mlx4.fw_ver, mlx4.board_id) == ("MT4099", "2.31.5050", "SM_1141000001000")
    p1, p2 = mlx4.ports
    assert p1.rate == p2.rate == Rate(40.0, 4, "QDR")
    assert p1.counters["port_xmit_wait"] == 3599
    assert p2.counters["port_xmit_wait"] == 3846
    assert p1.counters["port_rcv_data"] == 2221223609 * 4
    assert p2.counters["port_xmit_data"] == 26540356890 * 4
    assert p2.link_layer == "InfiniBand"  # the file has a blank line after the value


def test_it_reads_connectx4_on_one_lane_with_hw_counters(procfs):
    mlx5 = procfs[0]["mlx5_0"]
    assert mlx5.node_guid == "0a7f:bc12:45ef:d23b"  # no trailing newline in the file
    (port,) = mlx5.ports
    assert port.rate == Rate(25.0, 1, "EDR")
    assert port.rate.link_name == "1X EDR"
    assert port.phys_state == Enum(4, "ACTIVE")  # as captured: the id is what counts
    assert port.counters["port_xmit_data"] == 2880761508848 * 4
    assert port.counters["unicast_xmit_packets"] == 10907922116
    hw = port.hw_counters
    assert "lifespan" not in hw  # cache time in ms, not a counter
    assert hw["req_cqe_error"] == 3481
    assert hw["resp_cqe_flush_error"] == 4708
    assert hw["rx_read_requests"] == 175528982
    assert hw["duplicate_request"] == 41
    assert len(hw) == 24


def test_it_reports_no_pma_counters_as_none_with_errors(node_exporter):
    devices, snap = node_exporter
    (port,) = devices["i40iw0"].ports
    assert port.rate == Rate(10.0, 4, "SDR")  # old nameless form `10 Gb/sec (4X)`
    assert port.state == ACTIVE
    assert len(port.counters) == 17
    assert all(v is None for v in port.counters.values())
    na = [e for e in snap.errors if "/i40iw0/" in e.path]
    assert len(na) == 17
    assert all("N/A (no PMA)" in e.reason for e in na)
    assert {Path(e.path).name for e in na} == set(port.counters)


def test_it_reads_legacy_counters_ext_in_bytes(node_exporter):
    mlx4 = node_exporter[0]["mlx4_0"]
    p1, p2 = mlx4.ports
    assert p1.counters_ext == {
        "port_multicast_rcv_packets": 93,
        "port_multicast_xmit_packets": 16,
        "port_rcv_data_64": 4631917 * 4,
        "port_rcv_packets_64": 0,
        "port_unicast_rcv_packets": 61148,
        "port_unicast_xmit_packets": 61239,
        "port_xmit_data_64": 3733440 * 4,
        "port_xmit_packets_64": 0,
    }
    assert p2.counters["port_rcv_data"] == 0
    assert p2.counters_ext["port_rcv_data_64"] == 18527668


def test_it_lists_a_counter_at_all_ones_as_capped(node_exporter):
    p1, p2 = node_exporter[0]["mlx4_0"].ports
    assert p1.counters["port_xmit_wait"] == 4294967295
    assert p1.capped == ["port_xmit_wait"]
    assert p2.capped == []
    # a 64-bit value past 2^32 is not a 32-bit cap
    assert p1.counters["port_rcv_packets"] == 6825908347


def test_the_snapshot_json_follows_the_contract(node_exporter):
    _, snap = node_exporter
    doc = json.loads(json.dumps(to_dict(snap)))
    assert doc["schema"] == 2
    assert doc["host"] == "cn002"
    assert doc["collected_at"].endswith("Z")
    mlx4 = next(d for d in doc["devices"] if d["name"] == "mlx4_0")
    port = mlx4["ports"][0]
    assert port["port"] == 1
    assert port["state"] == {"id": 4, "name": "ACTIVE"}
    assert port["phys_state"] == {"id": 5, "name": "LinkUp"}
    assert port["rate"] == {"gbps": 40.0, "lanes": 4, "speed": "QDR", "bytes_per_second": 5e9}
    assert port["counters"]["port_xmit_data"] == 14933760
    assert port["capped"] == ["port_xmit_wait"]
    i40 = next(d for d in doc["devices"] if d["name"] == "i40iw0")
    assert i40["ports"][0]["counters"]["symbol_error"] is None
    assert {"path", "reason"} == set(doc["errors"][0])
    assert len(doc["errors"]) == 17


def test_a_missing_infiniband_class_means_no_devices(tmp_path):
    snap = read_host(str(tmp_path), host="empty", use_verbs=False)
    assert snap.devices == []
    assert snap.errors == []
