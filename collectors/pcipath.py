"""The PCIe path of every RDMA device, from its PCI function up to the root port.

The shape of the PCI hierarchy (which function sits below which bridge, classes, maximum links,
NUMA nodes) does not change while a host runs; it is read once per sysfs root and again when an
RDMA device appears that it does not hold. Each poll re-reads only the current speed and width
of each function on a path, and of each GPU: a link that retrains lower at run time (AER,
thermals) is seen within one poll. Parents come from the resolved directory of each function
under /sys/devices/pci*/ (the kernel nests a function's directory in its bridge's); functions
come from /sys/bus/pci/devices/*, and from each RDMA device's `device` link where that
directory is missing (simulated trees). One unreadable file or link costs only its value.

An RDMA device's own function is read each poll through class/infiniband/<dev>/device (sysfs.pci); the
tree takes those values (OWN) from that reading and never reads the same files again through
/sys/devices/pci*: a broken file would otherwise be reported twice under two names.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

from .facts import MAX_GPUS, MAX_PCIE_HOPS, MAX_PCIE_NEIGHBOURS
from .model import Device, ReadError
from .pcimodel import BRIDGE_PCI, Gpu, Hop, Neighbour, PciePath, is_gpu
from .sysfs import PCI_ADDR_RE, SysfsReader, parse_hex, parse_int, parse_numa, parse_pci_speed, parse_text

_MAX_DEPTH = 32  # PCIe allows at most 256 buses; no real hierarchy nests deeper than a few switches
_IDENTITY = {"class": parse_hex, "vendor": parse_hex}  # of every function: what tells a GPU (pcimodel.is_gpu)
_STATIC = {
    "class": parse_hex,
    "vendor": parse_hex,
    "device": parse_hex,
    "max_link_speed": parse_pci_speed,
    "max_link_width": parse_int,
    "numa_node": parse_numa,
    "local_cpulist": parse_text,
}
# The static files of an RDMA device's function that sysfs.pci reads, by the PciLink field that holds each. Its current
# link's two files come from the same reading (`live` in read_paths).
OWN = {"max_link_speed": "max_gts", "max_link_width": "max_width", "numa_node": "numa_node"}


@dataclass(slots=True)
class Function:
    """One PCI function of the cached shape: its place in the tree and the files that do not change."""

    address: str
    path: str  # its resolved directory
    parent: str | None  # the bridge above it; None: directly below the host bridge
    host_bridge: str | None  # pci0000:40; None where the tree is not laid out as the kernel's
    values: dict[str, object] = field(default_factory=dict)

    def get(self, name: str):
        return self.values.get(name)

    @property
    def class_code(self) -> int | None:
        value = self.values.get("class")
        return value >> 8 if isinstance(value, int) else None


class PciTree:
    """The host's PCI hierarchy as it was when read: functions by address, and what failed then."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.functions: dict[str, Function] = {}
        self.errors: list[ReadError] = []
        # Derived from the shape alone, so computed once: (chain, [(neighbour, via)]) by address,
        # and the relation of two functions.
        self.shapes: dict[str, tuple[list[str], list[tuple[str, str]]]] = {}
        self.relations: dict[tuple[str, str], str] = {}
        # The last path built for each device, with the links and peers it was built from: most polls
        # find every link as it was and reuse it.
        self.paths: dict[str, tuple[tuple, PciePath]] = {}

    # -- shape --------------------------------------------------------------
    def chain(self, address: str) -> list[str]:
        """The bridges above `address`, the root port first."""
        out: list[str] = []
        fn = self.functions.get(address)
        while fn is not None and fn.parent is not None and len(out) < _MAX_DEPTH:
            out.append(fn.parent)
            fn = self.functions.get(fn.parent)
        out.reverse()
        return out

    def host_bridge(self, address: str) -> str | None:
        chain = self.chain(address)
        top = self.functions.get(chain[0] if chain else address)
        return top.host_bridge if top is not None else None

    def shape(self, address: str) -> tuple[list[str], list[tuple[str, str]]]:
        """(the bridges above `address`, root port first; every function below them with the deepest one)."""
        if address not in self.shapes:
            chain = self.chain(address)
            below = [(a, via) for a, via in sorted(self.below(chain).items()) if a != address and a not in chain]
            self.shapes[address] = (chain, below)
        return self.shapes[address]

    def gpus(self) -> list[str]:
        """The GPUs' addresses in PCI bus order (nvidia-smi's GPU numbering); a BMC's VGA is none of them."""
        return sorted(a for a, f in self.functions.items() if is_gpu(f.class_code, f.get("vendor")))

    def below(self, bridges: list[str]) -> dict[str, str]:
        """Every function below one of `bridges`: the deepest of those bridges above it, by address."""
        wanted = set(bridges)
        out: dict[str, str] = {}
        for address in self.functions:
            deepest = None
            for b in self.chain(address):
                if b in wanted:
                    deepest = b
            if deepest is not None:
                out[address] = deepest
        return out


