"""Covers collectors/model.py, collectors/snapshot.py, collectors/sysfs.py, collectors/verbs.py; through them
collectors/pcipath.py.

pyverbs reader: encodings, failures that cost only what failed, and the merge with sysfs.

The fake pyverbs (tests/fakes/pyverbs) stands in at the import boundary; the last
tests run the distribution's pyverbs on this machine and check the fake against it.
"""

from __future__ import annotations

import errno
import importlib
import os
import shutil
import sys
from pathlib import Path

import pytest

from collectors.model import ReadError, VerbsPort
from collectors.snapshot import merge_verbs, read_host, to_dict
from collectors.sysfs import SysfsReader
from collectors.verbs import device_from_attr, format_guid, port_from_attr, read_verbs
from tests.fixture_trees import PROCFS as PROCFS_SYS


@pytest.fixture
def sys_tree(tmp_path) -> Path:
    """A writable copy of the real procfs fixture tree (hfi1_0, mlx4_0 with two ports, mlx5_0)."""
    root = tmp_path / "sys"
    shutil.copytree(PROCFS_SYS, root, symlinks=True)
    return root


def _write(path: Path, text: str) -> None:
    path.write_text(text + "\n")


def _only_port(fabric, **values) -> VerbsPort:
    fabric.add_device("mlx5_0")
    fabric.set_port("mlx5_0", 1, **values)
    reading = read_verbs()
    assert reading.status == "used", reading
    return reading.ports[("mlx5_0", 1)]


# -- encodings --------------------------------------------------------------


@pytest.mark.parametrize(
    ("active_speed", "name"),
    [(1, "SDR"), (2, "DDR"), (4, "QDR"), (8, "FDR10"), (16, "FDR"), (32, "EDR"), (64, "HDR"), (128, "NDR")],
)
def test_it_names_every_active_speed_id(fake_pyverbs, active_speed, name):
    assert _only_port(fake_pyverbs, active_speed=active_speed).speed == name


@pytest.mark.parametrize(("active_width", "lanes"), [(1, 1), (2, 4), (4, 8), (8, 12), (16, 2)])
def test_it_reads_active_width_as_a_bitmask_of_lane_counts(fake_pyverbs, active_width, lanes):
    assert _only_port(fake_pyverbs, active_width=active_width).lanes == lanes


@pytest.mark.parametrize(("mtu", "size"), [(1, 256), (2, 512), (3, 1024), (4, 2048), (5, 4096)])
def test_it_turns_mtu_enums_into_bytes(fake_pyverbs, mtu, size):
    port = _only_port(fake_pyverbs, active_mtu=mtu, max_mtu=5)
    assert (port.active_mtu, port.max_mtu) == (size, 4096)


@pytest.mark.parametrize(("link_layer", "name"), [(0, None), (1, "InfiniBand"), (2, "Ethernet")])
def test_it_names_the_link_layer_and_makes_no_claim_for_unspecified(fake_pyverbs, link_layer, name):
    assert _only_port(fake_pyverbs, link_layer=link_layer).link_layer == name


def test_it_leaves_speed_and_width_unnamed_on_a_port_without_link(fake_pyverbs):
    port = _only_port(fake_pyverbs, state=1, phys_state=2, active_speed=0, active_width=0, lid=0)
    assert port == VerbsPort(
        state=1,
        phys_state=2,
        speed=None,
        lanes=None,
        active_mtu=4096,
        max_mtu=4096,
        link_layer="InfiniBand",
        lid=0,
        sm_lid=1,
    )


def test_it_reports_state_phys_state_and_lids_as_numbers(fake_pyverbs):
    port = _only_port(fake_pyverbs, state=2, phys_state=5, lid=0x1A, sm_lid=0x3)
    assert (port.state, port.phys_state, port.lid, port.sm_lid) == (2, 5, 0x1A, 0x3)


def test_it_reports_xdr_from_active_speed_ex(fake_pyverbs):
    fake_pyverbs.speed_ex = True  # rdma-core v49+
    # active_speed is 8 bits: an XDR port says NDR there.
    assert _only_port(fake_pyverbs, active_speed=128, active_speed_ex=256).speed == "XDR"


