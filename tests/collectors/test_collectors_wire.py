"""Covers collectors/wire.py, collectors/__main__.py, collectors/snapshot.py; through them collectors/mads/routes.py,
collectors/mads/umad.py, collectors/simulate.py.

The snapshot's wire form (collectors/wire.py): what an agent sends reads back into exactly the snapshot it
encodes, smaller, and a wire snapshot that cannot be read back is refused with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors import read_host, to_dict, wire
from collectors.sim import Fabric
from tests.fixture_trees import PROCFS, snapshot

REPO = Path(__file__).resolve().parents[2]


def round_trip(snap: dict) -> dict:
    return wire.decode(json.loads(json.dumps(wire.encode(snap, "fabricweb (tests)"))))


def test_it_reads_back_the_fixture_hosts_snapshot_exactly():
    snap = snapshot()
    assert round_trip(snap) == snap
    assert list(round_trip(snap)["devices"][0]["ports"][0]) == list(snap["devices"][0]["ports"][0])  # key order too


def test_a_gpu_servers_gpus_and_pcie_paths_are_as_asdict_gives_them_and_share_nothing(tmp_path):
    Fabric.create(str(tmp_path), 1, seed=3, hcas=8, layout_faults=("cn001:dgx",))
    read = read_host(str(tmp_path / "cn001"), host="cn001", use_verbs=False)
    snap = to_dict(read)
    assert snap["gpus"] == [asdict(g) for g in read.gpus] and all(g["nics"] for g in snap["gpus"])
    paths = [(d, s) for d, s in zip(read.devices, snap["devices"], strict=True) if "pcie_path" in s]
    assert paths
    for device, sent in paths:
        assert sent["pcie_path"]["hops"] == [asdict(h) for h in device.pcie_path.hops[1:]]
        assert sent["pcie_path"]["neighbours"] == [asdict(n) for n in device.pcie_path.neighbours]
    snap["gpus"][0]["nics"].clear()  # what is sent is a copy: the reading stays whole
    assert read.gpus[0].nics


def test_a_gpu_server_of_8_hcas_reads_back_exactly_and_sends_each_counter_name_once(tmp_path):
    Fabric.create(str(tmp_path), 1, seed=3, hcas=8, layout_faults=("cn001:dgx",))
    snap = to_dict(read_host(str(tmp_path / "cn001"), host="cn001", use_verbs=False))
    assert len(snap["devices"]) == 8 and snap["gpus"]
    encoded = wire.encode(snap, "fabricweb (tests)")
    assert round_trip(snap) == snap
    text = json.dumps(encoded)
    assert text.count("port_rcv_data,") == 1 and json.dumps(snap).count('"port_rcv_data"') == 8
    assert len(text) < 0.7 * len(json.dumps(snap))


def test_a_port_link_as_the_kernel_prints_it_goes_short_and_reads_back_as_schema_2():
    snap = snapshot()
    port = snap["devices"][0]["ports"][0]
    assert (port["state"], port["phys_state"]) == ({"id": 4, "name": "ACTIVE"}, {"id": 5, "name": "LinkUp"})
    encoded = json.loads(json.dumps(wire.encode(snap, "fabricweb (tests)")))
    link = encoded["devices"][0]["ports"][0]["link"]
    assert link[:2] == [4, 5] and link[3] == [port["rate"]["speed"], port["rate"]["lanes"]]
    assert isinstance(encoded["names"]["counters"], str) and "symbol_error" in encoded["names"]["counters"].split(",")
    assert wire.decode(encoded) == snap


def test_a_link_the_tables_do_not_give_goes_as_schema_2_has_it():
    snap = snapshot()
    port = snap["devices"][0]["ports"][0]
    port["state"] = {"id": 4, "name": "ACTIVE_ODD"}  # a name the kernel's table does not give that id
    port["phys_state"] = {"id": 42, "name": None}  # an id it does not know, with no name
    port["rate"] = {"gbps": 199.0, "lanes": 4, "speed": "HDR", "bytes_per_second": 199e9 / 8}  # not 4X HDR's 200
    encoded = json.loads(json.dumps(wire.encode(snap, "fabricweb (tests)")))
    link = encoded["devices"][0]["ports"][0]["link"]
    assert link[0] == port["state"] and link[1] == port["phys_state"] and link[3] == port["rate"]
    assert wire.decode(encoded) == snap


@pytest.mark.parametrize("name", ["ethtool.rx_a,b", ""])
def test_names_holding_a_comma_or_empty_go_as_a_list(name):
    snap = snapshot()
    for device in snap["devices"]:
        for port in device["ports"]:
            port["hw_counters"] = {name: 1}
    encoded = json.loads(json.dumps(wire.encode(snap, "fabricweb (tests)")))
    assert encoded["names"]["hw_counters"] == [name] and isinstance(encoded["names"]["counters"], str)
    assert wire.decode(encoded) == snap


def test_a_rate_whose_width_is_a_bool_goes_as_schema_2_has_it_and_leaves_the_int_alone():
    snap = snapshot()
    port = snap["devices"][0]["ports"][0]
    port["rate"] = {**wire.rate_of("HDR", 1), "lanes": True}  # equal to 1X HDR's, but not of its types
    encoded = json.loads(json.dumps(wire.encode(snap, "fabricweb (tests)")))
    assert encoded["devices"][0]["ports"][0]["link"][3] == port["rate"]
    assert wire.decode(encoded) == snap and type(wire.rate_of("HDR", 1)["lanes"]) is int


def test_a_wire_2_snapshot_from_an_agent_before_wire_3_reads_back_the_same():
    snap = snapshot()
    encoded = json.loads(json.dumps(wire.encode(snap, "fabricweb 0.1.0 (wire 2)")))
    older = {
        **encoded,
        "wire": 2,
        "names": {kind: names.split(",") if names else [] for kind, names in encoded["names"].items()},
    }
    for device, sent_device in zip(older["devices"], snap["devices"], strict=True):
        for port, sent in zip(device["ports"], sent_device["ports"], strict=True):
            port["link"] = [sent[field] for field in wire.PORT_LINK_FIELDS]  # as schema 2 has it
    assert isinstance(older["devices"][0]["ports"][0]["link"][0], dict)
    assert wire.decode(older) == snap


def test_a_set_no_port_has_and_a_devices_empty_hw_counters_are_not_sent_and_read_back_empty():
    snap = snapshot()
    for device in snap["devices"]:
        device["hw_counters"] = {}
        for port in device["ports"]:
            port["counters_ext"] = {}  # as on every kernel since 4.5
    snap["devices"][0]["hw_counters"] = {"lifespan": 10}
    encoded = json.loads(json.dumps(wire.encode(snap, "fabricweb (tests)")))
    assert encoded["names"]["counters_ext"] == ""
    assert all("counters_ext" not in port and "counters" in port for d in encoded["devices"] for port in d["ports"])
    assert "hw_counters" in encoded["devices"][0] and all("hw_counters" not in d for d in encoded["devices"][1:])
    assert round_trip(snap) == snap
    older = json.loads(json.dumps(encoded))  # what this wire sent before: the empty sets given
    for device in older["devices"]:
        device.setdefault("hw_counters", {})
        for port in device["ports"]:
            port["counters_ext"] = []
    assert wire.decode(older) == snap
    del encoded["devices"][0]["ports"][0]["counters"]  # a set that has names is never left out
    with pytest.raises(wire.WireError, match=r"devices\[0\]\.ports\[0\]\.counters: expected"):
        wire.decode(encoded)


def test_a_port_that_lacks_a_counter_file_reads_back_without_it():
    snap = snapshot()
    ports = [p for d in snap["devices"] for p in d["ports"]]
    assert len(ports) >= 2
    del ports[0]["counters"]["symbol_error"]
    ports[1]["hw_counters"] = {"out_of_buffer": None}  # unreadable: null, not absent
    encoded = wire.encode(snap, "fabricweb (tests)")
    assert "absent" in encoded["devices"][0]["ports"][0]
    assert round_trip(snap) == snap


def with_ports(ports: list[dict]) -> dict:
    """The fixture's snapshot, its first device's ports its first port with each of `ports`' fields instead."""
    snap = snapshot()
    template = snap["devices"][0]["ports"][0]
    snap["devices"][0]["ports"] = [{**template, "port": i + 1, **fields} for i, fields in enumerate(ports)]
    return snap


