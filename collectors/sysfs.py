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
import stat
import time

from . import counters as pma
from .heldfiles import DIR_FLAGS, MAX_READ, HeldDir, HeldDirContext, HeldFiles, OpenDir, read_held
from .keptdevices import KeptDevices, identity, read_kept
from .link import RateError, parse_rate
from .model import Device, PciLink, Port, ReadError

# The parsers (collectors/pcipath.py takes some of them from here).
from .sysparse import (
    PCI_ADDR_RE,
    Unparsable,
    _counter,
    _enum,
    _gid_guid,
    parse_hex,
    parse_int,
    parse_numa,
    parse_pci_speed,
    parse_text,
)

_U64_MAX = (1 << 64) - 1
# O_NONBLOCK: opening a FIFO would otherwise wait for a writer forever and hang the
# whole poll; regular (sysfs) files ignore the flag.
_FILE_FLAGS = os.O_RDONLY | os.O_NONBLOCK
_REASONS = {
    errno.EINVAL: "EINVAL (the driver refuses this attribute)",
    errno.EOPNOTSUPP: "EOPNOTSUPP (not supported by this device or firmware)",
    errno.EACCES: "EACCES (permission denied)",
    errno.EPERM: "EPERM (operation not permitted)",
    errno.EISDIR: "a directory where a file should be",
    errno.EIO: "EIO (the device did not answer)",
}


class DeadlinePassed(TimeoutError):
    """The read went past its deadline (a stuck driver answering slowly): the rest is not read."""


def _join(dir_path: str, name: str) -> str:
    return os.path.join(dir_path, name) if dir_path else name