def test_it_uses_active_speed_when_active_speed_ex_is_zero(fake_pyverbs):
    fake_pyverbs.speed_ex = True
    assert _only_port(fake_pyverbs, active_speed=64, active_speed_ex=0).speed == "HDR"


def test_it_uses_active_speed_where_rdma_core_has_no_active_speed_ex(fake_pyverbs):
    fake_pyverbs.speed_ex = False  # rdma-core 44, as Debian 12 ships
    fake_pyverbs.add_device("mlx5_0")
    fake_pyverbs.set_port("mlx5_0", 1, active_speed=128, active_speed_ex=256)
    device = importlib.import_module("pyverbs.device")
    with device.Context(name="mlx5_0") as ctx:
        attr = ctx.query_port(1)
        assert not hasattr(attr, "active_speed_ex")
        assert port_from_attr(attr).speed == "NDR"


def test_it_reads_device_attributes_with_guids_as_sysfs_prints_them(fake_pyverbs):
    fake_pyverbs.add_device(
        "mlx5_0",
        ports=2,
        fw_ver="20.31.1014",
        node_guid="0002:c903:00a1:b2c0",
        sys_image_guid="0002:c903:00a1:b2c3",
        vendor_part_id=4123,
    )
    info = read_verbs().devices["mlx5_0"]
    assert info.fw_ver == "20.31.1014"
    assert (info.node_guid, info.sys_image_guid) == ("0002:c903:00a1:b2c0", "0002:c903:00a1:b2c3")
    assert (info.vendor_id, info.vendor_part_id, info.hw_ver, info.phys_port_cnt) == (0x02C9, 4123, 0, 2)


def test_it_formats_a_guid_from_its_network_order_bytes():
    raw = int.from_bytes(bytes.fromhex("0002c90300a1b2c0"), sys.byteorder)  # what pyverbs hands over
    assert format_guid(raw) == "0002:c903:00a1:b2c0"


def test_it_reads_every_port_of_every_device_and_closes_each_context(fake_pyverbs):
    fake_pyverbs.add_device("mlx5_0", ports=1)
    fake_pyverbs.add_device("mlx4_0", ports=2)
    reading = read_verbs()
    assert sorted(reading.ports) == [("mlx4_0", 1), ("mlx4_0", 2), ("mlx5_0", 1)]
    assert (reading.status, reading.errors) == ("used", [])
    assert fake_pyverbs.opened == 2
    assert fake_pyverbs.open_contexts() == []


# -- no pyverbs, no devices, failures -----------------------------------------


def test_without_pyverbs_the_snapshot_is_sysfs_alone_and_says_why(no_pyverbs, sys_tree):
    assert read_verbs().status == "not installed"
    snap = read_host(str(sys_tree), host="cn001")
    alone = read_host(str(sys_tree), host="cn001", use_verbs=False)
    assert snap.pyverbs == "not installed"
    assert to_dict(snap)["source"]["pyverbs"] == "not installed"
    assert snap.errors == alone.errors
    assert [d.name for d in snap.devices] == ["hfi1_0", "mlx4_0", "mlx5_0"]
    assert all(p.verbs is None and not p.disagreements for d in snap.devices for p in d.ports)


def test_a_host_without_rdma_support_is_no_devices_and_no_error(fake_pyverbs, sys_tree):
    fake_pyverbs.rdma_available = False  # get_device_list raises PyverbsRDMAError, as here
    reading = read_verbs()
    assert (reading.status, reading.errors, reading.ports) == ("no devices", [], {})
    snap = read_host(str(sys_tree), host="cn001")
    assert snap.pyverbs == "no devices"
    assert snap.errors == read_host(str(sys_tree), host="cn001", use_verbs=False).errors


def test_an_empty_device_list_is_no_devices(fake_pyverbs):
    assert read_verbs().status == "no devices"


