"""`simulate --fabric`: the switch fabric as ibsim's net file, coherent with the host trees (no ibsim run here)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from collectors import read_host
from collectors.sim import Fabric


@pytest.fixture
def tmp(tmp_path):
    if not os.access("/dev/shm", os.W_OK):
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir="/dev/shm", prefix="fabricweb-simfab-") as d:
        yield Path(d)


def host_ports(fabric):
    """(port key, Port) of every port the reader finds under the trees."""
    out = {}
    for node in fabric.layout.nodes:
        snap = read_host(os.path.join(fabric.out, node.name), host=node.name, use_verbs=False)
        assert snap.errors == []
        for dev in snap.devices:
            for p in dev.ports:
                out[f"{node.name}/{dev.name}/{p.number}"] = (dev, p)
    return out


def test_every_port_has_a_gid_whose_port_guid_is_unique_without_fabric_mode(tmp):
    fabric = Fabric.create(str(tmp / "sim"), 30, ports=2, seed=4)
    ports = host_ports(fabric)
    guids = [p.port_guid for _, p in ports.values()]
    assert None not in guids and len(set(guids)) == len(guids)
    for dev, p in ports.values():
        if p.link_layer == "InfiniBand":  # the node GUID + the port number, as ibsim gives a CA's ports
            assert int(p.port_guid, 16) == int(dev.node_guid.replace(":", ""), 16) + p.number
        else:  # RoCE: the link-local address of the port's MAC (modified EUI-64)
            assert p.port_guid[8:12] == "fffe"
