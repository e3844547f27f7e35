"""InfiniBand facts every layer reads, each stated once: port states, ibstat's words, counter lists,
the node-name pattern and the snapshot schema version.

Standard library only: the node agent, the collectors, ingest, the health rules, the API,
the dashboard and the exporter all import these names rather than writing them again
(tests/collectors/test_facts.py pins that). Sources: docs/infiniband.md §1, §3, §5.
"""

from __future__ import annotations

import re

# The version of the JSON snapshot a node sends (collectors.snapshot.to_dict); ingest reads these.
# 2 adds the PCIe tree (a device's `pcie_path`, the host's `gpus`: docs/pcie.md); 1, without it, is still read.
SCHEMA_VERSION = 2
KNOWN_SCHEMAS = frozenset({1, SCHEMA_VERSION})
# What one snapshot carries of a host's PCIe tree (schema 2), far past real hosts (a DGX path has 4 bridges, a
# host 8-16 GPUs): the agent leaves out what goes past them, with a read error; the server refuses more.
MAX_PCIE_HOPS = 16  # bridges above one function
MAX_PCI_GTS = 1024.0  # GT/s a lane: past any PCIe generation's (7.0 runs at 128); a reading above it is refused
MAX_PCIE_NEIGHBOURS = 64  # GPUs and RDMA functions below one path
MAX_GPUS = 64

# Node names become queue names (node.<name>), URL parts and simulator directories: short, and
# unable to climb out of a directory. Ingest accepts the same names from snapshots.
NODE_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}"

# sysfs `state` ids and the names the kernel prints (`4: ACTIVE`).
PORT_STATES = {0: "NOP", 1: "DOWN", 2: "INIT", 3: "ARMED", 4: "ACTIVE", 5: "ACTIVE_DEFER"}
DOWN, INIT, ARMED, ACTIVE, ACTIVE_DEFER = 1, 2, 3, 4, 5
# A port is up when ACTIVE, or ACTIVE_DEFER (active, with a deferred transition pending).
UP_STATE_IDS = frozenset({ACTIVE, ACTIVE_DEFER})
# ibstat's words for the same states: what operators read (`State: Active`).
IBSTAT_STATES = {0: "NOP", 1: "Down", 2: "Initializing", 3: "Armed", 4: "Active", 5: "Active (deferred)"}

# sysfs `phys_state` ids and names (`5: LinkUp`).
PHYS_STATES = {
    0: "NoChange",
    1: "Sleep",
    2: "Polling",
    3: "Disabled",
    4: "PortConfigurationTraining",
    5: "LinkUp",
    6: "LinkErrorRecovery",
    7: "Phy Test",
}
LINK_UP = 5

NODE_TYPES = {1: "CA", 2: "switch", 3: "router", 4: "RNIC", 5: "usNIC", 6: "usNIC UDP"}

# The one device a switch's ports are filed under, where a host has mlx5_0 (`leaf07 port 12`, not a device/port).
SWITCH_DEVICE = "switch"


def is_up(state_id: int | None) -> bool:
    return state_id in UP_STATE_IDS


def is_ethernet(link_layer: str | None) -> bool:
    """A RoCE port (sysfs `link_layer` "Ethernet"): no subnet manager, Ethernet rate names."""
    return isinstance(link_layer, str) and link_layer.lower() == "ethernet"


# Error counters of the PortCounters attribute (counters/ file names), in perfquery's order.
ERROR_COUNTERS: tuple[str, ...] = (
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "port_rcv_switch_relay_errors",
    "port_xmit_discards",
    "port_xmit_constraint_errors",
    "port_rcv_constraint_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "VL15_dropped",
)
# Ticks the port had data to send but no credits: congestion.
XMIT_WAIT = "port_xmit_wait"
# Data (octets / 4 in the PMA) and packet counters, and their 64-bit twins in the legacy counters_ext/.
TRAFFIC_COUNTERS: tuple[str, ...] = ("port_rcv_data", "port_xmit_data", "port_rcv_packets", "port_xmit_packets")
EXT_SUFFIX = "_64"


# A GUID in the forms people paste: 0x and 16 hex digits (ibstat, iblinkinfo), the 16 digits alone, or sysfs'
# node_guid and sys_image_guid `0c42:a103:00a1:b2c1`; any case.
_GUID = re.compile(
    r"(?:0x)?([0-9a-f]{16})|([0-9a-f]{4}):([0-9a-f]{4}):([0-9a-f]{4}):([0-9a-f]{4})", re.ASCII | re.IGNORECASE
)


def parse_guid(text: str | None) -> str | None:
    """The GUID `text` names, as ibstat and iblinkinfo print it: `0x` and 16 lower-case hex digits
    (`0x0c42a10300a1b2c1`); None when it names none."""
    found = _GUID.fullmatch(text) if text else None
    return "0x" + "".join(part for part in found.groups() if part).lower() if found else None


def guid_words(text: str | None) -> str | None:
    """A stored GUID as the pages write it (parse_guid's form, whichever form it was stored in); other text is
    no GUID and is given back as it is."""
    return parse_guid(text) or text
