"""Writing node trees the way the kernel lays them out, atomically and only what changed.

A node tree is `<node>/devices/pci0000:NN/<root port>/<switch ports>/<pci>/{infiniband/<dev>/...,
net/<if>/dev_port}` (the bridges and GPUs: pcitree) with `<node>/class/infiniband/<dev>` a relative
symlink to the device directory and `<node>/bus/pci/devices/<pci>` one to the function, as on a
real host. Files end with a newline like the kernel's.
"""

from __future__ import annotations

import os
import shutil

from .faults import TMP_DIR, PortEffects
from .hardware import (
    COUNTERS,
    COUNTERS_EXT,
    HW_LIFESPAN_MS,
    NO_LINK_RATE,
    PCI_VENDOR,
    counter_bits,
    pcie_speed_text,
    rate_text,
)
from .layout import SM_LID, SimDevice, SimPort, port_gid
from .pcitree import HCA_CLASS, PciFn, bus_link, fn_files

_STATES = {True: "4: ACTIVE", False: "1: DOWN"}
_PHYS = {5: "5: LinkUp", 2: "2: Polling", 3: "3: Disabled"}


class TreeWriter:
    """Replaces files atomically (temp file + os.replace) and skips those whose content is unchanged.

    Temp files live in DIR/.simtmp, not beside their target: a reader listing
    counters/ must never see a half-named extra entry.
    """

    def __init__(self, out: str) -> None:
        self.out = out
        tmp_dir = os.path.join(out, TMP_DIR)
        os.makedirs(tmp_dir, exist_ok=True)
        self.tmp = os.path.join(tmp_dir, f"tree.{os.getpid()}")
        self.content: dict[str, str] = {}  # what we know each file holds
        self.dirs: set[str] = set()
        self.writes = 0

    def file(self, path: str, text: str) -> None:
        known = self.content.get(path)
        if known == text:
            return
        if known is None and _read(path) == text:  # a tree left by an earlier process
            self.content[path] = text
            return
        fd = os.open(self.tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)
        os.replace(self.tmp, path)
        self.content[path] = text
        self.writes += 1

    def dir(self, path: str) -> None:
        if path not in self.dirs:
            os.makedirs(path, exist_ok=True)
            self.dirs.add(path)

    def link(self, path: str, target: str) -> None:
        if self.content.get(path) == "->" + target:
            return
        try:
            current = os.readlink(path)
        except OSError:
            current = None
        if current != target:
            os.symlink(target, self.tmp)
            os.replace(self.tmp, path)
            self.writes += 1
        self.content[path] = "->" + target

    def remove(self, path: str) -> None:
        """Remove a file, symlink or directory tree, and forget what we knew under it."""
        if os.path.islink(path) or os.path.isfile(path):
            os.unlink(path)
        elif os.path.isdir(path):
            shutil.rmtree(path)
        prefix = path + os.sep
        self.content = {p: t for p, t in self.content.items() if p != path and not p.startswith(prefix)}
        self.dirs = {d for d in self.dirs if d != path and not d.startswith(prefix)}


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError):
        return None


def write_function(w: TreeWriter, root: str, fn: PciFn, current: tuple[float | None, int | None]) -> str:
    """A bridge's or GPU's directory below the node's `root` (pcitree.fn_files, its link as trained: `current`) and
    its bus/pci/devices link; its directory. Every simulated node's tree is written with it (rendering.TreeOutput), and
    the tests' trees of published machines (tests/pcie_trees.py)."""
    d = os.path.join(root, fn.rel)
    w.dir(d)
    for name, text in fn_files(fn, current).items():
        w.file(f"{d}/{name}", text)
    w.dir(os.path.join(root, "bus", "pci", "devices"))
    w.link(os.path.join(root, "bus", "pci", "devices", fn.address), bus_link(fn.rel))
    return d


def device_files(node: str, dev: SimDevice) -> dict[str, str]:
    m = dev.model
    return {
        "node_type": "1: CA\n",
        "node_guid": dev.guid + "\n",
        "sys_image_guid": dev.guid + "\n",
        "fw_ver": m.fw_ver + "\n",
        "hca_type": m.hca_type + "\n",
        "board_id": m.board_id + "\n",
        "hw_rev": m.hw_rev + "\n",
        "node_desc": f"{node} {dev.name}\n",
    }


def pci_files(dev: SimDevice, pcie: tuple[float | None, int | None]) -> dict[str, str]:
    m = dev.model
    gts, width = pcie
    return {
        "class": HCA_CLASS[m.link_layer] + "\n",
        "vendor": PCI_VENDOR + "\n",
        "device": m.pci_device + "\n",
        "current_link_speed": pcie_speed_text(gts or m.pcie_gts) + "\n",
        "max_link_speed": pcie_speed_text(m.pcie_gts) + "\n",
        "current_link_width": f"{width or m.pcie_width}\n",
        "max_link_width": f"{m.pcie_width}\n",
        "numa_node": f"{dev.numa}\n",
        "local_cpulist": dev.slot.cpus + "\n",
    }


def port_files(dev: SimDevice, port: SimPort, st: dict, eff: PortEffects, phys: int) -> dict[str, str]:
    """Every file of ports/<n>/, relative to it."""
    m = dev.model
    up = st["up"]
    ib = m.link_layer == "InfiniBand"
    files = {
        "state": _STATES[up] + "\n",
        "phys_state": _PHYS[phys] + "\n",
        "rate": (rate_text(eff.speed or dev.speed, eff.lanes or m.lanes) if up else NO_LINK_RATE) + "\n",
        "link_layer": m.link_layer + "\n",
        "lid": f"0x{port.lid:x}\n",
        "sm_lid": f"0x{SM_LID if ib else 0:x}\n",
        "sm_sl": "0\n",
        "lid_mask_count": "0\n",
        "cap_mask": f"0x{m.cap_mask:08x}\n",
        "gids/0": port_gid(dev, port) + "\n",
    }
    c = st["c"]
    for name in COUNTERS:
        files["counters/" + name] = f"{min(c[name], (1 << counter_bits(m, name)) - 1)}\n"
    if m.old_pma:
        for name, source in COUNTERS_EXT.items():
            files["counters_ext/" + name] = f"{min(c[source], (1 << 64) - 1)}\n"
    if m.hw_counters:
        for name, value in st["hw"].items():
            files["hw_counters/" + name] = f"{value}\n"
        files["hw_counters/lifespan"] = HW_LIFESPAN_MS + "\n"
    return files
