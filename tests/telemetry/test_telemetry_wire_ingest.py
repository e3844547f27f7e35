"""Covers collectors/wire.py, fabricweb/telemetry/history/samples.py, fabricweb/telemetry/ingest.py,
fabricweb/telemetry/intake/messages.py, fabricweb/telemetry/validation/quickparse.py,
fabricweb/telemetry/validation/schema.py.

Snapshots in their wire form (collectors/wire.py) through ingest: a device's attributes and a port's
hw_counters left out ("as last sent") keep what ingest stored of them, and what changes is stored at once
(telemetry/storage/apply.py, telemetry/storage/normhold.py, the validation paths)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from collectors import wire
from fabricweb.inventory.models import Device, Node, Port
from fabricweb.inventory.readings import attach
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.ingest import ingest_snapshot
from fabricweb.telemetry.intake.messages import from_wire
from fabricweb.telemetry.validation.quickparse import parse_common
from fabricweb.telemetry.validation.schema import parse_worded
from tests.telemetry.telemetry_support import T0, dgx_polls

ATTRIBUTES = ("fw_ver", "hca_type", "board_id", "node_guid", "pci_current_width", "pci_address")


def sent(encoder: wire.Encoder, snap: dict) -> dict:
    """What ingest reads of `snap` as the agent sends it: through JSON, read back from its wire form."""
    return from_wire(json.loads(json.dumps(encoder.encode(snap))))


def stored_attributes() -> dict:
    return {d.name: (*(getattr(d, f) for f in ATTRIBUTES), d.pcie_path is not None) for d in Device.objects.all()}


def test_devices_sent_as_last_sent_keep_their_attributes_gpus_and_norm(each_db, tmp_path):
    first, second, third = dgx_polls(tmp_path, 3)
    encoder = wire.Encoder("fabricweb (tests)")
    ingest_snapshot(sent(encoder, first))
    full = stored_attributes()
    gpus = Node.objects.get(name="cn001").gpus
    assert len(full) == 8 and all(a[-1] for a in full.values()) and len(gpus) == 8

    elided = sent(encoder, second)
    assert all(d.get("same") for d in elided["devices"]) and elided["gpus_same"] is True
    result = ingest_snapshot(elided)
    assert result.status == "stored"
    node = Node.objects.get(name="cn001")
    assert stored_attributes() == full and node.gpus == gpus and node.norm_hold_since is None
    assert node.last_collected_at == datetime.fromtimestamp(T0.timestamp() + 10, UTC)
    assert len(list(samples.between(nodes=[node]))) == 2 * 8  # both polls' samples of every port

    third["devices"][2]["fw_ver"] = "28.99.9999"  # a firmware update: sent with the next poll
    ingest_snapshot(sent(encoder, third))
    assert Device.objects.get(name=third["devices"][2]["name"]).fw_ver == "28.99.9999"
    assert {n: a for n, a in stored_attributes().items() if n != third["devices"][2]["name"]} == {
        n: a for n, a in full.items() if n != third["devices"][2]["name"]
    }


def test_both_validation_paths_read_an_elided_snapshot_alike(tmp_path):
    first, second = dgx_polls(tmp_path, 2)
    encoder = wire.Encoder("fabricweb (tests)")
    encoder.encode(first)
    elided = from_wire(json.loads(json.dumps(encoder.encode(second))))
    now = datetime.fromtimestamp(T0.timestamp() + 60, UTC)
    quick, worded = parse_common(elided, now), parse_worded(elided, now)
    assert quick is not None and quick == worded
    assert all(d.same and set(d.attrs) == {"hw_counters"} for d in quick.devices) and quick.gpus_same


def test_hw_counters_as_last_sent_keep_what_ingest_stored_and_read_both_ways_alike(each_db, tmp_path):
    first, second = dgx_polls(tmp_path, 2)
    # Read at the first poll only, as the agent reads them every Nth poll and sends the last read in between.
    for device, was in zip(second["devices"], first["devices"], strict=True):
        for port, before in zip(device["ports"], was["ports"], strict=True):
            port["hw_counters"] = dict(before["hw_counters"])
    moved = second["devices"][3]["ports"][0]["hw_counters"]
    moved["out_of_buffer"] = moved.get("out_of_buffer", 0) + 5
    encoder = wire.Encoder("fabricweb (tests)")
    ingest_snapshot(sent(encoder, first))
    elided = sent(encoder, second)
    left_out = [p["hw_counters"] is wire.AS_LAST_SENT for d in elided["devices"] for p in d["ports"]]
    assert left_out == [i != 3 for i in range(8)]
    now = datetime.fromtimestamp(T0.timestamp() + 60, UTC)
    quick, worded = parse_common(elided, now), parse_worded(elided, now)
    assert quick is not None and repr(quick) == repr(worded)

    assert ingest_snapshot(elided).status == "stored"
    ports = attach(Port.objects.filter(device__node__name="cn001").select_related("device"))
    kept = {d["name"]: d["ports"][0]["hw_counters"] for d in second["devices"]}
    assert {port.device.name: port.hw_counters for port in ports} == kept
    assert kept[second["devices"][3]["name"]]["out_of_buffer"] == moved["out_of_buffer"]
    assert len(kept) == 8 and all(len(hw) == 24 for hw in kept.values())
