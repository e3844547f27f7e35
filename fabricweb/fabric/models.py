"""The fabric as the fabric collector sees it: every node it reached, every link with both ends,
how the cabling changed, what the cabling should be, and each sweep.

Switch ports themselves are inventory Ports (of a Node of kind `switch`): their counters, samples,
health and events go the same way as a host's (fabricweb.fabric.ingest). These tables hold
what only the fabric view knows.
"""

from __future__ import annotations

from django.db import models

from fabricweb.inventory.models import NAME_MAX, TEXT_MAX, Node, Port

GUID_MAX = 18  # 0x and 16 hex digits


class FabricNode(models.Model):
    """A switch, channel adapter or router the sweeps reached, by its node GUID."""

    guid = models.CharField(max_length=GUID_MAX, unique=True)
    node_type = models.SmallIntegerField(help_text="NodeInfo.NodeType: 1 CA, 2 switch, 3 router")
    num_ports = models.SmallIntegerField()
    description = models.CharField(max_length=TEXT_MAX, blank=True, default="", help_text="Untrusted text.")
    system_guid = models.CharField(max_length=GUID_MAX, null=True)
    vendor_id = models.IntegerField(null=True)
    device_id = models.IntegerField(null=True)
    revision = models.BigIntegerField(null=True)
    lid = models.IntegerField(null=True)
    node = models.OneToOneField(
        Node, null=True, blank=True, on_delete=models.SET_NULL, related_name="fabric_node",
        help_text="A switch's inventory node (its ports' counters and health).",
    )  # fmt: skip
    first_seen_at = models.DateTimeField()
    missing_since = models.DateTimeField(
        null=True, blank=True, help_text="The first full sweep that did not reach it; empty while it is reached."
    )

    class Meta:
        ordering = ["description", "guid"]
        # The overview's fingerprint counts and sums the nodes the sweeps no longer reach at every request: a few
        # rows of tens of thousands, so only those are indexed, with their ids for an index-only read (PostgreSQL;
        # SQLite's indexes hold the rowid anyway).
        indexes = [
            models.Index(
                fields=["missing_since"],
                include=["id"],
                condition=models.Q(missing_since__isnull=False),
                name="fabric_node_missing",
            )
        ]

    def __str__(self) -> str:
        return self.description or self.guid


