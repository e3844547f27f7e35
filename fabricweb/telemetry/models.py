"""Per-poll samples of every port (packed per node-poll), and their 5-minute and 1-hour rollups.

Deltas are null when unknown (first poll, capped counter, clock step), never 0:
a rate that cannot be known must not read as an idle link.
"""

from __future__ import annotations

from django.db import models

from fabricweb.inventory.models import Node, Port


class DeltaColumns(models.Model):
    """One column per counter of fabricweb.telemetry.storage.columns.SOURCES (bytes for data)."""

    rcv_bytes = models.BigIntegerField(null=True)
    xmit_bytes = models.BigIntegerField(null=True)
    rcv_packets = models.BigIntegerField(null=True)
    xmit_packets = models.BigIntegerField(null=True)
    symbol_error = models.BigIntegerField(null=True)
    link_error_recovery = models.BigIntegerField(null=True)
    link_downed = models.BigIntegerField(null=True)
    port_rcv_errors = models.BigIntegerField(null=True)
    port_rcv_remote_physical_errors = models.BigIntegerField(null=True)
    port_rcv_switch_relay_errors = models.BigIntegerField(null=True)
    port_xmit_discards = models.BigIntegerField(null=True)
    port_xmit_constraint_errors = models.BigIntegerField(null=True)
    port_rcv_constraint_errors = models.BigIntegerField(null=True)
    local_link_integrity_errors = models.BigIntegerField(null=True)
    excessive_buffer_overrun_errors = models.BigIntegerField(null=True)
    vl15_dropped = models.BigIntegerField(null=True)
    xmit_wait = models.BigIntegerField(null=True)

    class Meta:
        abstract = True


class NodePoll(models.Model):
    """One node at one poll: the samples of its ports packed in `ports` (fabricweb/telemetry/storage/packing.py).

    A port's sample is its link and its counter deltas since its previous poll; read them with
    fabricweb/telemetry/history/samples.py. One row per node-poll rather than per port: the row header
    and the index entries are paid once for all the node's ports.
    """

    # The (node, ts) index serves per-node (so per-port) history; a separate FK index would only slow inserts.
    node = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="polls", db_index=False)
    ts = models.DateTimeField(help_text="collected_at of the snapshot (the node's clock).")
    ports = models.BinaryField(help_text="The ports' samples, packed by fabricweb.telemetry.storage.packing.")

    class Meta:
        indexes = [
            models.Index(fields=["node", "ts"], name="telemetry_poll_node_ts"),
            models.Index(fields=["ts"], name="telemetry_poll_ts"),
        ]


class PortRollup(DeltaColumns):
    """Samples of one port summed over a 5-minute or 1-hour bucket (delta columns are sums)."""

    FIVE_MINUTES = 300
    HOUR = 3600
    PERIODS = ((FIVE_MINUTES, "5 minutes"), (HOUR, "1 hour"))

    port = models.ForeignKey(Port, on_delete=models.CASCADE, related_name="rollups", db_index=False)
    period_s = models.IntegerField(choices=PERIODS)
    bucket = models.DateTimeField(help_text="Start of the bucket, aligned to the period in UTC.")
    samples = models.IntegerField()
    max_rcv_bps = models.FloatField(null=True, help_text="Highest receive rate of one poll, bytes/s.")
    max_xmit_bps = models.FloatField(null=True, help_text="Highest transmit rate of one poll, bytes/s.")
    worst_state_id = models.SmallIntegerField(null=True, help_text="Lowest port state seen (1 DOWN ... 4 ACTIVE).")
    min_speed = models.CharField(max_length=8, null=True, help_text="Slowest link speed seen.")
    min_lanes = models.SmallIntegerField(null=True, help_text="Narrowest link width seen.")
    resets = models.IntegerField(default=0, help_text="Samples that saw a counter reset.")
    capped_samples = models.IntegerField(default=0, help_text="Samples with a counter at all-ones.")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["port", "period_s", "bucket"], name="telemetry_rollup_unique_bucket")
        ]
        indexes = [models.Index(fields=["period_s", "bucket"], name="telemetry_rollup_period_bucket")]