counter_maps = st.dictionaries(
    st.sampled_from(["symbol_error", "port_rcv_data", "port_xmit_wait", "link_downed", "rx_write_requests"]),
    st.one_of(st.none(), st.integers(0, 2**64 - 1)),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(counter_maps, counter_maps, counter_maps), min_size=1, max_size=6))
def test_any_mix_of_counters_ports_and_unreadable_values_reads_back_exactly(port_counters):
    snap = with_ports([{"counters": c, "counters_ext": x, "hw_counters": h} for c, x, h in port_counters])
    assert round_trip(snap) == snap


states = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "id": st.one_of(st.integers(-1, 9), st.booleans()),
            "name": st.sampled_from([None, "ACTIVE", "LinkUp", "DOWN"]),
        }
    ),
)
rates = st.one_of(
    st.none(),
    st.builds(
        lambda speed, lanes, gbps: {"gbps": gbps, "lanes": lanes, "speed": speed, "bytes_per_second": gbps * 1e9 / 8},
        st.sampled_from([None, "HDR", "NDR", "FDR10", "ZDR"]),
        st.one_of(st.none(), st.booleans(), st.sampled_from([1, 2, 3, 4, 12])),
        st.sampled_from([0.0, 10.0, 50.0, 200.0, 400.0]),
    ),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(states, states, rates), min_size=1, max_size=4))