class Link(models.Model):
    """One cable as the sweeps saw it: its two ends, by node GUID and port number.

    The ends are ordered (a before b by GUID, then port) so a link has one row whichever end was
    reached first. A link that is no longer seen keeps its row with `gone_at`: the port facing it
    still names what it was cabled to.
    """

    a_guid = models.CharField(max_length=GUID_MAX)
    a_port = models.PositiveSmallIntegerField()
    b_guid = models.CharField(max_length=GUID_MAX)
    b_port = models.PositiveSmallIntegerField()
    a = models.ForeignKey(Port, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    b = models.ForeignKey(Port, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    a_label = models.CharField(max_length=TEXT_MAX)
    b_label = models.CharField(max_length=TEXT_MAX)
    speed = models.CharField(max_length=8, null=True)
    lanes = models.SmallIntegerField(null=True)
    capable_speed = models.CharField(max_length=8, null=True, help_text="Fastest speed both ends support.")
    capable_lanes = models.SmallIntegerField(null=True, help_text="Widest width both ends support.")
    inter_switch = models.BooleanField(default=False)
    first_seen_at = models.DateTimeField(help_text="When it last appeared.")
    gone_at = models.DateTimeField(null=True, blank=True, help_text="The first full sweep that did not see it.")

    class Meta:
        ordering = ["a_label", "a_port"]
        constraints = [
            models.UniqueConstraint(fields=["a_guid", "a_port", "b_guid", "b_port"], name="fabric_link_unique_ends")
        ]
        indexes = [models.Index(fields=["gone_at"], name="fabric_link_gone")]

    def __str__(self) -> str:
        return f"{self.a_label} <-> {self.b_label}"


class TopologyChange(models.Model):
    """A link that appeared, disappeared, or whose port is now cabled elsewhere, and when."""

    class Kind(models.TextChoices):
        APPEARED = "appeared"
        DISAPPEARED = "disappeared"
        MOVED = "moved"

    at = models.DateTimeField(db_index=True)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    guid = models.CharField(max_length=GUID_MAX, help_text="The end that moved, or the link's first end.")
    port = models.PositiveSmallIntegerField()
    label = models.CharField(max_length=TEXT_MAX)
    peer_before = models.CharField(max_length=TEXT_MAX, blank=True, default="")
    peer_after = models.CharField(max_length=TEXT_MAX, blank=True, default="")
    collector = models.CharField(max_length=NAME_MAX)

    class Meta:
        ordering = ["-at", "label"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M:%S} {self.kind} {self.label}"


class ExpectedLink(models.Model):
    """One cable of the expected topology (manage.py import_topology), its ends as operators name them:
    a switch by name or GUID and a port number, a host port as node, device and port."""

    a_node = models.CharField(max_length=TEXT_MAX, help_text="A switch or host name, or a node GUID (0x...).")
    a_device = models.CharField(max_length=NAME_MAX, blank=True, default="", help_text="A host's device; blank else.")
    a_port = models.PositiveSmallIntegerField()
    a_label = models.CharField(max_length=TEXT_MAX, help_text="The end as the file names it.")
    b_node = models.CharField(max_length=TEXT_MAX)
    b_device = models.CharField(max_length=NAME_MAX, blank=True, default="")
    b_port = models.PositiveSmallIntegerField()
    b_label = models.CharField(max_length=TEXT_MAX)
    source = models.CharField(max_length=TEXT_MAX, help_text="The file it was imported from, and its line.")
    imported_at = models.DateTimeField()

    class Meta:
        ordering = ["a_node", "a_port"]

    def __str__(self) -> str:
        return f"{self.a_label} -- {self.b_label}"

    @classmethod
    def ends(cls) -> list[tuple[str, str, int]]:
        """Both ends of every expected cable as (node, device, port): what health's context.Cabling is made of."""
        rows = cls.objects.order_by().values_list("a_node", "a_device", "a_port", "b_node", "b_device", "b_port")
        return [end for row in rows for end in (row[:3], row[3:])]


class Sweep(models.Model):
    """One fabric snapshot as ingest took it: who sent it, what it held, whether it was applied.

    Of two collectors, the sweeps of one (the leader) are applied; the other's are recorded and
    left unapplied while the leader's keep coming (fabricweb.fabric.ingest.leader).
    """

    collector = models.ForeignKey(Node, on_delete=models.CASCADE, related_name="sweeps")
    collected_at = models.DateTimeField()
    stored_at = models.DateTimeField(db_index=True)
    mode = models.CharField(max_length=16)
    duration_s = models.FloatField()
    queries = models.IntegerField()
    nodes = models.IntegerField()
    switches = models.IntegerField()
    ports = models.IntegerField()
    links = models.IntegerField()
    errors = models.JSONField(default=list)
    applied = models.BooleanField()
    note = models.CharField(max_length=TEXT_MAX, blank=True, default="")

    class Meta:
        ordering = ["-stored_at"]

    def __str__(self) -> str:
        return f"{self.collector.name} {self.collected_at:%Y-%m-%d %H:%M:%S}"


class SwitchRoutes(models.Model):
    """A switch's linear forwarding table as the last sweep that read it found it: one array per switch.

    `lft` holds a byte per LID from LID 0: the port a packet for that LID leaves by (255: none). Rows
    are replaced whole when a sweep reads the tables again (fabricweb.fabric.routestore).
    """

    switch = models.OneToOneField(FabricNode, on_delete=models.CASCADE, related_name="routes")
    lid = models.IntegerField(null=True)
    lft = models.BinaryField()
    read_at = models.DateTimeField(help_text="When the sweep that read it started.")

    def __str__(self) -> str:
        return f"routes of {self.switch} ({len(self.lft)} LIDs)"
