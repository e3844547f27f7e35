"""The series of the links (`infiniband_link_*`): each cable the fabric view has seen, one series per
family, from the end that speaks for it (Port.link_owner), both ends named in its labels; built from a
key of the values they are made of and memoised across scrapes (grouped.py). The families:
specs.LINK_SPECS (the default set: the cables a switch port speaks for; a host's own link is its port's
series), and specs.LINK_DETAIL_SPECS (?set=detail: every cable).
"""

from __future__ import annotations

import orjson

from collectors.facts import SWITCH_DEVICE
from collectors.link import judge_link
from fabricweb.health.records import context
from fabricweb.health.rules.findings import port_label
from fabricweb.inventory.models import Node

from .grouped import Memo
from .names import PREFIX
from .series import Samples
from .specs import BYTES_PER_GBIT

SWITCH = Node.Kind.SWITCH.value


def _link(key: tuple) -> tuple[dict[str, str], list]:
    """The labels of the link of `key` (((node, device, is a switch), number, rate, JSON), as
    collector._ports builds it), and tables.PORT_HEALTH_FIELDS."""
    (node, device, switch), number, _, fields = key
    values = orjson.loads(fields)
    peer_label, peer_node, peer_kind = values[11], values[14], values[15]
    if not switch:
        kind = "host"  # a host's port speaks for its link
    elif peer_kind == SWITCH:
        kind = "inter-switch"
    else:
        kind = "adapter"  # a channel adapter fabricweb has no agent on
    labels = {
        "device": "" if switch else device,
        "end": port_label(node, SWITCH_DEVICE if switch else device, number),
        "node": node,
        "peer": peer_label,
        "peer_node": peer_node or "",
        "port": str(number),
        "type": kind,
    }
    return labels, values


def link_health(key: tuple, _: tuple = ()) -> tuple[Samples, dict[str, str]]:
    """The default set's link samples of the switch port of `key`, the end that speaks for its link, and their
    labels. collector._ports gives no key of a link a host's port speaks for: its own series say it (up,
    degraded against what both ends support unless a policy says otherwise, rate and expected rate; the
    budget in docs/metrics.md, "Sets").

    Degraded as the health rules judge a link against what both ends support (collectors.link.judge_link:
    speed and width separately; unknown on either side is not degraded); while it is, the words of both
    (infiniband_link_degraded_info, as a host port's infiniband_port_degraded_info)."""
    labels, values = _link(key)
    lanes, speed, up, cap_speed, cap_lanes = values[3], values[4], values[9], values[12], values[13]
    actual, capable = context.rate(speed, lanes), context.rate(cap_speed, cap_lanes)
    degraded = bool(up) and actual is not None and capable is not None and judge_link(actual, capable) is not None
    samples: Samples = {
        PREFIX + "link_up": [(labels, 1.0 if up else 0.0, None)],
        PREFIX + "link_degraded": [(labels, 1.0 if degraded else 0.0, None)],
    }
    if degraded:
        samples[PREFIX + "link_degraded_info"] = [({**labels, **_words(values)}, 1, None)]
    return samples, labels


def link_detail(key: tuple, _: tuple = ()) -> tuple[Samples, dict[str, str]]:
    """?set=detail's samples of the link of `key`, whichever end speaks for it: `infiniband_link_info` (its
    labels and the training's), the rate it trained at (none while down) and what both ends support."""
    labels, values = _link(key)
    info = {**labels, **_words(values)}
    samples: Samples = {PREFIX + "link_info": [(info, 1, None)]}
    rate_gbps, up, capable = key[2], values[9], context.rate(values[12], values[13])
    if up and rate_gbps is not None:
        samples[PREFIX + "link_rate_bytes_per_second"] = [(labels, rate_gbps * BYTES_PER_GBIT + 0.0, None)]
    if capable is not None:
        samples[PREFIX + "link_capable_rate_bytes_per_second"] = [(labels, capable.bytes_per_second + 0.0, None)]
    return samples, info


def _words(values: list) -> dict[str, str]:
    """The link as trained and what both ends support, in words (tables.PORT_HEALTH_FIELDS' `values`)."""
    lanes, speed, cap_speed, cap_lanes = values[3], values[4], values[12], values[13]
    return {
        "speed": speed or "",
        "width": f"{lanes}X" if lanes else "",
        "capable_speed": cap_speed or "",
        "capable_width": f"{cap_lanes}X" if cap_lanes else "",
    }


# Kept across scrapes (bounded: grouped.MAX_MEMO_ROWS), shared by the threads of a web process.
link_memo = Memo(link_health)
link_detail_memo = Memo(link_detail)  # ?set=detail's (specs.LINK_DETAIL_SPECS)
