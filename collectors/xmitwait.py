"""PortXmitWait as lost bandwidth: how many bytes of link time one count stands for, by the switch's ASIC.

The IBA defines PortXmitWait as ticks in which the port had data to send and sent none, a tick being a
multiple of the symbol time that each device chooses. NVIDIA's ibdiagnet manual ("Congestion
Assessment on InfiniBand Links") gives what its ASICs count, keyed here by NodeInfo.DeviceID
(docs/infiniband.md §3b, with the source of each row):

    lost bytes = counts × bytes per count (× lanes, where the ASIC counts per lane)
    lost share of link time = lost bytes ÷ (link bytes/s × interval)

A device not in the table gets a stated default, marked assumed, so every figure it makes says so. A host's
HCA counts the same counter in its own PMA (mlx5 passes its firmware's count through unconverted); NVIDIA
publishes no bytes per count for its adapters, so an HCA's port is counted with the default, assumed.

`congestion_ratio` is the one place the congestion rule, the port charts and /metrics turn counts into the
share of link time lost; `device_id` is where they learn the device's id from what the inventory stores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from collectors.link import Rate

IBDIAGNET = "NVIDIA ibdiagnet manual, Congestion Assessment on InfiniBand Links"


@dataclass(frozen=True, slots=True)
class XmitWaitUnit:
    asic: str
    bytes_per_count: int
    per_lane: bool  # True: the bytes are one lane's, so a count is worth bytes × lanes of the port's time
    source: str
    assumed: bool = False

    def lost_bytes(self, counts: float, lanes: int) -> float:
        return counts * self.bytes_per_count * (lanes if self.per_lane else 1)

    def short(self) -> str:
        """`8 bytes per count on Quantum-2`, `32 bytes per lane per count on Switch-IB 2`, `8 bytes per count,
        assumed`: the unit in a finding's words."""
        unit = f"{self.bytes_per_count} bytes per {'lane per ' if self.per_lane else ''}count"
        return f"{unit}, assumed" if self.assumed else f"{unit} on {self.asic}"

    def describe(self) -> str:
        """`8 bytes of port time per count (Quantum-2; NVIDIA ibdiagnet manual, ...)`, or for a device not in
        the table `8 bytes of port time per count (assumed: ...)`."""
        unit = f"{self.bytes_per_count} bytes of {'lane' if self.per_lane else 'port'} time per count"
        return f"{unit} (assumed: {self.source})" if self.assumed else f"{unit} ({self.asic}; {self.source})"


_QUANTUM = "counts every 8 bytes regardless of the port's width (PortSamplesControl Tick 7)"
_SWITCH_IB = "counts every 32 bytes per lane (PortSamplesControl Tick 31)"

# NodeInfo.DeviceID -> what one count is. IB switch device ids are the ASIC's part number in decimal
# (54002 = 0xd2f2, Quantum-2); names as pci.ids and libibnetdisc give them.
XMIT_WAIT_UNITS: dict[int, XmitWaitUnit] = {
    0xD2F0: XmitWaitUnit("Quantum", 8, False, f"{IBDIAGNET}: Quantum {_QUANTUM}"),
    0xD2F2: XmitWaitUnit("Quantum-2", 8, False, f"{IBDIAGNET}: Quantum-2 {_QUANTUM}"),
    0xD2F4: XmitWaitUnit("Quantum-3", 8, False, f"{IBDIAGNET}: Quantum-3 {_QUANTUM}"),
    0xD2F6: XmitWaitUnit("Quantum-3 CPO", 8, False, f"{IBDIAGNET}: Quantum-3 {_QUANTUM}; pci.ids names 0xd2f6"),
    0xCF08: XmitWaitUnit("Switch-IB 2", 32, True, f"{IBDIAGNET}: Switch-IB 2 {_SWITCH_IB}"),
    0xCB20: XmitWaitUnit("Switch-IB", 32, True, f"{IBDIAGNET}: Switch-IB {_SWITCH_IB}"),
    0xC738: XmitWaitUnit("SwitchX", 32, True, f"{IBDIAGNET}: Switch-X {_SWITCH_IB}"),
}