def test_any_link_reads_back_exactly_whether_it_goes_short_or_not(links):
    snap = with_ports([{"state": state, "phys_state": phys, "rate": rate} for state, phys, rate in links])
    assert json.dumps(round_trip(snap), sort_keys=True) == json.dumps(snap, sort_keys=True)  # (true is not 1 here)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda w: w.update(wire=1), "wire 1, not 2 or 3"),
        (lambda w: w.update(names=[]), "names: expected an object of counter names"),
        (lambda w: w["names"].update(counters=["a", "a"]), "names.counters: a name given twice"),
        (lambda w: w["names"].update(counters="a,b,a"), "names.counters: a name given twice"),
        (lambda w: w["names"].update(counters=["x"] * 600), "names.counters: expected a list of at most 512 names"),
        (lambda w: w["names"].update(counters=",".join(["x"] * 600)), "names.counters: expected a list of at most"),
        (lambda w: w["names"].update(counters="x" * 200_000), "names.counters: more than 131072 characters"),
        (lambda w: w["devices"][0]["ports"][0]["link"].__setitem__(0, 9), "link[0]: a state given by its id"),
        (lambda w: w["devices"][0]["ports"][0]["link"].__setitem__(1, 99), "link[1]: a state given by its id"),
        (lambda w: w["devices"][0]["ports"][0]["link"].__setitem__(3, ["HDR", 3]), "link[3]: a rate as"),
        (lambda w: w["devices"][0]["ports"][0]["link"].__setitem__(3, ["ZDR", 4]), "link[3]: a rate as"),
        (lambda w: w["devices"][0]["ports"][0]["link"].__setitem__(3, ["HDR"]), "link[3]: a rate as"),
        (lambda w: w.update(devices=[{}] * 65), "devices: expected a list of at most 64"),
        (lambda w: w["devices"][0]["ports"][0]["counters"].pop(), "devices[0].ports[0].counters: expected"),
        (lambda w: w["devices"][0]["ports"][0].update(link=[1]), "devices[0].ports[0].link: expected 13 values"),
        (
            lambda w: w["devices"][0]["ports"][0].update(absent={"counters": [10_000]}),
            "devices[0].ports[0].absent.counters: expected indexes into names.counters",
        ),
        (lambda w: w["devices"][0].update(ports="1"), "devices[0].ports: expected a list of at most 128"),
    ],
)
def test_a_wire_snapshot_that_cannot_be_read_back_is_refused_with_the_reason(change, reason):
    encoded = json.loads(json.dumps(wire.encode(snapshot(), "fabricweb (tests)")))
    change(encoded)
    with pytest.raises(wire.WireError, match=reason.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")):
        wire.decode(encoded)


def test_the_command_prints_the_wire_form_of_the_same_reading_as_its_json():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outputs = {}
    for form in ("json", "wire"):
        run = subprocess.run(
            [sys.executable, "-m", "collectors", "snapshot", "--sysfs-root", str(PROCFS), "--host", "cn001",
             "--format", form],
            capture_output=True, text=True, env=env, cwd=REPO, check=True,
        )  # fmt: skip
        outputs[form] = json.loads(run.stdout)
    assert outputs["wire"]["wire"] == 3 and outputs["wire"]["agent"].startswith("fabricweb ")
    decoded = wire.decode(outputs["wire"])
    for form in (decoded, outputs["json"]):
        form.pop("collected_at")  # two readings, a moment apart
    assert decoded == outputs["json"]


def test_the_agents_encoder_sends_a_devices_attributes_only_when_they_change_or_every_full_every_polls(tmp_path):
    Fabric.create(str(tmp_path), 1, seed=3, hcas=2, layout_faults=("cn001:dgx",))
    snap = to_dict(read_host(str(tmp_path / "cn001"), host="cn001", use_verbs=False))
    encoder = wire.Encoder("fabricweb (tests)", full_every=3)
    first, second = encoder.encode(snap), encoder.encode(snap)
    assert "same" not in first["devices"][0] and "gpus" in first and "gpus_same" not in first
    # (a device's own hw_counters go only when it has some: the simulator's devices have none)
    assert all(d["same"] is True and set(d) == {"name", "same", "ports"} for d in second["devices"])
    assert second["gpus_same"] is True and "gpus" not in second
    assert len(json.dumps(second)) < 0.5 * len(json.dumps(first))
    # The ports and counters go at every poll, read back as they were; hw_counters as last sent are left out.
    ports = [p for d in wire.decode(second)["devices"] for p in d["ports"]]
    assert {type(p["hw_counters"]) for p in ports} == {type(wire.AS_LAST_SENT)}
    assert [{**p, "hw_counters": None} for p in ports] == [
        {**p, "hw_counters": None} for d in snap["devices"] for p in d["ports"]
    ]

    changed = json.loads(json.dumps(snap))
    changed["devices"][1]["fw_ver"] = "28.99.9999"  # a firmware update on one HCA
    third = encoder.encode(changed)
    assert [d.get("same", False) for d in third["devices"]] == [i != 1 for i in range(len(snap["devices"]))]
    assert third["devices"][1]["fw_ver"] == "28.99.9999"
    assert all("same" not in d for d in encoder.encode(changed)["devices"])  # the 4th poll: full again


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda w: w["devices"][0].update(same=1), r"devices\[0\].same: expected true or nothing"),
        (lambda w: w["devices"][0].update(fw_ver="x"), r"its attributes as last sent \(same\) and attributes both"),
        (lambda w: w.update(gpus=[]), "gpus_same: expected true, and no gpus beside it, or nothing"),
    ],
)
def test_an_elided_device_or_gpu_list_that_contradicts_itself_is_refused(change, reason):
    encoder = wire.Encoder("fabricweb (tests)")
    encoder.encode(snapshot())
    elided = json.loads(json.dumps(encoder.encode(snapshot())))
    elided["gpus_same"] = True
    change(elided)
    with pytest.raises(wire.WireError, match=reason):
        wire.decode(elided)


