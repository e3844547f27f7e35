"""What the fabric is made of, and the current state of every port.

Rows are created and kept current by ingest (fabricweb.telemetry.ingest); history
lives in telemetry's samples. Text limits match what ingest validation accepts
(fabricweb.telemetry.validation.schema), so a value that passed validation always fits.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import attrgetter

from django.db import models

from .portfacts import DEGRADED_FLAG, UP_FLAG

NAME_MAX = 64  # host, device names: short names, as in queue names and URLs
TEXT_MAX = 256  # free text a node reports (board_id, node_desc, fw_ver...)


class _Default:
    """The value behind a _Polled attribute until one is set: `default()`, stored on the instance at its first read."""

    def __init__(self, key: str, default: Callable[[], object]) -> None:
        self.key, self.default = key, default

    def __get__(self, instance: object, owner: type | None = None) -> object:
        if instance is None:
            return self
        value = instance.__dict__[self.key] = self.default()
        return value


class _Polled(property):
    """An attribute of a Port instance (not a column), `default()` until set. A property, so that Port(name=...)
    takes it as Django takes any property; its value lives in the instance's `_polled_<name>`, read by a getter
    in C (ingest reads these several times a port at every poll), its default given by a _Default there."""

    def __init__(self, name: str, default: Callable[[], object], doc: str | None = None) -> None:
        key = f"_polled_{name}"

        def set_value(instance, value) -> None:
            instance.__dict__[key] = value

        super().__init__(attrgetter(key), set_value, doc=doc)
        self.key, self.default = key, default

    def __set_name__(self, owner: type, name: str) -> None:
        setattr(owner, self.key, _Default(self.key, self.default))


class Node(models.Model):
    """Something in the fabric that is reported on: a host (its node agent sends its snapshots; created by
    its first one), a switch (seen by a fabric collector's sweeps, named from its NodeDescription), a channel
    adapter no agent reports (a storage server's or gateway's: its counters read by the sweeps, named as a
    switch is) or a fabric collector itself (which, like a host, is polled and goes stale when it stops
    answering)."""

    class Kind(models.TextChoices):
        HOST = "host"
        SWITCH = "switch"
        ADAPTER = "adapter"
        COLLECTOR = "collector"

    name = models.CharField(max_length=NAME_MAX, unique=True)
    kind = models.CharField(max_length=16, choices=Kind.choices, default=Kind.HOST, db_index=True)
    guid = models.CharField(
        max_length=18,
        null=True,
        unique=True,
        help_text="A switch's or agentless adapter's node GUID (0x...), what the fabric knows it by.",
    )
    first_seen_at = models.DateTimeField()
    last_collected_at = models.DateTimeField(
        null=True, help_text="When the node read its last applied snapshot (the node's clock)."
    )
    last_ingested_at = models.DateTimeField(
        null=True, help_text="When that snapshot was stored (this server's clock): staleness and /healthz."
    )
    stale = models.BooleanField(
        default=False,
        help_text=(
            "True once the node has missed the polls it was sent (health/records/staleness.py), until ingest stores "
            "its next snapshot. A switch is never stale: its sweeps say when it is no longer reached."
        ),
    )
    read_errors = models.JSONField(default=list, help_text="Files the last snapshot could not read: path and reason.")
    # A host past what one node may cost (fabricweb/telemetry/storage/budget.py): its snapshots are refused.
    refused_reason = models.TextField(
        blank=True, default="", help_text="Why its last snapshot was refused; blank once one is stored again."
    )
    refused_at = models.DateTimeField(null=True, blank=True, help_text="When a snapshot of it was last refused.")
    refused_snapshots = models.IntegerField(default=0, help_text="Snapshots refused over its budget, ever.")
    source = models.JSONField(default=dict, help_text="sysfs root and pyverbs status of the last snapshot.")
    gpus = models.JSONField(
        null=True,
        blank=True,
        help_text=(
            "Its GPUs as the last snapshot listed them (schema 2 `gpus`: PCI function, link, NUMA node, relation "
            "to each RDMA device in nvidia-smi topo words); null: its agent sends no PCIe tree (schema 1)."
        ),
    )
    ingest_token = models.BigIntegerField(
        null=True,
        editable=False,
        help_text=(
            "Random, new at every write by ingest; cleared when anything else writes the node's devices or ports. "
            "An ingest process reuses the rows it holds in memory only while this still matches."
        ),
    )
    # Held out of the fabric norm (fabricweb.telemetry.storage.normhold): set by ingest when the hardware it
    # reports jumps, cleared only by an operator's accept (health.records.actions.accept_norm), who is recorded.
    norm_hold_reason = models.TextField(
        blank=True, default="", help_text="Why its ports do not vote in the fabric norm; empty: they do."
    )
    norm_hold_since = models.DateTimeField(null=True, blank=True, help_text="When it was held out (server's clock).")
    norm_accepted_by = models.CharField(
        max_length=150, blank=True, default="", help_text="Who last accepted its hardware as normal."
    )
    norm_accepted_at = models.DateTimeField(null=True, blank=True, help_text="When that was.")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Device(models.Model):
    """One RDMA device (HCA) of a node, e.g. mlx5_0, with its attributes and PCIe link."""

    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="devices")
    name = models.CharField(max_length=NAME_MAX)
    node_type_id = models.SmallIntegerField(null=True)
    node_type_name = models.CharField(max_length=32, null=True)
    node_guid = models.CharField(max_length=TEXT_MAX, null=True)
    sys_image_guid = models.CharField(max_length=TEXT_MAX, null=True)
    fw_ver = models.CharField(max_length=TEXT_MAX, null=True)
    hca_type = models.CharField(max_length=TEXT_MAX, null=True)
    board_id = models.CharField(max_length=TEXT_MAX, null=True)
    hw_rev = models.CharField(max_length=TEXT_MAX, null=True)
    node_desc = models.CharField(max_length=TEXT_MAX, null=True, help_text="Settable by root on the node: untrusted.")
    pci_address = models.CharField(max_length=TEXT_MAX, null=True)
    pci_current_gts = models.FloatField(null=True)
    pci_current_width = models.SmallIntegerField(null=True)
    pci_max_gts = models.FloatField(null=True)
    pci_max_width = models.SmallIntegerField(null=True)
    numa_node = models.SmallIntegerField(null=True)
    pcie_path = models.JSONField(
        null=True,
        blank=True,
        help_text=(
            "The bridges from its PCI function up to the root port, and the GPUs and RDMA devices below them "
            "(schema 2 `pcie_path`); null: not sent, or no bridge above the function."
        ),
    )
    hw_counters = models.JSONField(default=dict)
    verbs = models.JSONField(null=True)
    disagreements = models.JSONField(default=list)
    first_seen_at = models.DateTimeField()
    vanished_at = models.DateTimeField(null=True, help_text="Set when a snapshot of its node lacked it.")
    missed_polls = models.IntegerField(default=0, help_text="Consecutive snapshots of its node that lacked it.")

    class Meta:
        ordering = ["node__name", "name"]
        constraints = [models.UniqueConstraint(fields=["node", "name"], name="inventory_device_unique_name")]

    def __str__(self) -> str:
        return f"{self.node.name} {self.name}"


class Port(models.Model):
    """One port and everything current about it: link, raw counters, history-derived facts."""

    device = models.ForeignKey(Device, on_delete=models.CASCADE, related_name="ports")
    number = models.PositiveSmallIntegerField()

    # Link as of the last applied snapshot.
    state_id = models.SmallIntegerField(null=True, help_text="4 = ACTIVE")
    state_name = models.CharField(max_length=32, null=True)
    phys_state_id = models.SmallIntegerField(null=True, help_text="5 = LinkUp")
    phys_state_name = models.CharField(max_length=32, null=True)
    link_layer = models.CharField(max_length=32, null=True)
    rate_gbps = models.FloatField(null=True)
    lanes = models.SmallIntegerField(null=True)
    speed = models.CharField(max_length=8, null=True)
    lid = models.IntegerField(null=True)
    sm_lid = models.IntegerField(null=True)
    lmc = models.SmallIntegerField(null=True)
    cap_mask = models.BigIntegerField(null=True)
    port_guid = models.CharField(
        max_length=18, null=True, db_index=True, help_text="GID 0's lower 64 bits (NodeInfo.PortGUID): 0x..."
    )
    netdevs = models.JSONField(default=list)
    verbs = models.JSONField(null=True)
    disagreements = models.JSONField(default=list)

    capped = models.JSONField(default=list, help_text="Counters stuck at all-ones: rate unknown until reset.")
    last_reset_at = models.DateTimeField(null=True, help_text="Last time a counter went down (reboot, perfquery -R).")

    # Facts from history, for the health rules.
    best_speed = models.CharField(max_length=8, null=True, help_text="Fastest speed held while ACTIVE.")
    best_lanes = models.SmallIntegerField(null=True, help_text="Widest width held while ACTIVE.")
    ever_up = models.BooleanField(default=False)
    expect_up = models.BooleanField(
        null=True,
        help_text=(
            "An operator's word on whether it should be up: its link policy's expect_up, else True when the "
            "expected cabling names it; null when neither says (its history does: ever_up). Written by the "
            "health engine with the expected link (fabricweb.inventory.portfacts: should be up)."
        ),
    )
    expected_speed = models.CharField(max_length=8, null=True)
    expected_lanes = models.SmallIntegerField(null=True)
    expected_source = models.TextField(blank=True, default="", help_text="What set the expectation.")
    missed_polls = models.IntegerField(
        default=0, help_text="Consecutive snapshots of its node that lacked it (or its device)."
    )
    first_seen_at = models.DateTimeField()
    vanished_at = models.DateTimeField(null=True)

    # The link as the fabric collector sees it, from both ends (fabricweb.fabric.links); written by fabric
    # ingest, never by a node's own snapshot.
    peer = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text="The port at the other end of its cable, when that port is in the inventory.",
    )  # fmt: skip
    peer_label = models.CharField(
        max_length=TEXT_MAX, blank=True, default="", help_text="The far end in words (leaf07 port 12): untrusted text."
    )
    capable_speed = models.CharField(max_length=8, null=True, help_text="Fastest speed both ends support.")
    capable_lanes = models.SmallIntegerField(null=True, help_text="Widest width both ends support.")
    link_owner = models.BooleanField(
        default=True, help_text="This end reports the link's state (down, degraded, flapping); else the far end does."
    )

    # Computed by the database at every write (portfacts: the one definition); read-only here.
    up = models.GeneratedField(expression=UP_FLAG, output_field=models.BooleanField(), db_persist=True)
    degraded = models.GeneratedField(expression=DEGRADED_FLAG, output_field=models.BooleanField(), db_persist=True)

    # What changes at every poll is not a column: ingest keeps it in memory and stores it once per
    # node-poll in NodeReadings (fabricweb.inventory.readings, which also attaches it to rows read
    # elsewhere). Unattached, a port reads as never polled.
    last_collected_at = _Polled("last_collected_at", lambda: None)
    state_polls = _Polled("state_polls", lambda: 1, "Consecutive polls in this state and physical state.")
    # Raw counters in base units exactly as the snapshot carried them: the baseline for the next deltas.
    counters = _Polled("counters", dict)
    counters_ext = _Polled("counters_ext", dict)
    hw_counters = _Polled("hw_counters", dict)
    recent = _Polled(
        "recent",
        list,
        "Last hour of error-counter deltas, oldest first, this poll last: [[ts, interval, {counter: delta}]]; "
        "clean polls merged (see fabricweb.telemetry.storage.ring).",
    )

    class Meta:
        ordering = ["device__node__name", "device__name", "number"]
        constraints = [models.UniqueConstraint(fields=["device", "number"], name="inventory_port_unique_number")]

    def __str__(self) -> str:
        return f"{self.device.node.name} {self.device.name}/{self.number}"


class NodeReadings(models.Model):
    """What changes at every poll of a node's ports, one row per node, rewritten with each of its polls.

    For every port of the node: when it was last read, its raw counters and counters_ext
    (`counters`), its polls in that state and its `recent` ring (`history`); its hw_counters are
    NodeHwReadings' (in `counters` in rows written before that). Layout: fabricweb.inventory.readings.
    Kept out of the port rows so that a poll rewrites one narrow row per node, not every port row.
    """

    node = models.OneToOneField(Node, on_delete=models.CASCADE, primary_key=True, related_name="readings")
    counters = models.BinaryField(help_text="JSON: per port, last poll and raw counters (inventory.readings).")
    history = models.BinaryField(help_text="JSON: per port, state_polls and the recent ring (inventory.readings).")


class NodeHwReadings(models.Model):
    """The hw_counters of a node's ports, rewritten only when they changed: the agents send them every few
    polls (collectors/wire.py), and in the NodeReadings row, rewritten at every poll, PostgreSQL wrote them
    again each time (inline, compressed: ~470 B an 8-HCA host). Layout: fabricweb.inventory.readings."""

    readings = models.OneToOneField(NodeReadings, on_delete=models.CASCADE, primary_key=True, related_name="hw")
    hw_counters = models.BinaryField(help_text="JSON: per port, its hw_counters (inventory.readings).")