def _resolve(reader: SysfsReader, link: str) -> str | None:
    """Where a sysfs link leads, every link of the way resolved; None (recorded) where it cannot."""
    try:
        return os.path.realpath(link, strict=True)
    except FileNotFoundError:
        reader.errors.append(ReadError(link, "link points nowhere (the PCI function is gone?)"))
    except OSError as e:
        if e.errno == errno.ELOOP:
            reader.errors.append(ReadError(link, "a symlink loop: the link never reaches a PCI function"))
        else:
            reader._fail(link, e)
    return None


def _add(tree: PciTree, reader: SysfsReader, path: str) -> None:
    """`path` (a resolved function directory) and every bridge above it, up to the host bridge."""
    depth = 0
    while True:
        address = os.path.basename(path)
        if not PCI_ADDR_RE.match(address) or address in tree.functions:
            return
        parent_dir = os.path.dirname(path)
        parent = os.path.basename(parent_dir)
        is_fn = bool(PCI_ADDR_RE.match(parent))
        host = None
        if not is_fn:
            host = parent if parent.startswith("pci") else None
        tree.functions[address] = Function(address, path, parent if is_fn else None, host)
        if not is_fn:
            break
        depth += 1
        if depth > _MAX_DEPTH:
            reader.errors.append(ReadError(path, f"more than {_MAX_DEPTH} bridges above this function: a loop?"))
            return
        path = parent_dir


def _read_static(reader: SysfsReader, fn: Function, files: dict) -> None:
    with reader._dir(fn.path, hold=False) as at:  # (read once a shape: not held open as the live link's files are)
        for name, parse in files.items():
            if name not in fn.values:
                fn.values[name] = at(name, parse)


def scan(reader: SysfsReader, rdma_links: list[str], own: dict[str, dict[str, object]]) -> PciTree:
    """Read the shape of the tree under reader.root; `rdma_links` are the RDMA devices' `device` links, `own` their
    functions' OWN values as this poll read them, by address."""
    start = len(reader.errors)
    tree = PciTree(reader.root)
    bus = os.path.join(reader.root, "bus", "pci", "devices")
    for name in reader._listdir(bus):
        if PCI_ADDR_RE.match(name):
            path = _resolve(reader, os.path.join(bus, name))
            if path is not None:
                _add(tree, reader, path)
    for link in rdma_links:
        path = _resolve(reader, link)
        if path is not None:
            _add(tree, reader, path)
    for address, values in own.items():
        if address in tree.functions:
            tree.functions[address].values.update(values)  # _read_static reads only what a function lacks
    # The class and vendor of every function, to find the GPUs; the rest only where a path or a GPU needs it.
    for fn in tree.functions.values():
        _read_static(reader, fn, _IDENTITY)
    wanted = set(tree.gpus())
    for link in rdma_links:
        address = os.path.basename(os.path.realpath(link))
        if address in tree.functions:
            wanted.add(address)
    for address in list(wanted):
        wanted.update(tree.chain(address))
    for address in sorted(wanted):
        _read_static(reader, tree.functions[address], _STATIC)
    tree.errors = reader.errors[start:]
    return tree


class KeptTrees:
    """sysfs root -> the shape of its PCI tree, in this process: the agent polls the same roots over and over.
    Owner: this module; one entry per root an agent reads (one, or a few simulated nodes); rescanned when a device
    it does not hold appears; forget() drops them all (the tests' conftest, after each test)."""

    __slots__ = ("trees",)

    def __init__(self) -> None:
        self.trees: dict[str, PciTree] = {}

    def forget(self) -> None:
        self.trees = {}


TREES = KeptTrees()


def _own(devices: list[Device]) -> dict[str, dict[str, object]]:
    """The OWN values of each RDMA device's function as sysfs.pci read them this poll, by address."""
    return {
        d.pci.address: {name: getattr(d.pci, attr) for name, attr in OWN.items()}
        for d in devices
        if d.pci is not None and d.pci.address
    }


def _tree_for(reader: SysfsReader, devices: list[Device]) -> PciTree:
    tree = TREES.trees.get(reader.root)
    own = _own(devices)
    if tree is None or any(a not in tree.functions for a in own):
        links = [os.path.join(reader.class_dir, d.name, "device") for d in devices if d.pci is not None]
        tree = scan(reader, links, own)
        TREES.trees[reader.root] = tree
        return tree
    reader.errors.extend(tree.errors)  # still true: a dangling link stays dangling until a rescan
    changed = False
    for address, values in own.items():
        fn = tree.functions[address]
        if any(name not in fn.values or fn.values[name] != value for name, value in values.items()):
            fn.values.update(values)
            changed = True
    if changed:  # a file that broke or mended since: what was derived from the old values goes
        tree.relations.clear()
        tree.paths.clear()
    return tree


def _live(reader: SysfsReader, fn: Function) -> tuple[float | None, int | None]:
    with reader._dir(fn.path) as at:
        return at("current_link_speed", parse_pci_speed), at("current_link_width", parse_int)