def test_one_device_that_will_not_open_costs_only_that_device(fake_pyverbs):
    fake_pyverbs.add_device("mlx5_0")
    fake_pyverbs.add_device("mlx5_1", open_errno=errno.EACCES)
    reading = read_verbs()
    assert reading.status == "used"
    assert list(reading.ports) == [("mlx5_0", 1)]
    assert list(reading.devices) == ["mlx5_0"]
    assert reading.errors == [ReadError("pyverbs:mlx5_1", "Failed to open device mlx5_1. Errno: 13, Permission denied")]


def test_one_port_that_will_not_answer_costs_only_that_port(fake_pyverbs):
    fake_pyverbs.add_device("mlx4_0", ports=2)
    fake_pyverbs.set_port("mlx4_0", 1, query_errno=errno.EIO)
    reading = read_verbs()
    assert list(reading.ports) == [("mlx4_0", 2)]
    assert reading.errors == [
        ReadError("pyverbs:mlx4_0/ports/1", "Failed to query port 1. Errno: 5, Input/output error")
    ]


def test_a_device_whose_query_fails_costs_that_device(fake_pyverbs):
    fake_pyverbs.add_device("mlx5_0", query_device_errno=errno.EOPNOTSUPP)
    fake_pyverbs.add_device("mlx5_1")
    reading = read_verbs()
    assert list(reading.devices) == ["mlx5_1"]
    assert [e.path for e in reading.errors] == ["pyverbs:mlx5_0"]


def test_when_every_device_fails_the_status_says_so(fake_pyverbs):
    fake_pyverbs.add_device("mlx5_0", open_errno=errno.EPERM)
    reading = read_verbs()
    assert reading.status == "failed: Failed to open device mlx5_0. Errno: 1, Operation not permitted"


def test_verbs_failures_appear_in_the_snapshot_errors(fake_pyverbs, sys_tree):
    fake_pyverbs.add_device("mlx4_0", ports=2)
    fake_pyverbs.add_device("mlx5_0", open_errno=errno.EACCES)
    snap = read_host(str(sys_tree), host="cn001")
    assert snap.pyverbs == "used"
    assert {"path": "pyverbs:mlx5_0", "reason": "Failed to open device mlx5_0. Errno: 13, Permission denied"} in (
        to_dict(snap)["errors"]
    )


# -- merge with sysfs ------------------------------------------------------------


def _agreeing_fabric(fabric):
    """What verbs would say of the procfs fixture's mlx4_0 and mlx5_0."""
    fabric.add_device("mlx4_0", ports=2, fw_ver="2.31.5050")
    for n in (1, 2):
        fabric.set_port("mlx4_0", n, state=4, phys_state=5, active_speed=4, active_width=2, active_mtu=4, lid=n)
    fabric.add_device("mlx5_0", fw_ver="14.28.2006", node_guid="0a7f:bc12:45ef:d23b")
    # The fixture's mlx5_0 says phys_state "4: ACTIVE" and 1X EDR.
    fabric.set_port("mlx5_0", 1, state=4, phys_state=4, active_speed=32, active_width=1, lid=7)


def test_agreement_produces_no_disagreements_and_keeps_verbs_only_facts(fake_pyverbs, sys_tree):
    _agreeing_fabric(fake_pyverbs)
    for n in (1, 2):
        _write(sys_tree / f"class/infiniband/mlx4_0/ports/{n}/lid", f"0x{n:x}")
    _write(sys_tree / "class/infiniband/mlx5_0/ports/1/lid", "0x7")
    snap = to_dict(read_host(str(sys_tree), host="cn001"))
    assert snap["source"]["pyverbs"] == "used"
    devices = {d["name"]: d for d in snap["devices"]}
    for name in ("mlx4_0", "mlx5_0"):
        assert devices[name]["disagreements"] == []
        assert all(p["disagreements"] == [] for p in devices[name]["ports"])
    port = devices["mlx4_0"]["ports"][0]
    assert port["verbs"]["active_mtu"] == 2048 and port["verbs"]["max_mtu"] == 4096
    assert port["verbs"]["speed"] == "QDR" and port["verbs"]["lanes"] == 4
    assert devices["mlx5_0"]["verbs"]["node_guid"] == "0a7f:bc12:45ef:d23b"
    assert devices["mlx4_0"]["verbs"]["vendor_part_id"] == 4123
    # hfi1_0 is not a verbs device here: its sysfs view stands alone.
    assert devices["hfi1_0"]["verbs"] is None and devices["hfi1_0"]["ports"][0]["verbs"] is None


