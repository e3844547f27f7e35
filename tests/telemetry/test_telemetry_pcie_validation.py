"""Covers fabricweb/telemetry/validation/pcie.py, fabricweb/telemetry/validation/quickparse.py,
fabricweb/telemetry/validation/schema.py; through them fabricweb/telemetry/validation/typed.py.

Snapshot schema 2's PCIe tree: a device's `pcie_path` and the host's `gpus` are checked strictly,
the same way by the quick path and the worded checks; a malformed one refuses the snapshot, naming where."""

from __future__ import annotations

import copy
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricweb.telemetry.validation import pcie
from fabricweb.telemetry.validation.quickparse import parse_common
from fabricweb.telemetry.validation.schema import SnapshotRejected, parse_snapshot, parse_worded
from tests.pcie_trees import DGX_A100_MATRIX, DGX_A100_NICS
from tests.telemetry.pcie_support import UPLINK, Dgx, device, hop
from tests.telemetry.telemetry_support import JSONISH, _apply, _paths

NOW = datetime(2026, 3, 1, 12, 5, tzinfo=UTC)


@pytest.fixture(scope="module")
def dgx(tmp_path_factory) -> dict:
    return Dgx(str(tmp_path_factory.mktemp("dgx") / "sys")).read()


def both(snap: dict):
    """(quick path, worded checks) of a copy each: the worded one a SnapshotRejected when refused."""
    quick = parse_common(copy.deepcopy(snap), NOW)
    try:
        worded = parse_worded(copy.deepcopy(snap), NOW)
    except SnapshotRejected as e:
        worded = e
    return quick, worded


def test_a_dgx_snapshot_passes_both_ways_with_its_tree_as_the_agent_sent_it(dgx):
    assert dgx["schema"] == 2
    quick, worded = both(dgx)
    assert quick is not None and repr(quick) == repr(worded)  # the same values of the same types
    paths = {d.name: d.attrs["pcie_path"] for d in worded.devices}
    assert paths == {d["name"]: d.get("pcie_path") for d in dgx["devices"]}
    assert [h["kind"] for h in paths["mlx5_0"]["hops"]] == ["switch port"] * 4 + ["root port"]
    assert worded.gpus == dgx["gpus"]
    assert [[g["nics"][n] for n in DGX_A100_NICS] for g in worded.gpus] == DGX_A100_MATRIX


def test_a_schema_1_snapshot_is_read_with_its_pcie_tree_unknown(dgx):
    old = copy.deepcopy(dgx)
    old["schema"] = 1  # an agent from before schema 2; the keys, were they sent, are not read
    device(old, "mlx5_0")["pcie_path"]["hops"][0]["address"] = "not an address"
    for parse in (parse_snapshot, parse_worded, parse_common):
        parsed = parse(copy.deepcopy(old), NOW)
        assert parsed.gpus is None and {d.attrs["pcie_path"] for d in parsed.devices} == {None}


def test_a_schema_2_snapshot_without_gpus_stores_none_found(dgx):
    snap = copy.deepcopy(dgx)
    del snap["gpus"]  # what the agent sends where it found no GPU
    quick, worded = both(snap)
    assert quick.gpus == worded.gpus == []


def test_an_unknown_schema_is_refused_with_the_ones_this_server_reads(dgx):
    snap = {**dgx, "schema": 3}
    with pytest.raises(SnapshotRejected) as err:
        parse_snapshot(snap, NOW)
    assert str(err.value) == "snapshot from dgx01 rejected: unknown schema version 3 (this server reads 1, 2)"


def test_an_integer_speed_is_taken_as_gt_s_both_ways(dgx):
    snap = copy.deepcopy(dgx)
    hop(device(snap, "mlx5_0")["pcie_path"])["current_gts"] = 16
    quick, worded = both(snap)
    assert repr(quick) == repr(worded)
    assert hop(next(d for d in worded.devices if d.name == "mlx5_0").attrs["pcie_path"])["current_gts"] == 16.0


def _hops(snap):
    return device(snap, "mlx5_0")["pcie_path"]["hops"]


def _set_hop(key, value):
    def mutate(snap):
        hop(device(snap, "mlx5_0")["pcie_path"])[key] = value

    return mutate


def _seventeen_hops(snap):
    hops = _hops(snap)
    extra = [{**hops[0], "address": f"0000:{0xD0 + i:02x}:00.0"} for i in range(12)]
    hops[:-1] = hops[:-1] + extra
    assert len(hops) == 17


def _dev(key, value):
    def mutate(snap):
        device(snap, "mlx5_0")[key] = value

    return mutate


def _top(key, value):
    def mutate(snap):
        snap[key] = value

    return mutate


def _path(key, value):
    def mutate(snap):
        device(snap, "mlx5_0")["pcie_path"][key] = value

    return mutate


def _gpu0(key, value):
    def mutate(snap):
        snap["gpus"][0][key] = value

    return mutate


def _relation(name, value):
    def mutate(snap):
        snap["gpus"][0]["nics"][name] = value

    return mutate


