"""PortXmitWait as lost bandwidth: how many bytes of link time one count stands for, by the switch's ASIC.

The IBA defines PortXmitWait as ticks in which the port had data to send and sent none, a tick being a
multiple of the symbol time that each device chooses. NVIDIA's ibdiagnet manual ("Congestion
Assessment on InfiniBand Links") gives what its ASICs count, keyed here by NodeInfo.DeviceID
(docs/infiniband.md §3b, with the source of each row):

    lost bytes = counts × bytes per count (× lanes, where the ASIC counts per lane)
    lost share of link time = lost bytes ÷ (link bytes/s × interval)

A device not in the table gets a stated default, marked assumed, so every figure it makes says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from collectors.link import Rate

IBDIAGNET = "NVIDIA ibdiagnet manual, Congestion Assessment on InfiniBand Links"


@dataclass(frozen=True, slots=True)
class XmitWaitUnit:
    asic: str
    bytes_per_count: int
    per_lane: bool  # True: the bytes are one lane's, so a count is worth bytes × lanes of the port's time
    source: str
    assumed: bool = False

    def lost_bytes(self, counts: int, lanes: int) -> int:
        return counts * self.bytes_per_count * (lanes if self.per_lane else 1)

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


def lost_share(counts: int, unit: XmitWaitUnit, rate: Rate, seconds: float) -> float | None:
    """The share of the link's time lost to congestion over `seconds`: lost bytes ÷ (link bytes/s × seconds).

    None when it cannot be said: no link rate or width, or no time passed. Not capped at 1: above 1 the
    counter and the unit disagree (a wrong unit, most often an assumed one), which a cap would hide.
    """
    if rate.lanes is None or rate.gbps <= 0 or seconds <= 0:
        return None
    return unit.lost_bytes(counts, rate.lanes) / (rate.bytes_per_second * seconds)
