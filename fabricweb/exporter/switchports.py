"""The health series of a switch's ports (`infiniband_switch_port_*`: `guid, port, switch`), built from
a key of the values they are made of and memoised across scrapes (grouped.py). The families:
specs.SWITCH_PORT_SPECS; their counters are counters.PortCounters'.
"""

from __future__ import annotations

import orjson

from .grouped import Memo
from .names import PREFIX
from .series import Samples
from .specs import BYTES_PER_GBIT, SWITCH_PORT_GAUGES


def switch_port_health(key: tuple, _: tuple = ()) -> tuple[Samples, dict[str, str]]:
    """The health samples of the switch port of `key` ((switch name, GUID), number, rate and
    tables.PORT_HEALTH_FIELDS as JSON, as collector._ports builds it), and its labels."""
    (name, guid), number, rate_gbps, fields = key
    values = orjson.loads(fields)
    state_id, phys_id, capped, up, linked = values[0], values[1], values[8], values[9], values[16]
    if isinstance(capped, str):  # SQLite's json_array carries a JSON column as its text
        capped = orjson.loads(capped)
    labels = {"guid": guid, "port": str(number), "switch": name}
    rate = None if rate_gbps is None or not linked else rate_gbps * BYTES_PER_GBIT
    samples: Samples = {}
    for (family, _), value in zip(SWITCH_PORT_GAUGES, (1 if up else 0, state_id, phys_id, rate), strict=True):
        if value is not None:
            samples[PREFIX + family] = [(labels, value + 0.0, None)]
    if capped:
        samples[PREFIX + "switch_port_capped"] = [(labels, 1, counter) for counter in capped]
    return samples, labels


# Kept across scrapes (bounded: grouped.MAX_MEMO_ROWS), shared by the threads of a web process.
switch_port_memo = Memo(switch_port_health)
