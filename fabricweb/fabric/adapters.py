"""Channel adapters no host agent reports (storage servers, gateways): which of them the fabric collectors read
the counters of, so their ports have counters, samples and findings like a host's.

Which: `FABRIC_CA_COUNTERS` (settings.py), by default every adapter the sweeps reach that no agent reports;
`none`, or a list of node GUIDs (each still only while no agent reports it); an adapter first reached less
than GRACE_POLLS poll intervals (a minute at least) ago waits, so that a host whose agent is starting is not
taken for agentless. An adapter an agent reports is one whose node GUID is a device of a host: it is never read
by the collector too, so a port has one source of samples. A card that vanished from its host's view (its driver
failed) while its firmware still answers on the fabric stays its host's until it retires
(FABRIC_VANISHED_RETIRE_AFTER): the host's agent speaks for it, and its vanishing is the host's finding, not a new
adapter's.

Central decides, and tells the collector with each sweep's poll (`to_read`, sent by fabricweb.scheduling as the
sweep task's `adapters`): the collector cannot know which hosts run an agent, and reading every adapter to keep
the agentless ones at ingest would query each host's HCA twice (the collector's PMA queries beside its own
agent's reads) and grow every sweep by every host port of the fabric, where the agentless are a few. Ingest
checks again (`readable`): a host whose agent came up after the poll was sent is not read twice in the meantime.

Each adapter read is an inventory Node of kind `adapter`, named from its NodeDescription as a switch is
(fabricweb.fabric.naming: `nfs01 mlx5_0` gives the node nfs01 and its device mlx5_0; `ca-<GUID>` when it gives
no name), whose ports come from the sweeps through the same apply a switch's go through (switchports.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from collectors.facts import parse_guid
from fabricweb.inventory.models import Device, Node

from .models import FabricNode

NODE_TYPE_CA = 1
# A host's agent registers with its first snapshot: within a poll of its start, and of its worker's start-up.
GRACE_POLLS, GRACE_MIN_S = 3, 60.0
AGENTLESS, NONE = "agentless", "none"


def with_agent() -> set[str]:
    """The node GUIDs (0x form: sysfs writes `0c42:a103:00bc:f003`) of the adapters hosts' agents report: devices
    of host nodes, vanished ones too until they retire."""
    rows = Device.objects.filter(node__kind=Node.Kind.HOST, node_guid__isnull=False)
    return {parse_guid(guid) for guid in rows.values_list("node_guid", flat=True)} - {None}


def readable(guids: Iterable[str]) -> set[str]:
    """Of these adapters' node GUIDs, those whose counters the fabric collector reads."""
    choice = settings.FABRIC_CA_COUNTERS
    if choice == NONE:
        return set()
    wanted = set(guids) if choice == AGENTLESS else set(guids).intersection(choice)
    return wanted - with_agent() if wanted else set()


def to_read(now: datetime | None = None) -> list[str]:
    """The node GUIDs of the adapters the collectors read at their next sweep: those the last full sweeps reached,
    first reached GRACE_POLLS poll intervals (at least GRACE_MIN_S) ago or more."""
    if settings.FABRIC_CA_COUNTERS == NONE:
        return []
    # Not at once: where the collector starts before the agents (a new site, central moved), every host would be
    # agentless for its first poll, and its adapters made nodes that its agent's first snapshot then renames.
    grace = max(GRACE_POLLS * float(settings.FABRIC_POLL_INTERVAL), GRACE_MIN_S)
    since = (now or timezone.now()) - timedelta(seconds=grace)
    reached = FabricNode.objects.filter(node_type=NODE_TYPE_CA, missing_since__isnull=True, first_seen_at__lte=since)
    return sorted(readable(reached.values_list("guid", flat=True)))