def test_the_agents_encoder_sends_a_ports_hw_counters_when_they_change_and_at_every_full_poll(tmp_path):
    Fabric.create(str(tmp_path), 1, seed=3, hcas=2)
    snap = to_dict(read_host(str(tmp_path / "cn001"), host="cn001", use_verbs=False))
    hw = snap["devices"][0]["ports"][0]["hw_counters"]
    assert len(hw) == 24 and all(len(p["hw_counters"]) == 24 for d in snap["devices"] for p in d["ports"])
    encoder = wire.Encoder("fabricweb (tests)", full_every=3)
    first, second = encoder.encode(snap), encoder.encode(snap)
    assert all(len(p["hw_counters"]) == 24 for d in first["devices"] for p in d["ports"])
    assert all("hw_counters" not in p for d in second["devices"] for p in d["ports"])
    moved = json.loads(json.dumps(snap))
    moved["devices"][1]["ports"][0]["hw_counters"]["out_of_buffer"] += 7  # read again, and one moved
    third = encoder.encode(moved)
    assert ["hw_counters" in p for d in third["devices"] for p in d["ports"]] == [False, True]
    assert len(json.dumps(third)) - len(json.dumps(second)) == 120  # what one port's 24 values take
    decoded = wire.decode(json.loads(json.dumps(third)))
    assert decoded["devices"][0]["ports"][0]["hw_counters"] is wire.AS_LAST_SENT
    assert decoded["devices"][1]["ports"][0]["hw_counters"] == moved["devices"][1]["ports"][0]["hw_counters"]
    fourth = encoder.encode(moved)  # a full poll: everything again
    assert all(len(p["hw_counters"]) == 24 for d in fourth["devices"] for p in d["ports"])


def test_a_port_with_hw_counters_as_last_sent_and_absent_ones_both_is_refused():
    encoder = wire.Encoder("fabricweb (tests)")
    encoder.encode(snapshot())
    elided = json.loads(json.dumps(encoder.encode(snapshot())))
    port = elided["devices"][0]["ports"][0]
    assert "hw_counters" not in port
    port["absent"] = {"hw_counters": [0]}
    with pytest.raises(wire.WireError, match=r"ports\[0\]: its hw_counters as last sent \(none given\) and absent"):
        wire.decode(elided)