# Not in the table: counted as the Quantum family (NVIDIA's HDR, NDR and XDR switches) counts, and said to be
# assumed. The IBA leaves the tick to the device (PortSamplesControl.Tick: 0 is one symbol time, one byte on
# one lane), so no default is right for every device; this one is right for the switches most fabrics have.
DEFAULT_BYTES_PER_COUNT = 8


@lru_cache(maxsize=1024)  # asked per port and poll (the rule, /metrics): the assumed one is built once per id
def xmit_wait_unit(device_id: int | None) -> XmitWaitUnit:
    unit = XMIT_WAIT_UNITS.get(device_id) if device_id is not None else None
    if unit is not None:
        return unit
    which = f"device 0x{device_id:04x}" if device_id is not None else "a device of unknown id"
    return XmitWaitUnit(
        "unknown",
        DEFAULT_BYTES_PER_COUNT,
        False,
        f"{which} is not in the table; counted as Quantum, Quantum-2 and Quantum-3 count",
        assumed=True,
    )


def lost_share(counts: float, unit: XmitWaitUnit, rate: Rate, seconds: float) -> float | None:
    """The share of the link's time lost to congestion over `seconds`: lost bytes ÷ (link bytes/s × seconds).

    None when it cannot be said: no link rate or width, or no time passed. Not capped at 1: above 1 the
    counter and the unit disagree (a wrong unit, most often an assumed one), which a cap would hide.
    """
    if rate.lanes is None or rate.gbps <= 0 or seconds <= 0:
        return None
    return unit.lost_bytes(counts, rate.lanes) / (rate.bytes_per_second * seconds)


def congestion_ratio(
    counts: float | None, device: int | None, rate: Rate | None, seconds: float | None
) -> float | None:
    """The share of link time lost to congestion: `counts` of PortXmitWait over `seconds` on a link of `rate`, on
    the device of NodeInfo.DeviceID `device` (None: not known, the default assumed). None where it cannot be
    said: the count unknown (capped, reset), no link, no time."""
    if counts is None or rate is None or seconds is None:
        return None
    return lost_share(counts, xmit_wait_unit(device), rate, seconds)


def switch_board_id(vendor_id: int | None, device_id: int | None) -> str | None:
    """What the inventory stores as a swept switch's board id (fabricweb.fabric.switchports): its NodeInfo
    VendorID and DeviceID in words, read back by `device_id`."""
    if vendor_id is None:
        return None
    return f"vendor 0x{vendor_id:06x}" + ("" if device_id is None else f" device 0x{device_id:04x}")


_SWITCH_BOARD = re.compile(r"vendor 0x[0-9a-f]{6} device 0x([0-9a-f]{4})", re.ASCII)
# mlx4 and mlx5 print hca_type as `MT` and the PCI device id in decimal (mlx5 main.c hca_type_show:
# "MT%d", pdev->device): MT4123 is 0x101b, a ConnectX-6, and NodeInfo.DeviceID is the same number.
_HCA_TYPE = re.compile(r"MT(\d{1,5})", re.ASCII)
MELLANOX = 0x02C9  # NodeInfo.VendorID of Mellanox (NVIDIA) adapters


def hca_type(vendor_id: int | None, device_id: int | None) -> str | None:
    """A swept channel adapter's hca_type as mlx4/mlx5 would print it on its host (`MT4123`), read back by
    `device_id`; None for another vendor's, whose driver prints something else or nothing."""
    return f"MT{device_id}" if vendor_id == MELLANOX and device_id is not None else None


@lru_cache(maxsize=4096)  # asked per port at every poll; a fabric has a few kinds of device
def device_id(hca_type: str | None, board_id: str | None) -> int | None:
    """NodeInfo.DeviceID of an inventory device: a swept switch's from its board id (`switch_board_id`), a
    host's HCA from its hca_type (`MT4123`); None when neither says (another vendor's HCA, a switch whose
    NodeInfo was not read)."""
    if board_id is not None and (m := _SWITCH_BOARD.fullmatch(board_id)):
        return int(m[1], 16)
    if hca_type is not None and (m := _HCA_TYPE.fullmatch(hca_type)) and int(m[1]) <= 0xFFFF:
        return int(m[1])
    return None