class SysfsReader:
    """Reads one sysfs tree; collects every failure in `errors`.

    `hw_counters=False` leaves every hw_counters/ unread (empty). `virtual_functions=False` leaves
    out every device known to be an SR-IOV virtual function, unread past its `physfn` link.
    `deadline` (time.monotonic()) is checked before each file: past it, the read raises
    DeadlinePassed naming the file. A deadline, not a signal, so it holds in any thread, and a
    file's read is never cut in half. `kept` (keptdevices.KeptDevices, the agent's) holds what of each
    device does not change while it stays registered, read once a registration.
    """

    def __init__(
        self,
        sysfs_root: str = "/sys",
        *,
        hw_counters: bool = True,
        virtual_functions: bool = True,
        deadline: float | None = None,
        kept: KeptDevices | None = None,
    ) -> None:
        self.root, self.class_dir = sysfs_root, os.path.join(sysfs_root, "class", "infiniband")
        self.errors: list[ReadError] = []
        self.hw_counters, self.virtual_functions = hw_counters, virtual_functions
        self.deadline, self.kept = deadline, kept
        # The device being read: its counter directories' files (None: no such directory), and whether one of
        # them was gone; consulted and filled only when there is `kept`.
        self.names: dict[str, list[str] | None] = {}
        self.held: HeldFiles | None = None  # ... and its directories held open between polls (heldfiles.py)
        self.vanished = False
        self._static_errors: int | None = None

    # -- primitives -------------------------------------------------------
    # Files are opened by name relative to their directory, opened once (dir_fd): the
    # kernel then resolves one path component instead of the whole path, about a quarter
    # of each read. The full path is only built to name a failure.
    def raw(self, path: str) -> str | None:
        """The stripped content of `path`; None if absent (silently) or unreadable (recorded)."""
        return self._raw(path, None, "")

    def value(self, path: str, parse):
        return self._value(path, None, "", parse)

    def _raw(self, name: str, dir_fd: int | None, dir_path: str) -> str | None:
        """raw() of `name`, relative to the directory `dir_path` open as `dir_fd` when that is given."""
        data = self._read(name, dir_fd, dir_path)
        return None if data is None else self._decode(data, name, dir_path)

    def due(self, name: str, dir_path: str) -> None:
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise DeadlinePassed(f"deadline passed before reading {_join(dir_path, name)}")

    def _read(
        self, name: str, dir_fd: int | None, dir_path: str, listed: bool = False, into: HeldDir | None = None
    ) -> bytes | None:
        """Bytes of a file; None when absent (an error only if it was `listed` a moment ago) or unreadable. `into`:
        the held directory `dir_fd` is, where the file, once read, is kept open (heldfiles.py)."""
        self.due(name, dir_path)
        try:
            fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
        except FileNotFoundError:
            if listed:
                self.errors.append(ReadError(_join(dir_path, name), "vanished while being read"))
                self.vanished = True
            return None
        except OSError as e:
            self._fail(_join(dir_path, name), e)
            return None
        kept_open = False
        try:
            data = os.read(fd, MAX_READ)
            if not data and not stat.S_ISREG(os.fstat(fd).st_mode):
                self.errors.append(ReadError(_join(dir_path, name), "not a regular file (a FIFO, socket or device)"))
                return None
            kept_open = into is not None and self.held.hold(into, name, fd)
        except OSError as e:
            self._fail(_join(dir_path, name), e)
            return None
        finally:
            if not kept_open:
                os.close(fd)
        return data

    def _decode(self, data: bytes, name: str, dir_path: str) -> str | None:
        text = data.decode("utf-8", "replace").strip()
        if not text:
            self.errors.append(ReadError(_join(dir_path, name), "empty file"))
            return None
        return text

    def _value(self, name: str, dir_fd: int | None, dir_path: str, parse):
        data = self._read(name, dir_fd, dir_path)
        return None if data is None else self._parse(data, name, dir_path, parse)

    def _parse(self, data: bytes, name: str, dir_path: str, parse):
        text = self._decode(data, name, dir_path)
        if text is None:
            return None
        try:
            return parse(text)
        except (Unparsable, RateError) as e:
            self.errors.append(ReadError(_join(dir_path, name), str(e)))
            return None

    def _dir(self, path: str, hold: bool = True) -> OpenDir | HeldDirContext:
        """`with reader._dir(path) as at`: at(name, parse) is the value() of path/name, with `path` opened once, or
        held open with its files while the device read is kept (heldfiles.py) and `hold` (what every poll reads)."""
        held = self.held.enter(path) if self.held is not None and hold else None
        return OpenDir(self, path) if held is None else HeldDirContext(self, held, path)

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
    def counter_dir(self, path: str, capped: list[str] | None, hold: bool = True) -> dict[str, int | None]:
        """A counter directory's values; `hold`: held open between polls while the device read is kept (heldfiles.py:
        hw_counters/, read every Nth poll and the largest, is not)."""
        values: dict[str, int | None] = {}
        known = self.names.get(path, False) if self.kept is not None else False
        if known is None:
            return values  # absent since the device was registered
        if known is not False and self.held is not None and hold:
            held = self.held.enter(path)
            if held is not None:
                self._counters(known, path, capped, values, None, held)
                return values
        # Same outcomes as _listdir(path), with the directory kept open for the reads.
        try:
            dir_fd = os.open(path, DIR_FLAGS)
        except FileNotFoundError:
            if self.kept is not None:
                self.names[path] = None
            return values
        except NotADirectoryError:
            self.errors.append(ReadError(path, "a file where a directory should be"))
            return values
        except OSError as e:
            self._fail(path, e)
            return values
        try:
            if known is False:
                try:
                    names = sorted(os.listdir(dir_fd))
                except OSError as e:
                    self._fail(path, e)
                    return values
                if self.kept is not None:
                    self.names[path] = names
            else:
                names = known
            self._counters(names, path, capped, values, dir_fd, None)
        finally:
            os.close(dir_fd)
        return values

    def _counters(
        self, names: list[str], path: str, capped: list | None, values: dict, dir_fd: int | None, held: HeldDir | None
    ) -> None:
        """counter_dir's reads of `names`, in the directory open as `dir_fd` or `held`."""
        read, facts = self._read, pma.facts
        for name in names:
            # lifespan: hw_counters cache time in ms, not a counter; dot-files: a writer's temp files
            if name == "lifespan" or name.startswith("."):
                continue
            data = read(name, dir_fd, path, listed=True) if held is None else read_held(self, held, name, path, True)
            if data is None:
                values[name] = None
                continue
            # Most of a poll is plain decimal counters: take those straight from the bytes
            # (bytes.isdigit() is ASCII only), exactly as _counter would; anything else,
            # including leading zeros past 20 digits, goes the general way.
            digits = data.strip()
            raw = int(digits) if digits.isdigit() and len(digits) <= 20 else None
            if raw is None or raw > _U64_MAX:
                raw = self._parse(data, name, path, _counter)
            if raw is None:
                values[name] = None
                continue
            ones, times = facts(name)
            if capped is not None and raw == ones:
                capped.append(name)
            values[name] = raw * times

    # -- ports, devices ---------------------------------------------------
    def port(self, port_dir: str, number: int, kept: tuple[str | None, str | None] = (None, None)) -> Port:
        """The port; `kept`: its (link layer, port GUID) as read at its device's registration, each read here
        where None (keptdevices.port_statics)."""
        j = os.path.join
        p = Port(number)
        link_layer, guid = kept
        with self._dir(port_dir) as at:
            p.state = at("state", _enum)
            p.phys_state = at("phys_state", _enum)
            p.rate = at("rate", parse_rate)
            p.link_layer = at("link_layer", parse_text) if link_layer is None else link_layer
            p.lid = at("lid", parse_hex)
            p.sm_lid = at("sm_lid", parse_hex)
            p.lmc = at("lid_mask_count", parse_int)
            p.cap_mask = at("cap_mask", parse_hex)
            p.port_guid = at("gids/0", _gid_guid) if guid is None else guid
        p.counters = self.counter_dir(j(port_dir, "counters"), p.capped)
        p.counters_ext = self.counter_dir(j(port_dir, "counters_ext"), p.capped)
        if self.hw_counters:
            p.hw_counters = self.counter_dir(j(port_dir, "hw_counters"), None, hold=False)
        return p

    def pci(self, dev_dir: str) -> PciLink | None:
        link = os.path.join(dev_dir, "device")
        if not os.path.isdir(link):
            return None  # software devices (rxe, siw) have no PCI function
        try:
            # The kernel's `device` links straight to the PCI function (../../../0000:81:00.0):
            # one readlink, where realpath would resolve every link of the path at each poll.
            address = os.path.basename(os.readlink(link))
        except OSError:  # not a link (a copied tree)
            address = ""
        if not PCI_ADDR_RE.match(address):  # another layout (`..`): where it leads, resolved
            address = os.path.basename(os.path.realpath(link))
        with self._dir(link) as at:
            return PciLink(
                address=address if PCI_ADDR_RE.match(address) else None,
                current_gts=at("current_link_speed", parse_pci_speed),
                current_width=at("current_link_width", parse_int),
                max_gts=at("max_link_speed", parse_pci_speed),
                max_width=at("max_link_width", parse_int),
                numa_node=at("numa_node", parse_numa),
            )

    def sriov(self, dev_dir: str) -> tuple[bool | None, str | None]:
        """(virtual function?, its physical function's PCI address), from `device/physfn`: the kernel
        links a VF's PCI function to its PF there, and gives no other function that link. False also
        where there is no PCI function at all: device() makes that None, once pci() has looked."""
        path = os.path.join(dev_dir, "device", "physfn")
        try:
            target = os.readlink(path)
        except (FileNotFoundError, NotADirectoryError):  # a PF, a function without SR-IOV, or no PCI function
            return False, None
        except OSError as e:
            if e.errno != errno.EINVAL:
                self._fail(path, e)
                return None, None
            target = path  # not a link: a copied tree holds the PF's directory here, its address lost
        if not os.path.isdir(path):
            gone = "points nowhere (the physical function is gone?)"
            self.errors.append(ReadError(path, gone if os.path.islink(path) else "not a link to a PCI function"))
            return None, None
        address = os.path.basename(target)
        if not PCI_ADDR_RE.match(address):  # another layout (`..`): where it leads, resolved
            address = os.path.basename(os.path.realpath(path))
        return True, address if PCI_ADDR_RE.match(address) else None

    def netdevs(self, dev_dir: str, ports: list[Port]) -> None:
        """Attach each network interface of the PCI function to its IB port (dev_port is 0-based)."""
        net = os.path.join(dev_dir, "device", "net")
        by_number = {p.number: p for p in ports}
        for ifname in self._listdir(net):
            dev_port = self.value(os.path.join(net, ifname, "dev_port"), parse_int)
            number = (dev_port + 1) if dev_port is not None else (ports[0].number if len(ports) == 1 else None)
            if number in by_number:
                by_number[number].netdevs.append(ifname)

    def device(self, name: str) -> Device | None:
        d = os.path.join(self.class_dir, name)
        if self.kept is None:
            return self._device(d, name)
        now = identity(d)
        kept = self.kept.get(d, now)
        self.vanished = False
        if kept is not None:
            self.names, self.held = kept.names, kept.held
            if kept.skip:
                return None
            dev = read_kept(self, d, name, kept)
            self.held = None  # (what is read after the devices holds its own: snapshot.read_host)
            if self.vanished:  # a counter file listed when the device was kept is gone: list them again
                self.kept.get(d, None)
            return dev
        self.names, self.held = {}, None
        start = len(self.errors)
        dev = self._device(d, name)
        if now is not None and self._static_errors is not None and self._static_errors == start:
            skip = dev is None and not self.virtual_functions
            self.kept.keep(d, now, dev, self.names, skip=skip)
        return dev

    def _device(self, d: str, name: str) -> Device | None:
        j = os.path.join
        dev = Device(name)
        self._static_errors = None  # len(errors) once what a KeptDevices keeps is read, when it all was
        if not os.path.isdir(d):
            # A class link whose device is gone (driver unloading as we read) has nothing to report.
            self.errors.append(ReadError(d, "device link points nowhere (device removed while being read?)"))
            return None
        dev.virtual_function, dev.physical_function = self.sriov(d)
        if dev.virtual_function and not self.virtual_functions:
            self._static_errors = len(self.errors)
            return None  # a VF comes and goes with `sriov_numvfs`: not one of the host's own ports
        with self._dir(d) as at:
            dev.node_type = at("node_type", _enum)
            for attr in ("node_guid", "sys_image_guid", "fw_ver", "hca_type", "board_id", "hw_rev", "node_desc"):
                setattr(dev, attr, at(attr, parse_text))
        dev.pci = self.pci(d)
        if dev.pci is None:
            dev.virtual_function = None  # no PCI function (rxe, siw): neither PF nor VF
        if self.hw_counters:
            dev.hw_counters = self.counter_dir(j(d, "hw_counters"), None, hold=False)
        ports_dir = j(d, "ports")
        entries = self._listdir(ports_dir)
        self._static_errors = len(self.errors)
        for entry in entries:
            if entry.startswith("."):
                continue
            if not (entry.isascii() and entry.isdigit()):  # int() would take '١' as port 1
                self.errors.append(ReadError(j(ports_dir, entry), "not a port number"))
                self._static_errors = None  # said at every poll
                continue
            dev.ports.append(self.port(j(ports_dir, entry), int(entry)))
        dev.ports.sort(key=lambda p: p.number)
        self.netdevs(d, dev.ports)
        return dev

    def devices(self) -> list[Device]:
        """Every device under class/infiniband; no such directory means no devices."""
        names = [name for name in self._listdir(self.class_dir) if not name.startswith(".")]
        if self.kept is not None:
            self.kept.retain(self.class_dir, names)
        devices = (self.device(name) for name in names)
        return [d for d in devices if d is not None]