def read_paths(reader: SysfsReader, devices: list[Device]) -> tuple[PciTree | None, list[Gpu]]:
    """Set each device's pcie_path; return the tree and the host's GPUs with their relation to each device."""
    if not any(d.pci is not None and d.pci.address for d in devices) and not os.path.isdir(
        os.path.join(reader.root, "bus", "pci", "devices")
    ):
        return None, []
    tree = _tree_for(reader, devices)
    by_address = {d.pci.address: d for d in devices if d.pci is not None and d.pci.address}
    live: dict[str, tuple[float | None, int | None]] = {
        a: (d.pci.current_gts, d.pci.current_width) for a, d in by_address.items()
    }

    def link(address: str) -> tuple[float | None, int | None]:
        if address not in live:
            live[address] = _live(reader, tree.functions[address])
        return live[address]

    # Only functions known to be physical: a VF rides its PF's link, and one whose physfn cannot be
    # read must not change another device's path.
    peers = {a: d for a, d in by_address.items() if d.virtual_function is False}
    for address, dev in by_address.items():
        if address not in tree.functions:
            continue
        dev.pcie_path = _within_limits(reader, tree.functions[address].path, _path(tree, address, peers, link))
    gpus = []
    from .pcitopo import relation  # the relation needs only the shape: one module each

    for address in tree.gpus():
        fn = tree.functions[address]
        cur = link(address)
        nics = {d.name: relation(tree, address, a) for a, d in sorted(by_address.items()) if a in tree.functions}
        gpus.append(Gpu(**_function(address, fn, cur), nics=dict(sorted(nics.items(), key=lambda kv: _natural(kv[0])))))
    if len(gpus) > MAX_GPUS:
        where = os.path.join(reader.root, "bus", "pci", "devices")
        reader.errors.append(ReadError(where, f"{len(gpus)} GPUs, the first {MAX_GPUS} sent"))
        gpus = gpus[:MAX_GPUS]
    return tree, gpus


def _within_limits(reader: SysfsReader, where: str, path: PciePath) -> PciePath | None:
    """What a snapshot carries of `path` (collectors.facts' limits, which the server holds it to)."""
    bridges = len(path.hops) - 1  # the first hop is the function itself
    if bridges > MAX_PCIE_HOPS:
        reader.errors.append(ReadError(where, f"{bridges} bridges above it, more than {MAX_PCIE_HOPS}: path left out"))
        return None
    if len(path.neighbours) > MAX_PCIE_NEIGHBOURS:
        seen = len(path.neighbours)
        reader.errors.append(ReadError(where, f"{seen} functions below its path, the first {MAX_PCIE_NEIGHBOURS} sent"))
        return PciePath(path.hops, path.host_bridge, path.neighbours[:MAX_PCIE_NEIGHBOURS])
    return path


def _function(address: str, fn: Function, current: tuple) -> dict:
    """The PciFunction fields of `fn`, with its current (speed, width) as read this poll."""
    return {
        "address": address,
        "class_code": fn.class_code,
        "vendor": fn.get("vendor"),
        "device": fn.get("device"),
        "current_gts": current[0],
        "current_width": current[1],
        "max_gts": fn.get("max_link_speed"),
        "max_width": fn.get("max_link_width"),
        "numa_node": fn.get("numa_node"),
        "local_cpulist": fn.get("local_cpulist"),
    }


def _natural(name: str) -> tuple:
    """mlx5_2 before mlx5_10."""
    head = name.rstrip("0123456789")
    tail = name[len(head) :]
    return (head, int(tail) if tail else -1)


def _kind(tree: PciTree, fn: Function, first: bool) -> str:
    if first:
        return "function"
    if fn.parent is None:
        return "root port"
    return "switch port" if fn.class_code in (BRIDGE_PCI, None) else "bridge"


def _path(tree: PciTree, address: str, by_address: dict[str, Device], link) -> PciePath:
    chain, below = tree.shape(address)
    addresses = [address, *reversed(chain)]
    key = (tuple(link(a) for a in addresses), tuple((o, by_address[o].name) for o, _ in below if o in by_address))
    cached = tree.paths.get(address)
    if cached is not None and cached[0] == key:
        return cached[1]
    hops = []
    for i, (a, cur) in enumerate(zip(addresses, key[0], strict=True)):
        fn = tree.functions[a]
        hops.append(Hop(**_function(a, fn, cur), kind=_kind(tree, fn, i == 0)))
    neighbours = []
    for other, via in below:
        fn = tree.functions[other]
        dev = by_address.get(other)
        if dev is None and not is_gpu(fn.class_code, fn.get("vendor")):
            continue
        kind = "rdma" if dev is not None else "gpu"
        neighbours.append(Neighbour(other, kind, dev.name if dev else None, via))
    path = PciePath(tuple(hops), tree.host_bridge(address), tuple(neighbours))
    tree.paths[address] = (key, path)
    return path
