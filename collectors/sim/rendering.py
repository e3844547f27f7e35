"""Writing a simulated fabric's node trees, DIR/<node>/class/infiniband/... as sysfs shows them, through
tree.TreeWriter (only what changed is rewritten), and removing what vanished. A mixin of fabric.Fabric."""

from __future__ import annotations

import os

from ..roce import RECORDED
from .layout import SimDevice, SimNode, SimPort
from .pcitree import bus_link, trained
from .roce import ethtool_text
from .sriov import VfOutput
from .tree import device_files, pci_files, port_files, write_function


class TreeOutput(VfOutput):
    """fabric.Fabric's node trees on disk."""

    def _remove(self, key: str) -> None:
        j, w = os.path.join, self.writer
        thing = self.layout.by_key[key]
        if isinstance(thing, SimNode):
            w.remove(j(self.out, key))
            return
        node = key.split("/")[0]
        if isinstance(thing, SimDevice):
            w.remove(j(self.out, node, "class", "infiniband", thing.name))
            w.remove(j(self.out, node, "bus", "pci", "devices", thing.pci_addr))
            w.remove(j(self.out, node, thing.pci_rel))  # gone from the bus, as after a surprise removal
            return
        assert isinstance(thing, SimPort)
        dev = self.layout.by_key[key.rsplit("/", 1)[0]]
        w.remove(j(self.out, node, dev.dev_rel, "ports", str(thing.number)))
        w.remove(j(self.out, node, dev.pci_rel, "net", thing.netdev))

    def _write_tree(self) -> None:
        j, w, absent = os.path.join, self.writer, set(self.state["absent"])
        for node in self.layout.nodes:
            if node.name in absent:
                self.state.get("vfs", {}).pop(node.name, None)  # removed with the node's tree
                continue
            root = j(self.out, node.name)
            class_dir = j(root, "class", "infiniband")
            w.dir(class_dir)
            self._write_pci(node, root)
            for dev in node.devices:
                if dev.key in absent:
                    continue
                pci, ddir = j(root, dev.pci_rel), j(root, dev.dev_rel)
                w.dir(j(ddir, "ports"))
                # Paths by concatenation, not os.path.join, in the loops: a step writes hundreds of files.
                for rel, text in pci_files(dev, self._effects[dev.ports[0].key].pcie).items():
                    w.file(f"{pci}/{rel}", text)
                for rel, text in device_files(node.name, dev).items():
                    w.file(f"{ddir}/{rel}", text)
                w.link(j(ddir, "device"), f"../../../{dev.pci_addr}")
                w.link(j(root, "bus", "pci", "devices", dev.pci_addr), bus_link(dev.pci_rel))
                for port in dev.ports:
                    if port.key not in absent:
                        self._write_port(dev, port, pci, j(ddir, "ports", str(port.number)))
                # Linked last, so a reader never finds a device whose files are still being written.
                w.link(j(class_dir, dev.name), f"../../{dev.dev_rel}")
            self._write_vfs(node, root)

    def _write_pci(self, node: SimNode, root: str) -> None:
        """The node's bridges and GPUs (pcitree), their links as trained now: a switch uplink at what
        `uplink=` asks, the downstream port above an HCA at the card's own link."""
        self.writer.dir(os.path.join(root, "bus", "pci", "devices"))  # the HCAs link there too, after these
        effects = [self._effects[dev.ports[0].key] for dev in node.devices]
        uplinks = trained(node.pci, [eff.uplink for eff in effects])
        for fn in node.pci.functions:
            current = (fn.gts, fn.width)
            if fn.switch is not None:
                current = uplinks[fn.switch]
            elif fn.slot is not None:
                dev, (gts, width) = node.devices[fn.slot], effects[fn.slot].pcie
                current = (gts or dev.model.pcie_gts, width or dev.model.pcie_width)
            write_function(self.writer, root, fn, current)

    def _write_port(self, dev: SimDevice, port: SimPort, pci: str, pdir: str) -> None:
        j, w = os.path.join, self.writer
        net = j(pci, "net", port.netdev)
        w.dir(net)
        w.file(j(net, "dev_port"), f"{port.number - 1}\n")
        if dev.model.link_layer == "Ethernet":  # what the kernel answers SIOCETHTOOL with, recorded (sim/roce.py)
            w.file(j(net, RECORDED), ethtool_text(self.state["ports"][port.key]))
        w.dir(j(pdir, "counters"))
        w.dir(j(pdir, "gids"))
        if dev.model.old_pma:
            w.dir(j(pdir, "counters_ext"))
        if dev.model.hw_counters:
            w.dir(j(pdir, "hw_counters"))
        files = port_files(dev, port, self.state["ports"][port.key], self._effects[port.key], self._phys[port.key])
        for rel, text in files.items():
            w.file(f"{pdir}/{rel}", text)