def _neighbour(key, value):
    def mutate(snap):
        device(snap, "mlx5_0")["pcie_path"]["neighbours"][0][key] = value

    return mutate


def _root_port_first(snap):
    hops = _hops(snap)
    hops[0], hops[-1] = hops[-1], hops[0]


def _hop_twice(snap):
    hops = _hops(snap)
    hops.insert(1, copy.deepcopy(hops[0]))


W = "device mlx5_0.pcie_path"
H = f"{W}.hops[3]"  # the uplink
LANES = "expected null or a number of lanes from 0 to 64"
ADDRESS = "expected a PCI address such as 0000:40:01.1"
KINDS = "expected one of switch port, root port, bridge (a root port last)"
RELATION = "expected one of PIX, PXB, PHB, NODE, SYS"
CASES = [
    ("bad address", _set_hop("address", "0000:01:00.9"), f"{H}.address: {ADDRESS}, got '0000:01:00.9'"),
    ("address as a number", _set_hop("address", 1), f"{H}.address: {ADDRESS}, got 1"),
    ("17 hops", _seventeen_hops, f"{W}.hops: 17 bridges, expected 1 to 16"),
    ("no hops", _path("hops", []), f"{W}.hops: 0 bridges, expected 1 to 16"),
    ("hops as an object", _path("hops", {}), f"{W}.hops: expected a list of bridges, got {{}}"),
    ("path as a list", _dev("pcie_path", []), f"{W}: expected an object or null, got []"),
    ("width as text", _set_hop("current_width", "x8"), f"{H}.current_width: {LANES}, got 'x8'"),
    ("width as true", _set_hop("max_width", True), f"{H}.max_width: {LANES}, got True"),
    ("width past 64", _set_hop("current_width", 65), f"{H}.current_width: {LANES}, got 65"),
    ("speed NaN", _set_hop("current_gts", float("nan")), f"{H}.current_gts: expected null or a number of GT/s"),
    ("speed as text", _set_hop("max_gts", "16.0 GT/s"), "from 0 to 1024, got '16.0 GT/s'"),
    ("vendor past 16 bits", _set_hop("vendor", 0x10000), f"{H}.vendor: expected null or an integer from 0 to 65535"),
    ("negative NUMA node", _set_hop("numa_node", -1), f"{H}.numa_node: expected null or an integer from 0 to 4095"),
    ("cpulist not CPUs", _set_hop("local_cpulist", "0-15; rm"), f"{H}.local_cpulist: expected null or a CPU list"),
    ("cpulist too long", _set_hop("local_cpulist", "1," * 2049), "(at most 4096)"),
    ("unknown hop kind", _set_hop("kind", "function"), f"{H}.kind: {KINDS}, got 'function'"),
    ("root port not last", _root_port_first, f"{W}.hops[0].kind: {KINDS}, got 'root port'"),
    ("a bridge twice", _hop_twice, f"{W}.hops: a bridge appears twice"),
    ("bad host bridge", _path("host_bridge", "../x"), f"{W}.host_bridge: expected null or a host bridge such as"),
    ("neighbours as text", _path("neighbours", "x"), f"{W}.neighbours: expected null or a list of at most 64"),
    ("65 neighbours", _path("neighbours", [None] * 65), f"{W}.neighbours: expected null or a list of at most 64"),
    ("via off the path", _neighbour("via", "0000:99:00.0"), f"{W}.neighbours[0].via: expected the address of one"),
    ("neighbour of another kind", _neighbour("kind", "nvswitch"), f"{W}.neighbours[0].kind: expected gpu or rdma"),
    ("a GPU neighbour with a name", _neighbour("name", "mlx5_1"), f"{W}.neighbours[0].name: expected null for a GPU"),
    ("unknown relation", _relation("mlx5_0", "NV12"), f"gpus[0].nics['mlx5_0']: {RELATION}, got 'NV12'"),
    ("relation in lower case", _relation("mlx5_0", "pxb"), f"gpus[0].nics['mlx5_0']: {RELATION}, got 'pxb'"),
    ("relation to no device", _relation("mlx5_99", "SYS"), "gpus[0].nics names 'mlx5_99', which is not a device of"),
    ("nics as a list", _gpu0("nics", ["mlx5_0"]), "gpus[0].nics: expected an object of at most 64 devices, got"),
    ("GPU address with a NUL", _gpu0("address", "0000:07:00.0\x00"), f"gpus[0].address: {ADDRESS}"),
    ("GPUs as an object", _top("gpus", {}), "gpus: expected null or a list of at most 64 GPUs, got {}"),
    ("65 GPUs", lambda s: s.__setitem__("gpus", [s["gpus"][0]] * 65), "gpus: expected null or a list of at most 64"),
    ("a GPU twice", lambda s: s["gpus"].append(copy.deepcopy(s["gpus"][0])), "gpus: a GPU appears twice"),
]


