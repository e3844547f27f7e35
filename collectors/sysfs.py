"""Read /sys/class/infiniband into typed values.

One bad file costs exactly that file's value: every read or parse failure
becomes a ReadError naming the path and the reason, and the rest of the
device and host is still reported. Reads use os.open/os.read directly: a poll
reads a few hundred small files and the text-mode file object is most of the
cost of each.
"""

from __future__ import annotations

import errno
import os
import re

from . import counters as pma
from .link import RateError, parse_rate
from .model import Device, Enum, PciLink, Port, ReadError

_ENUM_RE = re.compile(r"^(\d+): ?(.*)$")
_PCI_ADDR_RE = re.compile(r"^[0-9a-fA-F]{4,}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$")
_PCI_SPEED_RE = re.compile(r"^(\d+(?:\.\d+)?) ?GT/s(?: PCIe)?$")
_MAX_READ = 4096
_REASONS = {
    errno.EINVAL: "EINVAL (the driver refuses this attribute)",
    errno.EOPNOTSUPP: "EOPNOTSUPP (not supported by this device or firmware)",
    errno.EACCES: "EACCES (permission denied)",
    errno.EPERM: "EPERM (operation not permitted)",
    errno.EISDIR: "a directory where a file should be",
    errno.EIO: "EIO (the device did not answer)",
}


class Unparsable(ValueError):
    pass


def _int(text: str) -> int:
    # int() would also take '+5', ' 5', '5_000' and non-ASCII digits; sysfs never prints those.
    if not (text.isascii() and text.isdigit()):
        raise Unparsable(f"not a decimal number: {text[:40]!r}")
    return int(text)


def _hex(text: str) -> int:
    if not text.startswith("0x"):
        raise Unparsable(f"not a hexadecimal number: {text[:40]!r}")
    try:
        return int(text, 16)
    except ValueError:
        raise Unparsable(f"not a hexadecimal number: {text[:40]!r}") from None


def _enum(text: str) -> Enum:
    m = _ENUM_RE.match(text)
    if m is None:
        raise Unparsable(f"expected '<id>: <name>', got {text[:40]!r}")
    return Enum(int(m.group(1)), m.group(2))


def _counter(text: str) -> int:
    if text.startswith("N/A"):
        raise Unparsable("N/A (no PMA): the device has no performance management agent for this counter")
    return _int(text)


def _pci_speed(text: str) -> float | None:
    if text == "Unknown":  # virtual functions
        return None
    m = _PCI_SPEED_RE.match(text)
    if m is None:
        raise Unparsable(f"unrecognised PCIe link speed {text[:40]!r}")
    return float(m.group(1))


def _numa(text: str) -> int | None:
    value = int(text) if re.fullmatch(r"-?\d+", text) else None
    if value is None:
        raise Unparsable(f"not a NUMA node number: {text[:40]!r}")
    return None if value < 0 else value


def _text(text: str) -> str:
    return text


