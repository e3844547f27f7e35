"""The health families of /metrics, defined once: name, help, type and extra label of each
(grouped.Spec), in the order their samples are built. The counter families are names.py's.

- a host's ports and devices (hostports.py): node_exporter's names, `node, device, port`;
- a switch's ports (switchports.py): `infiniband_switch_port_*`, `guid, port, switch`;
- the links (links.py): `infiniband_link_*`, one series per cable, both ends named: in the default set
  only the cables a switch port speaks for (a host's own link is its port's series), every cable in detail.
"""

from __future__ import annotations

from .grouped import Spec
from .names import PHYS_STATE_HELP, PREFIX, STATE_HELP
from .series import GAUGE

BYTES_PER_GBIT = 1e9 / 8


PORT_GAUGES = (
    ("state_id", STATE_HELP),
    ("physical_state_id", PHYS_STATE_HELP),
    ("rate_bytes_per_second", "Maximum signal transfer rate"),
    (
        "port_up",
        "1 when the port is ACTIVE (or ACTIVE_DEFER) and still reported by its node (none while the node is stale)",
    ),
    ("port_degraded", "1 when the port is up and trained below its expected speed or width"),
)
# The default set's (health): node_exporter's gauges and the few health series of a port.
PORT_SPECS: dict[str, Spec] = {
    **{PREFIX + name: (help, GAUGE, None) for name, help in PORT_GAUGES},
    PREFIX + "port_expected_rate_bytes_per_second": (
        "Signal transfer rate of the link the port is expected to train at",
        GAUGE,
        None,
    ),
    PREFIX + "port_expected_up": (
        "1 when the port should be up (a link policy or the expected cabling says so, else it has been up): "
        "down, it is an outage; 0 when down is not connected",
        GAUGE,
        None,
    ),
    PREFIX + "port_degraded_info": (
        "The link a degraded port trained at, the one expected of it and the far end of its cable (empty where "
        "the fabric view knows none), value is always 1 (only while degraded)",
        GAUGE,
        None,
    ),
    PREFIX + "port_capped": ("1 for a counter stuck at all-ones: its rate is unknown until reset", GAUGE, "counter"),
}
# ?set=detail: a series with many labels per port, and the lanes (the rate says the width too).
PORT_DETAIL_GAUGES = (
    ("port_lanes", "Lanes the link trained at (the X of 4X; none without a link)"),
    ("port_expected_lanes", "Lanes the link is expected to train at"),
)
PORT_DETAIL_SPECS: dict[str, Spec] = {
    **{PREFIX + name: (help, GAUGE, None) for name, help in PORT_DETAIL_GAUGES},
    PREFIX + "port_info": ("The port's link and what is expected of it, value is always 1", GAUGE, None),
}
DEVICE_SPECS: dict[str, Spec] = {
    PREFIX + "info": ("Non-numeric data from /sys/class/infiniband/<device>, value is always 1.", GAUGE, None),
    PREFIX + "device_pcie_bandwidth_bytes_per_second": (
        "Usable bandwidth of the PCIe link as trained, after line encoding",
        GAUGE,
        None,
    ),
    PREFIX + "pcie_path_usable_gbps": (
        "Usable Gb/s of the narrowest PCIe link from the HCA up to its root port (its own link or a bridge's, "
        "as trained, after line encoding)",
        GAUGE,
        None,
    ),
}
# ?set=pcie: the HCA's PCIe link in detail.
DEVICE_PCIE = (
    ("device_pcie_link_speed_gts", "PCIe link speed the HCA trained at, GT/s per lane"),
    ("device_pcie_link_width_lanes", "PCIe lanes the HCA trained at"),
    ("device_pcie_max_link_speed_gts", "PCIe link speed the HCA and slot are capable of, GT/s per lane"),
    ("device_pcie_max_link_width_lanes", "PCIe lanes the HCA and slot are capable of"),
)
DEVICE_PCIE_SPECS: dict[str, Spec] = {PREFIX + name: (help, GAUGE, None) for name, help in DEVICE_PCIE}
GPU_NIC_RELATION = (
    PREFIX + "gpu_nic_relation_info",
    "How near each GPU sits to each RDMA device, in nvidia-smi topo -m terms (PIX, PXB, PHB, NODE, SYS), "
    "value is always 1",
)


SWITCH_PORT_GAUGES = (
    ("switch_port_up", "1 when the switch port is ACTIVE (or ACTIVE_DEFER) and still reported by its switch"),
    ("switch_port_state_id", STATE_HELP.replace("InfiniBand port", "switch port")),
    ("switch_port_physical_state_id", PHYS_STATE_HELP.replace("InfiniBand port", "switch port")),
    (
        "switch_port_rate_bytes_per_second",
        "Signal transfer rate the switch port's link trained at (none without a link)",
    ),
)
SWITCH_PORT_SPECS: dict[str, Spec] = {
    **{PREFIX + name: (help, GAUGE, None) for name, help in SWITCH_PORT_GAUGES},
    PREFIX + "switch_port_capped": (
        "1 for a counter stuck at all-ones: its rate is unknown until reset",
        GAUGE,
        "counter",
    ),
}


# The default set's (health), for the links a switch port speaks for (inter-switch, or facing an adapter
# fabricweb has no agent on): no other default series says whether such a cable is up or degraded. A host's
# own link is its port's: infiniband_port_up, _degraded (against what both ends support, unless a policy
# says otherwise), infiniband_rate_bytes_per_second and _port_expected_rate_bytes_per_second.
LINK_SPECS: dict[str, Spec] = {
    PREFIX + "link_up": (
        "1 when the link is up: its end that speaks for it (the first switch port by name and number, or the "
        "switch port facing an adapter without an agent) is ACTIVE; a host's own link is its infiniband_port_up",
        GAUGE,
        None,
    ),
    PREFIX + "link_degraded": (
        "1 when the link is up and trained below what both ends support, in speed or in width",
        GAUGE,
        None,
    ),
    PREFIX + "link_degraded_info": (
        "The link a degraded link trained at and what both ends support, value is always 1 (only while degraded)",
        GAUGE,
        None,
    ),
}
# ?set=detail, for every link (a host's own included): its info series and its rates (the speaking end's own
# rate series says the first; the info's capable_speed and capable_width the second).
LINK_DETAIL_SPECS: dict[str, Spec] = {
    PREFIX + "link_info": (
        "The link's speed and width, and what both ends support, value is always 1",
        GAUGE,
        None,
    ),
    PREFIX + "link_rate_bytes_per_second": ("Signal transfer rate the link trained at (none while down)", GAUGE, None),
    PREFIX + "link_capable_rate_bytes_per_second": (
        "Signal transfer rate of the fastest and widest link both ends support",
        GAUGE,
        None,
    ),
}
