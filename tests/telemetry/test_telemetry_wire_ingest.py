"""Covers collectors/wire.py, fabricweb/telemetry/history/samples.py, fabricweb/telemetry/ingest.py,
fabricweb/telemetry/intake/messages.py, fabricweb/telemetry/validation/quickparse.py,
fabricweb/telemetry/validation/schema.py.

Snapshots in their wire form (collectors/wire.py) through ingest: a device's attributes left out ("as last
sent") keep what ingest stored of them, and what changes is stored at once (telemetry/storage/apply.py,
telemetry/storage/normhold.py, the validation paths)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from collectors import wire
from fabricweb.inventory.models import Device, Node
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