class SysfsReader:
    """Reads one sysfs tree; collects every failure in `errors`."""

    def __init__(self, sysfs_root: str = "/sys") -> None:
        self.root = sysfs_root
        self.class_dir = os.path.join(sysfs_root, "class", "infiniband")
        self.errors: list[ReadError] = []

    # -- primitives -------------------------------------------------------
    def raw(self, path: str) -> str | None:
        """The stripped content of `path`; None if absent (silently) or unreadable (recorded)."""
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return None
        except OSError as e:
            self._fail(path, e)
            return None
        try:
            data = os.read(fd, _MAX_READ)
        except OSError as e:
            self._fail(path, e)
            return None
        finally:
            os.close(fd)
        text = data.decode("utf-8", "replace").strip()
        if not text:
            self.errors.append(ReadError(path, "empty file"))
            return None
        return text

    def value(self, path: str, parse):
        text = self.raw(path)
        if text is None:
            return None
        try:
            return parse(text)
        except (Unparsable, RateError) as e:
            self.errors.append(ReadError(path, str(e)))
            return None

    def _fail(self, path: str, e: OSError) -> None:
        reason = _REASONS.get(e.errno) or (e.strerror or type(e).__name__)
        self.errors.append(ReadError(path, reason))

    def _listdir(self, path: str) -> list[str]:
        """Entry names of a directory; [] if it does not exist, recorded if it cannot be listed."""
        try:
            return sorted(os.listdir(path))
        except FileNotFoundError:
            return []
        except NotADirectoryError:
            self.errors.append(ReadError(path, "a file where a directory should be"))
            return []
        except OSError as e:
            self._fail(path, e)
            return []

    # -- counters ---------------------------------------------------------
    def counter_dir(self, path: str, capped: list[str] | None) -> dict[str, int | None]:
        values: dict[str, int | None] = {}
        for name in self._listdir(path):
            if name == "lifespan":  # hw_counters cache time in ms, not a counter
                continue
            raw = self.value(os.path.join(path, name), _counter)
            if raw is None:
                values[name] = None
                continue
            if capped is not None and pma.is_capped(name, raw):
                capped.append(name)
            values[name] = pma.to_base_units(name, raw)
        return values

    # -- ports, devices ---------------------------------------------------
    def port(self, port_dir: str, number: int) -> Port:
        j = os.path.join
        p = Port(number)
        p.state = self.value(j(port_dir, "state"), _enum)
        p.phys_state = self.value(j(port_dir, "phys_state"), _enum)
        p.rate = self.value(j(port_dir, "rate"), parse_rate)
        p.link_layer = self.value(j(port_dir, "link_layer"), _text)
        p.lid = self.value(j(port_dir, "lid"), _hex)
        p.sm_lid = self.value(j(port_dir, "sm_lid"), _hex)
        p.lmc = self.value(j(port_dir, "lid_mask_count"), _int)
        p.cap_mask = self.value(j(port_dir, "cap_mask"), _hex)
        p.counters = self.counter_dir(j(port_dir, "counters"), p.capped)
        p.counters_ext = self.counter_dir(j(port_dir, "counters_ext"), p.capped)
        p.hw_counters = self.counter_dir(j(port_dir, "hw_counters"), None)
        return p

    def pci(self, dev_dir: str) -> PciLink | None:
        link = os.path.join(dev_dir, "device")
        if not os.path.isdir(link):
            return None  # software devices (rxe, siw) have no PCI function
        address = os.path.basename(os.path.realpath(link))
        j = os.path.join
        return PciLink(
            address=address if _PCI_ADDR_RE.match(address) else None,
            current_gts=self.value(j(link, "current_link_speed"), _pci_speed),
            current_width=self.value(j(link, "current_link_width"), _int),
            max_gts=self.value(j(link, "max_link_speed"), _pci_speed),
            max_width=self.value(j(link, "max_link_width"), _int),
            numa_node=self.value(j(link, "numa_node"), _numa),
        )

    def netdevs(self, dev_dir: str, ports: list[Port]) -> None:
        """Attach each network interface of the PCI function to its IB port (dev_port is 0-based)."""
        net = os.path.join(dev_dir, "device", "net")
        by_number = {p.number: p for p in ports}
        for ifname in self._listdir(net):
            dev_port = self.value(os.path.join(net, ifname, "dev_port"), _int)
            number = (dev_port + 1) if dev_port is not None else (ports[0].number if len(ports) == 1 else None)
            if number in by_number:
                by_number[number].netdevs.append(ifname)

    def device(self, name: str) -> Device:
        d = os.path.join(self.class_dir, name)
        j = os.path.join
        dev = Device(name)
        dev.node_type = self.value(j(d, "node_type"), _enum)
        for attr in ("node_guid", "sys_image_guid", "fw_ver", "hca_type", "board_id", "hw_rev", "node_desc"):
            setattr(dev, attr, self.value(j(d, attr), _text))
        dev.pci = self.pci(d)
        dev.hw_counters = self.counter_dir(j(d, "hw_counters"), None)
        ports_dir = j(d, "ports")
        for entry in self._listdir(ports_dir):
            if not entry.isdigit():
                self.errors.append(ReadError(j(ports_dir, entry), "not a port number"))
                continue
            dev.ports.append(self.port(j(ports_dir, entry), int(entry)))
        dev.ports.sort(key=lambda p: p.number)
        self.netdevs(d, dev.ports)
        return dev

    def devices(self) -> list[Device]:
        """Every device under class/infiniband; no such directory means no devices."""
        return [self.device(name) for name in self._listdir(self.class_dir)]
