"""A port as validated, declared once: each field of PortIn (typed.py), its type, how it is checked and within
what, where a snapshot holds it, and what each collector reads it from.

PortIn is made from this table, and LinkState (telemetry/results.py) from its LINK rows; the worded checks
(schema.py) and the quick path (quickparse.py) take every bound and allowed value from it, and the fabric
path (fabric/switchports.py) the link's fields. A field added here is a field of PortIn at once: each of the
three builders of a PortIn fails until it fills it, and tests/telemetry/test_telemetry_port_fields.py fails
until both validators check it as its row says.
"""

from __future__ import annotations

from typing import NamedTuple

from collectors.link import SPEED_BY_NAME, WIDTHS

from .checks import ENUM_ID_HIGH, ENUM_NAME_MAX, MAX_COUNTERS, MAX_LIST

# How a field is checked: the checks.py function of that name, or (ONE_OF) membership of `bounds`.
INTEGER, NUMBER, TEXT, ONE_OF, GUID = "integer", "number", "text", "one of", "guid"
NAMES, COUNTERS, SCALARS, DISAGREEMENTS = "names", "counters", "scalars", "disagreements"
# Groups: LINK is the port's link as the health rules judge it (LinkState); RAW changes every poll.
LINK, RAW = "link", "raw"


class PortField(NamedTuple):
    name: str  # PortIn's attribute, and the inventory Port row's field of that name
    type: object
    check: str  # INTEGER, NUMBER, ...
    # INTEGER: (low, high); NUMBER: (high,) from 0; TEXT: (most characters,); ONE_OF: the values; NAMES: (most items,)
    bounds: tuple
    wire: str  # where a snapshot's port object holds it (collectors/snapshot.py); "rate.gbps": `gbps` inside `rate`
    sysfs: str  # what a host's collector reads, under /sys/class/infiniband/<device>/ (collectors/model.py Port)
    mad: str | None  # what the fabric collector reads for a switch's or agentless adapter's port; None: sent unknown
    group: str = ""  # LINK, RAW or neither
    required: bool = False  # refused when missing (`rate.gbps`: when `rate` is sent)


_COUNTER_MAP = dict[str, int | None]

PORT_FIELDS: tuple[PortField, ...] = (
    PortField("number", int, INTEGER, (0, 255), "port", "ports/<n>", "PortInfo's attribute modifier", required=True),
    PortField("state_id", int | None, INTEGER, (0, ENUM_ID_HIGH), "state.id", "ports/<n>/state", "PortInfo.PortState",
              LINK),
    PortField("state_name", str | None, TEXT, (ENUM_NAME_MAX,), "state.name", "ports/<n>/state",
              "PortInfo.PortState, named by collectors.facts.PORT_STATES", LINK),
    PortField("phys_state_id", int | None, INTEGER, (0, ENUM_ID_HIGH), "phys_state.id", "ports/<n>/phys_state",
              "PortInfo.PortPhysicalState", LINK),
    PortField("phys_state_name", str | None, TEXT, (ENUM_NAME_MAX,), "phys_state.name", "ports/<n>/phys_state",
              "PortInfo.PortPhysicalState, named by collectors.facts.PHYS_STATES", LINK),
    PortField("link_layer", str | None, TEXT, (32,), "link_layer", "ports/<n>/link_layer",
              "InfiniBand: MADs cross only InfiniBand", LINK),
    PortField("rate_gbps", float | None, NUMBER, (100_000,), "rate.gbps", "ports/<n>/rate",
              "collectors.link.make_rate of speed and lanes, on a LinkUp port", LINK, required=True),
    PortField("lanes", int | None, ONE_OF, WIDTHS, "rate.lanes", "ports/<n>/rate", "PortInfo.LinkWidthActive", LINK),
    PortField("speed", str | None, ONE_OF, tuple(SPEED_BY_NAME), "rate.speed", "ports/<n>/rate",
              "PortInfo.LinkSpeedActive / ExtActive / ExtActive2, FDR10 from ExtendedPortInfo", LINK),
    PortField("lid", int | None, INTEGER, (0, 0xFFFF), "lid", "ports/<n>/lid",
              "PortInfo.LID (an adapter's ports only)"),
    PortField("sm_lid", int | None, INTEGER, (0, 0xFFFF), "sm_lid", "ports/<n>/sm_lid", None),
    PortField("lmc", int | None, INTEGER, (0, 7), "lmc", "ports/<n>/lid_mask_count", None),
    PortField("cap_mask", int | None, INTEGER, (0, 0xFFFFFFFF), "cap_mask", "ports/<n>/cap_mask", None),
    PortField("port_guid", str | None, GUID, (), "port_guid", "ports/<n>/gids/0",
              "NodeInfo.PortGUID (an adapter's ports only: a switch's share one)"),
    PortField("netdevs", list[str], NAMES, (MAX_LIST,), "netdevs", "device/net/<if>/dev_port", None),
    PortField("counters", _COUNTER_MAP, COUNTERS, (), "counters", "ports/<n>/counters/*", "PMA PortCounters", RAW),
    PortField("counters_ext", _COUNTER_MAP, COUNTERS, (), "counters_ext", "ports/<n>/counters_ext/* (before 4.5)",
              "PMA PortCountersExtended (the _64 columns)", RAW),
    # Each one among the port's counters or counters_ext.
    PortField("capped", list[str], NAMES, (MAX_COUNTERS,), "capped", "counters at all-ones for their PMA width",
              "counters at all-ones for their PMA width", RAW),
    PortField("hw_counters", _COUNTER_MAP, COUNTERS, (), "hw_counters", "ports/<n>/hw_counters/*", None, RAW),
    PortField("verbs", dict | None, SCALARS, (), "verbs", "pyverbs query_port", None),
    PortField("disagreements", list[dict], DISAGREEMENTS, (), "disagreements", "sysfs against verbs", None),
)  # fmt: skip

FIELD = {f.name: f for f in PORT_FIELDS}
LINK_STATE = tuple(f.name for f in PORT_FIELDS if f.group == LINK)  # LinkState's fields, in this order
RAW_FIELDS = tuple(f.name for f in PORT_FIELDS if f.group == RAW)  # change every poll
LINK_FIELDS = tuple(f.name for f in PORT_FIELDS if f.name != "number" and f.group != RAW)  # change rarely
