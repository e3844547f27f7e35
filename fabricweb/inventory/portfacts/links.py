"""A port's link as operators name it (`4X EDR`; on Ethernet `100GbE`, and `100GbE trained at 40GbE` below
its expected link) and its capacity in Gb/s and bytes/s: the link it has now, the one expected of it, one
stored poll's; and its HCA's PCIe link.
Whether a port has a link at all is statuses.has_link's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from collectors import facts, pcie
from collectors.facts import DOWN, LINK_UP
from collectors.link import SPEED_BY_NAME, WIDTHS, ethernet_name, format_gbps, make_rate

from .statuses import has_link

if TYPE_CHECKING:
    from ..models import Device, Port

BYTES_PER_GBIT = 1e9 / 8


# --- the link as it is named ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Link:
    """A link as operators name it: `4X EDR` (`100GbE` on Ethernet), its total Gb/s, lanes and speed."""

    gbps: float | None
    lanes: int | None
    speed: str | None
    name: str | None
    ethernet: bool = False

    @property
    def speed_words(self) -> str | None:
        """Its speed as operators say it: InfiniBand's per-lane one (`EDR`); on Ethernet the link's own rate
        (`40GbE`), never the InfiniBand speed mlx5 reports a RoCE port's link in (`QDR`)."""
        return ethernet_name(self.gbps) if self.ethernet else self.speed

    @property
    def bytes_per_second(self) -> float | None:
        return None if self.gbps is None else self.gbps * BYTES_PER_GBIT

    def as_dict(self) -> dict:
        """The API's form: gbps, lanes, speed, name, bytes_per_second."""
        return {
            "gbps": self.gbps,
            "lanes": self.lanes,
            "speed": self.speed,
            "name": self.name,
            "bytes_per_second": self.bytes_per_second,
        }

    def describe(self) -> str | None:
        """`100 Gb/s (4X EDR)`, or None without a total."""
        if self.gbps is None:
            return None
        return f"{format_gbps(self.gbps)} Gb/s ({self.name})" if self.name else f"{format_gbps(self.gbps)} Gb/s"


def named_link(
    speed: str | None, lanes: int | None, gbps: float | None = None, link_layer: str | None = None
) -> Link | None:
    """A link given by its parts (an expected one, what both ends support, a sample's): None when nothing
    is known. Gb/s is derived when only speed and lanes are known."""
    if speed is None and lanes is None and gbps is None:
        return None
    known = speed in SPEED_BY_NAME and lanes in WIDTHS
    if gbps is None and known:
        gbps = make_rate(speed, lanes).gbps
    if facts.is_ethernet(link_layer):
        name = ethernet_name(gbps)
    elif known:
        name = f"{lanes}X {speed}"
    else:
        name = None
    return Link(gbps, lanes, speed, name, facts.is_ethernet(link_layer))


def link(port: Port) -> Link | None:
    """The link the port has now, None when it has none (a DOWN/Polling port, a vanished one)."""
    if not has_link(port):
        return None
    found = named_link(port.speed, port.lanes, port.rate_gbps, port.link_layer)
    return _trained_below(found, expected_link(port)) if facts.is_ethernet(port.link_layer) else found


def _trained_below(found: Link | None, expected: Link | None) -> Link | None:
    """An Ethernet link below the port's expected one names both, as Ethernet operators say it: `100GbE trained
    at 40GbE` (its Gb/s stay the trained ones). InfiniBand names the two apart: `4X QDR`, expected `4X EDR`."""
    if found is None or expected is None or not (found.name and expected.name and found.gbps and expected.gbps):
        return found
    return replace(found, name=f"{expected.name} trained at {found.name}") if found.gbps < expected.gbps else found


def sample_link(
    state_id: int | None, phys_state_id: int | None, speed: str | None, lanes: int | None, link_layer: str | None
) -> Link | None:
    """The link of one stored poll (a sample: no vanished time), None when the poll saw none."""
    if not (facts.is_up(state_id) or (phys_state_id == LINK_UP and state_id != DOWN)):
        return None
    return named_link(speed, lanes, None, link_layer)


def capacity_gbps(port: Port) -> float | None:
    found = link(port)
    return None if found is None else found.gbps


def capacity_bytes_per_second(port: Port) -> float | None:
    found = link(port)
    return None if found is None else found.bytes_per_second


def expected_link(port: Port) -> Link | None:
    return named_link(port.expected_speed, port.expected_lanes, None, port.link_layer)


# --- the HCA's PCIe link (a port's device) ------------------------------------------------------


def pcie_link(device: Device) -> dict | None:
    """The device's PCIe link as trained and as capable (`Gen4 x16`), usable Gb/s, trained low or not."""
    d = device
    if d.pci_address is None and d.pci_current_gts is None and d.pci_current_width is None:
        return None
    return pci_function_link(
        d.pci_address, d.pci_current_gts, d.pci_current_width, d.pci_max_gts, d.pci_max_width, d.numa_node
    )


def pci_function_link(
    address: str | None,
    current_gts: float | None,
    current_width: int | None,
    max_gts: float | None,
    max_width: int | None,
    numa_node: int | None,
) -> dict:
    """One PCI function's link (an HCA's, a bridge's on its path, a GPU's): the same words everywhere."""
    current, top = (current_gts, current_width), (max_gts, max_width)
    both_known = None not in current and None not in top
    return {
        "address": address,
        "current_gts": current_gts,
        "current_width": current_width,
        "max_gts": max_gts,
        "max_width": max_width,
        "name": pcie.describe(*current) if None not in current else None,  # `Gen4 x16`
        "max_name": pcie.describe(*top) if None not in top else None,
        "usable_gbps": pcie.usable_gbps(*current),
        "trained_low": (current[0] < top[0] or current[1] < top[1]) if both_known else None,
        "numa_node": numa_node,
    }