def test_it_records_each_disagreement_with_both_values(fake_pyverbs, sys_tree):
    _agreeing_fabric(fake_pyverbs)
    _write(sys_tree / "class/infiniband/mlx4_0/ports/1/lid", "0x1")
    _write(sys_tree / "class/infiniband/mlx4_0/ports/1/sm_lid", "0x1")
    # Verbs sees port 1 of mlx4_0 down on one lane at SDR, with another LID, SM and link layer.
    fake_pyverbs.set_port(
        "mlx4_0", 1, state=1, phys_state=2, active_speed=1, active_width=1, lid=9, sm_lid=2, link_layer=2
    )
    snap = read_host(str(sys_tree), host="cn001")
    mlx4 = next(d for d in snap.devices if d.name == "mlx4_0")
    found = {d.field: (d.sysfs, d.verbs) for d in mlx4.ports[0].disagreements}
    assert found == {
        "state": (4, 1),
        "phys_state": (5, 2),
        "speed": ("QDR", "SDR"),
        "lanes": (4, 1),
        "link_layer": ("InfiniBand", "Ethernet"),
        "lid": (1, 9),
        "sm_lid": (1, 2),
    }
    assert mlx4.ports[1].disagreements == []
    assert {"field": "lanes", "sysfs": 4, "verbs": 1} in to_dict(snap)["devices"][1]["ports"][0]["disagreements"]


def test_it_records_device_disagreements_but_not_firmware_padding(fake_pyverbs, sys_tree):
    _agreeing_fabric(fake_pyverbs)
    fake_pyverbs.devices["mlx4_0"].fw_ver = "2.31.5051"
    fake_pyverbs.devices["mlx5_0"].fw_ver = "14.28.02006"  # same numbers, other padding
    fake_pyverbs.devices["mlx5_0"].node_guid = "0a7f:bc12:45ef:d23c"
    snap = read_host(str(sys_tree), host="cn001")
    devs = {d.name: d for d in snap.devices}
    assert [(d.field, d.sysfs, d.verbs) for d in devs["mlx4_0"].disagreements] == [("fw_ver", "2.31.5050", "2.31.5051")]
    assert [(d.field, d.sysfs, d.verbs) for d in devs["mlx5_0"].disagreements] == [
        ("node_guid", "0a7f:bc12:45ef:d23b", "0a7f:bc12:45ef:d23c")
    ]


def test_a_fact_only_one_side_reports_is_not_a_disagreement(fake_pyverbs, sys_tree):
    _agreeing_fabric(fake_pyverbs)
    fake_pyverbs.set_port("mlx4_0", 1, link_layer=0, lid=77)  # unspecified link layer; sysfs has no lid file
    snap = read_host(str(sys_tree), host="cn001")
    mlx4 = next(d for d in snap.devices if d.name == "mlx4_0")
    assert mlx4.ports[0].disagreements == []
    assert mlx4.ports[0].verbs.lid == 77


def test_merge_attaches_only_to_ports_verbs_reported(sys_tree):
    reader = SysfsReader(str(sys_tree))
    devices = reader.devices()
    merge_verbs(devices, {("mlx4_0", 2): VerbsPort(state=4, speed="QDR", lanes=4)})
    mlx4 = next(d for d in devices if d.name == "mlx4_0")
    assert mlx4.ports[0].verbs is None
    assert mlx4.ports[1].verbs == VerbsPort(state=4, speed="QDR", lanes=4)
    assert mlx4.verbs is None and mlx4.ports[1].disagreements == []