@pytest.mark.parametrize(("mutate", "reason"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_pcie_tree_refuses_the_snapshot_naming_where(dgx, mutate, reason):
    snap = copy.deepcopy(dgx)
    mutate(snap)
    quick, worded = both(snap)
    assert quick is None  # the quick path leaves it to the worded checks
    assert isinstance(worded, SnapshotRejected) and worded.host == "dgx01"
    assert reason in worded.reason
    with pytest.raises(SnapshotRejected) as err:
        parse_snapshot(snap, NOW)
    assert err.value.reason == worded.reason


def test_the_path_stored_is_rebuilt_from_the_contract_s_keys(dgx):
    snap = copy.deepcopy(dgx)
    path = device(snap, "mlx5_0")["pcie_path"]
    path["extra"] = "x" * 10_000
    hop(path)["note"] = {"deep": [1, 2, 3]}
    snap["gpus"][0]["temperature"] = 71
    quick, worded = both(snap)
    assert repr(quick) == repr(worded)
    stored = next(d for d in worded.devices if d.name == "mlx5_0").attrs["pcie_path"]
    assert stored == device(dgx, "mlx5_0")["pcie_path"] and worded.gpus == dgx["gpus"]


# -- random trees: the same verdict and values through both --------------------------------------

NEAR = st.sampled_from(
    [UPLINK, "0000:07:00.0", "0000:41:00.8", "000:41:00.0", "pci0000:40", "PIX", "SYS", "pix", "root port",
     "switch port", "bridge", "gpu", "rdma", "mlx5_0", "mlx5_99", 16, 16.0, 8, 64, 65, 0xFFFF, 0x10000, 4095,
     "0-15", "0-15 ", -1, 1024.5, True]
)  # fmt: skip
VALUES = st.one_of(NEAR, JSONISH)


def _tree_paths(snap):
    for i, d in enumerate(snap["devices"]):
        if "pcie_path" in d:
            yield from _paths(d["pcie_path"], ("devices", i, "pcie_path"))
    yield from _paths(snap["gpus"], ("gpus",))


@given(data=st.data())
def test_random_trees_get_the_same_verdict_and_values_both_ways(dgx, data):
    snap = copy.deepcopy(dgx)
    paths = sorted(_tree_paths(snap), key=repr)
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        path = data.draw(st.sampled_from(paths))
        _apply(snap, path, data.draw(st.sampled_from(["set", "delete", "rename"])), data.draw(VALUES))
    quick, worded = both(snap)
    if quick is not None:
        assert not isinstance(worded, SnapshotRejected), worded
        assert repr(quick) == repr(worded)


# Each check's common case (one expression) against its field-by-field form, on near-valid functions.
FUNCTION_KEYS = ("address", "class_code", "vendor", "device", "current_gts", "current_width", "max_gts",
                 "max_width", "numa_node", "local_cpulist", "kind", "name", "via")  # fmt: skip


def _verdict(check, *args):
    try:
        return repr(check(*args))
    except SnapshotRejected as e:
        return type(e)


@given(data=st.data())
def test_each_quick_check_agrees_with_its_worded_form(dgx, data):
    path = device(dgx, "mlx5_0")["pcie_path"]
    on_path = {h["address"] for h in path["hops"]}
    value = copy.deepcopy(data.draw(st.sampled_from([path["hops"][3], path["neighbours"][0], path["neighbours"][2]])))
    for _ in range(data.draw(st.integers(min_value=1, max_value=3))):
        _apply(
            value,
            (data.draw(st.sampled_from(FUNCTION_KEYS)),),
            data.draw(st.sampled_from(["set", "delete"])),
            data.draw(VALUES),
        )
    assert _verdict(pcie._function, value, "x", 0) == _verdict(pcie._function_worded, value, "x[0]")
    assert _verdict(pcie._neighbour, value, "x", 0, on_path) == _verdict(pcie._neighbour_worded, value, "x", on_path)


EDGES = [None, True, False, -1, 0, 1, 8, 16, 64, 65, 1024, 1025, 4095, 4096, 0xFFFF, 0x10000, 16.0, 64.0, 1024.0,
         1024.5, -0.0, float("nan"), float("inf"), "", "16", "0-15,64-79", "0-15\n", "x" * 4097, "0" * 4097,
         [], {}, "gpu", "rdma", "root port", "mlx5_0", "mlx5 0", "0000:01:00.0", UPLINK + "\x00"]  # fmt: skip


def test_each_quick_check_agrees_with_its_worded_form_at_every_edge_of_every_field(dgx):
    path = device(dgx, "mlx5_0")["pcie_path"]
    on_path = {h["address"] for h in path["hops"]}
    for base in (path["hops"][3], path["neighbours"][0], path["neighbours"][2], dgx["gpus"][0]):
        for key in FUNCTION_KEYS:
            for value in EDGES:
                changed = {**base, key: value}
                assert _verdict(pcie._function, changed, "x", 0) == _verdict(pcie._function_worded, changed, "x[0]")
                fast = _verdict(pcie._neighbour, changed, "x", 0, on_path)
                assert fast == _verdict(pcie._neighbour_worded, changed, "x", on_path), (key, value)
