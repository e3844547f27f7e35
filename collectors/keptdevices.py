"""What of an RDMA device stays put while the kernel keeps it registered, kept between an agent's polls.

A device's type, GUIDs and model (node_type, node_guid, sys_image_guid, hca_type, board_id, hw_rev), its
SR-IOV link, its PCI address and maximum link, its ports, each port's link layer and, on an InfiniBand port,
its port GUID (the GUID half of gids/0, burnt in; a RoCE port's gids/0 follows its netdev's MAC, so it is
read at every poll), and the names of their counter files are set when the kernel registers it, and change
only with a new registration: a new `ports/` directory, whose inode (or, on a disk's tree, time of change)
differs, as does that of a ports/ a port was added to or removed from. So the agent reads them once a
registration and stats the device's ports/ at each poll (one call) to tell.
Read at every poll still: fw_ver (a live firmware activation changes it in place), node_desc and the PCI
function's numa_node (root may write them), its current link speed and width, and every port's files,
state, rate, LIDs, capability mask, counters and network interfaces.

A device whose first read recorded an error in what would be kept is not kept: it is read whole again at
the next poll, each error said again. A kept counter file that is gone drops the device's entry (its
directory is listed again at the next poll). `collectors.read_host(kept=...)`; the agent's Poller owns one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from .heldfiles import HeldFiles
from .model import Device, PciLink, Port
from .sysparse import parse_int, parse_numa, parse_pci_speed, parse_text

STATIC = ("node_type", "node_guid", "sys_image_guid", "hca_type", "board_id", "hw_rev")


def identity(dev_dir: str) -> tuple[int, int, int, int] | None:
    """What tells one registration of the device at `dev_dir` from the next: its ports/ directory's inode and
    times; None where it cannot be read (the device is then read whole)."""
    try:
        st = os.stat(os.path.join(dev_dir, "ports"))
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns)


@dataclass(slots=True)
class Kept:
    """One registration of a device: its unchanging fields, ports and counter files' names."""

    identity: tuple[int, int, int, int]
    skip: bool = False  # an SR-IOV virtual function the reader leaves out
    fields: dict[str, object] = field(default_factory=dict)  # STATIC, virtual_function, physical_function
    pci: PciLink | None = None  # address, max_gts, max_width: the rest is read at every poll
    # (number, its directory, (link layer, port GUID): port_statics, None where each is read at every poll)
    ports: list[tuple[int, str, tuple[str | None, str | None]]] = field(default_factory=list)
    names: dict[str, list[str] | None] = field(default_factory=dict)  # counter directory -> files (None: absent)
    held: HeldFiles | None = None  # its directories read at every poll, held open (heldfiles.py)


class KeptDevices:
    """Device directory -> Kept. Owner: the node agent's Poller (fabricweb/agent/poll.py), one per process. Bound:
    the devices of the trees it reads; a device no longer listed under its class/infiniband is dropped at the
    next poll of that tree. Checked on use: an entry whose identity() is not the device's now is read afresh.
    forget() drops them all. Each entry holds files open (heldfiles.py), closed when it is dropped: one read at a
    time may use it (the Poller's lock), so that no file is closed while another thread reads it."""

    __slots__ = ("bridges", "devices", "held")

    def __init__(self) -> None:
        self.devices: dict[str, Kept] = {}
        self.held = [0]  # files and directories its devices and bridges hold open (heldfiles.HELD_LIMIT)
        self.bridges = HeldFiles(self.held)  # the PCIe bridges' above the devices (pcipath.py)

    def forget(self) -> None:
        for dev_dir in list(self.devices):
            self._drop(dev_dir)
        self.bridges.close()

    def get(self, dev_dir: str, now: tuple | None) -> Kept | None:
        kept = self.devices.get(dev_dir)
        if kept is not None and (now is None or kept.identity != now):
            self._drop(dev_dir)
            return None
        return kept

    def _drop(self, dev_dir: str) -> None:
        kept = self.devices.pop(dev_dir, None)
        if kept is not None and kept.held is not None:
            kept.held.close()

    def keep(self, dev_dir: str, now: tuple, dev: Device | None, names: dict, skip: bool = False) -> None:
        self._drop(dev_dir)  # (an entry read whole again: its files closed)
        if skip:
            self.devices[dev_dir] = Kept(now, skip=True)
            return
        assert dev is not None
        fields = {name: getattr(dev, name) for name in (*STATIC, "virtual_function", "physical_function")}
        pci = dev.pci and PciLink(dev.pci.address, max_gts=dev.pci.max_gts, max_width=dev.pci.max_width)
        ports = [(p.number, os.path.join(dev_dir, "ports", str(p.number)), port_statics(p)) for p in dev.ports]
        self.devices[dev_dir] = Kept(now, False, fields, pci, ports, names, HeldFiles(self.held))

    def retain(self, class_dir: str, names: list[str]) -> None:
        """Drop the devices of `class_dir` not among `names` (listed there this poll)."""
        listed = {os.path.join(class_dir, name) for name in names}
        for dev_dir in list(self.devices):  # (a copy: the agent's event thread may read a tree at the same time)
            if os.path.dirname(dev_dir) == class_dir and dev_dir not in listed:
                self._drop(dev_dir)


def port_statics(port: Port) -> tuple[str | None, str | None]:
    """(link layer, port GUID) of a port as its registration's first read found them, to be kept; each None
    where it must be read at every poll: unread (its error is then said at every poll), or a port GUID that is
    not an InfiniBand port's."""
    infiniband = port.link_layer == "InfiniBand"
    return port.link_layer, port.port_guid if infiniband else None


def read_kept(reader, dev_dir: str, name: str, kept: Kept) -> Device:
    """The device as `reader` (a sysfs.SysfsReader) reads it at a poll, its unchanging part from `kept`."""
    dev = Device(name, **kept.fields)
    with reader._dir(dev_dir) as at:
        dev.fw_ver = at("fw_ver", parse_text)
        dev.node_desc = at("node_desc", parse_text)
    if kept.pci is not None:
        with reader._dir(os.path.join(dev_dir, "device")) as at:
            dev.pci = PciLink(
                address=kept.pci.address,
                current_gts=at("current_link_speed", parse_pci_speed),
                current_width=at("current_link_width", parse_int),
                max_gts=kept.pci.max_gts,
                max_width=kept.pci.max_width,
                numa_node=at("numa_node", parse_numa),
            )
    if reader.hw_counters:
        dev.hw_counters = reader.counter_dir(os.path.join(dev_dir, "hw_counters"), None, hold=False)
    dev.ports = [reader.port(port_dir, number, statics) for number, port_dir, statics in kept.ports]
    reader.netdevs(dev_dir, dev.ports)
    return dev
