"""The share of each port's link time its last poll lost to congestion: `infiniband_port_congestion_ratio` (a host's
ports) and `infiniband_switch_port_congestion_ratio` (a switch's), in the default set.

collectors.xmitwait.congestion_ratio of the poll's port_xmit_wait (inventory.readings.last_wait), on the device's id
(collectors.xmitwait.device_id) and the port's link: the quantity the congestion rule judges over its window and the
port charts draw per sample. No sample where it is unknown: a capped or reset counter, no link, a port that does
not count waits, a poll stored before the wait was. Nor where the poll lost under FLOOR of the link's time: most
ports of a healthy fabric count a few waits at every poll, and a series each would put the default set over its
budget (selection.SERIES_PER_PORT_BUDGET) to say nothing; absent is "under 0.01%, or unknown".

In the counters set (`?set=counters`, and the default): it is made from the counters' readings, which the health
set does not read.
"""

from __future__ import annotations

from functools import lru_cache

import orjson

from collectors import xmitwait
from collectors.link import Rate
from fabricweb.health.records import context

from . import tables
from .names import PREFIX
from .series import Families, Family

HOST = (
    PREFIX + "port_congestion_ratio",
    "Share of the link's time the last poll lost waiting for credits (port_xmit_wait x bytes per count on the"
    " device / link bytes per second x seconds; docs/infiniband.md 3b)",
)
SWITCH = (PREFIX + "switch_port_congestion_ratio", HOST[1])
FLOOR = 1e-4  # a hundredth of a percent of the link's time
WAIT = tables.COUNTERS_AT + 4  # in a port row with counters: readings.last_wait's [counts, seconds]
HCA_TYPE, BOARD_ID = tables.DEVICE_FIELDS.index("hca_type"), tables.DEVICE_FIELDS.index("board_id")
_HEALTH = tables.PORT_FIELDS.index("health")
_LANES, _SPEED, _HAS_LINK = (tables.PORT_HEALTH_FIELDS.index(f) for f in ("lanes", "speed", "has_link"))


class Congestion:
    """One family's samples, created at its first port that has one (the exposition's order)."""

    def __init__(self, out: Families, family: tuple[str, str]) -> None:
        self.out = out
        self.name, self.help = family
        self.family: Family | None = None

    def add(self, labels: dict[str, str], row: tuple, device_row: tuple) -> None:
        wait = row[WAIT]
        if not wait or not wait[0]:
            return  # unknown, or no count: no sample (FLOOR), and most ports' JSON is not read
        device, rate = _link_of(row[_HEALTH], device_row[HCA_TYPE], device_row[BOARD_ID])
        share = xmitwait.congestion_ratio(wait[0], device, rate, wait[1])
        if share is None or share < FLOOR:
            return
        if self.family is None:
            self.family = self.out.family(self.name, self.help)
        self.family.add(labels, share + 0.0)


@lru_cache(maxsize=1 << 17)  # a port's health text changes a few times a day: ~2 µs a port where it is read afresh
def _link_of(health: str, hca_type: str | None, board_id: str | None) -> tuple[int | None, Rate | None]:
    """The device id and link a port's congestion is worked out on, from its health row (None: no link)."""
    fields = orjson.loads(health)
    rate = context.rate(fields[_SPEED], fields[_LANES]) if fields[_HAS_LINK] else None
    return xmitwait.device_id(hca_type, board_id), rate
