"""Covers collectors/link.py, collectors/sysparse.py.

Bad input costs exactly the bad value: every other value of the device and host is still reported."""

from __future__ import annotations

import shutil

import pytest

from collectors import read_host
from collectors.link import Rate
from tests.collectors.sysfs_fixtures import FIXTURES


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "sys"
    shutil.copytree(FIXTURES / "procfs" / "sys", root)
    for f in root.rglob("*"):  # the shared copy is read-only
        f.chmod(0o755 if f.is_dir() else 0o644)
    return root


def port_dir(root, dev="mlx4_0", port=1):
    return root / "class" / "infiniband" / dev / "ports" / str(port)


def clean(root):
    return read_host(str(root), host="cn001", use_verbs=False)


@pytest.mark.parametrize(
    ("relpath", "content", "reason"),
    [
        ("counters/symbol_error", "garbage\n", "not a decimal number"),
        ("counters/symbol_error", "", "empty file"),
        ("counters/symbol_error", "-1\n", "not a decimal number"),
        ("counters/symbol_error", "1_000\n", "not a decimal number"),
        ("counters/port_xmit_data", "N/A (no PMA)\n", "N/A (no PMA)"),
        ("rate", "fast\n", "unrecognised rate"),
        ("rate", "100 Gb/sec (4X WARP)\n", "unknown speed"),
        ("state", "ACTIVE\n", "expected '<id>: <name>'"),
        ("phys_state", "\xff\xfe\n", "expected '<id>: <name>'"),
    ],
)
def test_one_bad_file_costs_only_its_value(tree, relpath, content, reason):
    before = clean(tree)
    target = port_dir(tree) / relpath
    target.write_bytes(content.encode("latin-1"))
    after = clean(tree)

    assert [(e.path, reason in e.reason) for e in after.errors] == [(str(target), True)]
    p_before, p_after = before.devices[1].ports[0], after.devices[1].ports[0]
    name = relpath.split("/")[-1]
    if relpath.startswith("counters/"):
        assert p_after.counters[name] is None
        p_after.counters[name] = p_before.counters[name]
    else:
        assert getattr(p_after, name) is None
        setattr(p_after, name, getattr(p_before, name))
    assert after.devices == before.devices


def test_a_directory_where_a_file_should_be_is_reported(tree):
    target = port_dir(tree) / "counters" / "symbol_error"
    target.unlink()
    target.mkdir()
    snap = clean(tree)
    assert snap.devices[1].ports[0].counters["symbol_error"] is None
    assert [(e.path, e.reason) for e in snap.errors] == [(str(target), "a directory where a file should be")]
    assert snap.devices[1].ports[0].counters["port_xmit_wait"] == 3599


def test_a_missing_counters_directory_means_no_counters_not_an_error(tree):
    shutil.rmtree(port_dir(tree, "hfi1_0") / "counters")
    snap = clean(tree)
    assert snap.devices[0].ports[0].counters == {}
    assert snap.devices[0].ports[0].rate == Rate(100.0, 4, "EDR")
    assert snap.errors == []


def test_a_file_where_the_ports_directory_should_be_is_reported(tree):
    ports = tree / "class" / "infiniband" / "hfi1_0" / "ports"
    shutil.rmtree(ports)
    ports.write_text("1\n")
    snap = clean(tree)
    assert snap.devices[0].ports == []
    assert [e.reason for e in snap.errors] == ["a file where a directory should be"]
    assert len(snap.devices[1].ports) == 2


def test_a_port_directory_that_is_not_a_number_is_reported(tree):
    (tree / "class" / "infiniband" / "hfi1_0" / "ports" / "bogus").mkdir()
    snap = clean(tree)
    assert [p.number for p in snap.devices[0].ports] == [1]
    assert snap.errors[0].reason == "not a port number"


def test_a_huge_node_desc_is_read_only_up_to_a_page(tree):
    (tree / "class" / "infiniband" / "mlx5_0" / "node_desc").write_text("x" * 100_000)
    snap = clean(tree)
    assert snap.devices[2].node_desc == "x" * 4096


def test_a_writers_temp_files_are_not_counters(tree):
    (port_dir(tree) / "counters" / ".symbol_error.tmp").write_text("7\n")
    snap = clean(tree)
    assert ".symbol_error.tmp" not in snap.devices[1].ports[0].counters
    assert snap.errors == []


def test_a_dangling_device_link_is_reported_not_a_ghost_device(tree):
    (tree / "class" / "infiniband" / "mlx9_0").symlink_to("../../devices/gone/mlx9_0")
    snap = clean(tree)
    assert [d.name for d in snap.devices] == ["hfi1_0", "mlx4_0", "mlx5_0"]
    assert [e.reason for e in snap.errors] == ["device link points nowhere (device removed while being read?)"]