# -- the distribution's pyverbs, on this machine ----------------------------------


def _host_has_rdma_devices() -> bool:
    try:
        return bool(os.listdir("/sys/class/infiniband"))
    except OSError:
        return False


def test_the_real_pyverbs_here_reports_what_the_host_has_and_sysfs_still_reads(real_pyverbs, sys_tree):
    reading = read_verbs(real_pyverbs)
    assert reading.status == ("used" if _host_has_rdma_devices() else "no devices")
    assert read_verbs().status == reading.status  # the same pyverbs through the lazy import
    snap = read_host(str(sys_tree), host="cn001")
    assert snap.pyverbs == reading.status
    assert [d.name for d in snap.devices] == ["hfi1_0", "mlx4_0", "mlx5_0"]
    if not _host_has_rdma_devices():
        assert snap.errors == read_host(str(sys_tree), host="cn001", use_verbs=False).errors
        assert all(p.verbs is None for d in snap.devices for p in d.ports)


def test_the_real_pyverbs_raises_rdma_errors_where_the_fake_does(real_pyverbs):
    if _host_has_rdma_devices():
        pytest.skip("this host has RDMA devices")
    device, errors = real_pyverbs
    with pytest.raises(errors.PyverbsRDMAError) as failed:
        device.get_device_list()
    assert isinstance(failed.value, errors.PyverbsError)
    assert (str(failed.value), failed.value.error_code) == ("Failed to get devices list", -1)
    with pytest.raises(errors.PyverbsRDMAError):
        device.Context(name="mlx5_0")
    with pytest.raises(errors.PyverbsUserError):
        device.Context()


def test_the_real_port_and_device_attributes_translate(real_pyverbs):
    # Zero-filled attribute objects, as pyverbs builds them before a query fills them.
    device, _ = real_pyverbs
    assert port_from_attr(device.PortAttr()) == VerbsPort(state=0, phys_state=0, lid=0, sm_lid=0)
    info = device_from_attr(device.DeviceAttr())
    assert (info.fw_ver, info.node_guid, info.phys_port_cnt) == ("", "0000:0000:0000:0000", 0)


@pytest.fixture
def real_enums(real_pyverbs):
    """The real pyverbs.enums, imported before a fake_pyverbs fixture takes sys.modules."""
    return importlib.import_module("pyverbs.enums")


def test_the_fake_has_the_real_names_types_and_numbers(real_pyverbs, real_enums, fake_pyverbs):
    real_device, real_errors = real_pyverbs
    fake_device = importlib.import_module("pyverbs.device")
    fake_errors = importlib.import_module("pyverbs.pyverbs_error")
    fake_enums = importlib.import_module("pyverbs.enums")
    assert Path(fake_device.__file__).parent.parent.name == "fakes"

    def public(cls):
        return {n for n in dir(cls) if not n.startswith("_")}

    for name in ("Context", "DeviceAttr", "PortAttr", "AsyncEvent", "Device"):
        assert public(getattr(fake_device, name)) <= public(getattr(real_device, name)), name
    assert set(fake_device.__all__) <= public(real_device)
    for name in ("PyverbsError", "PyverbsRDMAError", "PyverbsUserError"):
        real_mro = [c.__name__ for c in getattr(real_errors, name).__mro__]
        assert [c.__name__ for c in getattr(fake_errors, name).__mro__] == real_mro
    for member in (*fake_enums.ibv_event_type, *fake_enums.ibv_port_state, *fake_enums.ibv_mtu):
        assert int(getattr(real_enums, member.name)) == int(member), member.name
    for name in ("IBV_LINK_LAYER_UNSPECIFIED", "IBV_LINK_LAYER_INFINIBAND", "IBV_LINK_LAYER_ETHERNET"):
        assert getattr(real_enums, name) == getattr(fake_enums, name), name
    # Attributes come back as plain ints in both.
    assert type(real_device.AsyncEvent().event_type) is type(fake_device.AsyncEvent(9).event_type) is int
    assert type(real_device.PortAttr().active_width) is int
