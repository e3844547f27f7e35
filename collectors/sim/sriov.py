"""SR-IOV virtual functions of the simulated HCAs (`NODE[/DEVICE]:vfs=N`), written as the kernel shows them.

Each VF is a PCI function of its own beside its PF (`0000:3b:00.1`, `0000:3b:00.2`, ...) with a
`physfn` link back to the PF, which has `virtfn<i>` links, `sriov_numvfs` and `sriov_totalvfs`;
and an RDMA device of its own, named after the PFs in probe order (two HCAs with 4 VFs each:
mlx5_2 .. mlx5_9). Its ports mirror the physical port's link; its PMA counters read
`N/A (no PMA)` (docs/infiniband.md §1). A mixin of rendering.TreeOutput: the VFs
written are remembered in the state (`vfs`), so those that go are removed, in a later process too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from .faults import MAX_VFS
from .hardware import COUNTERS, PCI_VENDOR
from .layout import PciPlaced, SimDevice, SimNode, SimPort, guid_int
from .pcitree import HCA_CLASS, bus_link
from .tree import device_files, port_files

NO_PMA = "N/A (no PMA)\n"
# What a VF's PCI function keeps of the PF's port files: the link it shares, not the PF's identity.
_SHARED_PORT_FILES = ("state", "phys_state", "rate", "link_layer", "sm_lid", "sm_sl", "lid_mask_count", "cap_mask")


@dataclass(frozen=True, slots=True)
class SimVf(PciPlaced):
    name: str  # mlx5_2
    pf: SimDevice
    index: int  # virtfn<index>
    pci_addr: str  # 0000:3b:00.1

    @property
    def guid(self) -> int:
        # The PF's GUID with the byte above its serial set to 1 + index: unique, and never another HCA's.
        return guid_int(self.pf.guid) ^ ((self.index + 1) << 24)

    @property
    def pci_dir(self) -> str:
        return self.pf.pci_dir  # beside its PF, below the same downstream port

    def ident(self) -> list:
        return [self.name, self.pf.key, self.index]


def vf_address(pf_addr: str, index: int) -> str:
    """The VF's PCI address: the functions after the PF's on its bus (ARI routing ids, 8 per slot)."""
    domain_bus = pf_addr.rsplit(":", 1)[0]
    routing = 1 + index
    return f"{domain_bus}:{routing // 8:02x}.{routing % 8}"


def plan(node: SimNode, vfs_of) -> list[SimVf]:
    """The node's VFs: `vfs_of(pf)` each (0 for a PF hidden or without the fault), named in probe order."""
    out: list[SimVf] = []
    for pf in node.devices:
        for index in range(vfs_of(pf)):
            name = f"{pf.model.driver}_{len(node.devices) + len(out)}"
            out.append(SimVf(name, pf, index, vf_address(pf.pci_addr, index)))
    return out


def _hex_guid(value: int) -> str:
    h = f"{value:016x}"
    return ":".join(h[i : i + 4] for i in range(0, 16, 4))


def vf_device_files(node: str, vf: SimVf) -> dict[str, str]:
    files = device_files(node, vf.pf)
    part = int(vf.pf.model.pci_device, 16) + 1  # the VF's PCI device id (ConnectX-3/-6: the PF's + 1)
    files.update(node_guid=_hex_guid(vf.guid) + "\n", hca_type=f"MT{part}\n", node_desc=f"{node} {vf.name}\n")
    return files


def vf_pci_files(vf: SimVf) -> dict[str, str]:
    """A VF has no PCIe link of its own: the kernel prints `Unknown` for its speeds."""
    return {
        "class": HCA_CLASS[vf.pf.model.link_layer] + "\n",
        "vendor": PCI_VENDOR + "\n",
        "device": f"0x{int(vf.pf.model.pci_device, 16) + 1:04x}\n",
        "current_link_speed": "Unknown\n",
        "max_link_speed": "Unknown\n",
        "current_link_width": "0\n",
        "max_link_width": "0\n",
        "numa_node": f"{vf.pf.numa}\n",
        "local_cpulist": vf.pf.slot.cpus + "\n",
    }


def vf_port_files(vf: SimVf, port: SimPort, pf_files: dict[str, str]) -> dict[str, str]:
    files = {name: pf_files[name] for name in _SHARED_PORT_FILES}
    gid = (0xFE80 << 112) | (vf.guid + port.number)
    h = f"{gid:032x}"
    files["lid"] = "0x0\n"  # unassigned: the subnet manager gives VFs none here
    files["gids/0"] = ":".join(h[i : i + 4] for i in range(0, 32, 4)) + "\n"
    files.update({f"counters/{name}": NO_PMA for name in COUNTERS})
    return files


class VfOutput:
    """rendering.TreeOutput's VFs: written after the PFs, removed when their fault goes."""

    def _write_vfs(self, node: SimNode, root: str) -> None:
        j, w = os.path.join, self.writer
        written = self.state.get("vfs", {})  # node -> [[name, PF key, index]] on disk now
        wanted = plan(node, lambda pf: 0 if self._hidden(pf.key) else self._effects[pf.ports[0].key].vfs)
        keep = [vf.ident() for vf in wanted]
        for name, pf_key, index in written.get(node.name, []):
            if [name, pf_key, index] not in keep:
                pf = self.layout.by_key[pf_key]
                w.remove(j(root, "class", "infiniband", name))
                w.remove(j(root, pf.pci_rel, f"virtfn{index}"))
                w.remove(j(root, "bus", "pci", "devices", vf_address(pf.pci_addr, index)))
                w.remove(j(root, pf.pci_dir, vf_address(pf.pci_addr, index)))
        for pf in node.devices:
            count = sum(1 for vf in wanted if vf.pf is pf)
            if self._hidden(pf.key):
                continue  # gone from the bus, its VFs with it
            if count or any(pf_key == pf.key for _, pf_key, _ in written.get(node.name, [])):
                w.file(j(root, pf.pci_rel, "sriov_totalvfs"), f"{MAX_VFS}\n")
                w.file(j(root, pf.pci_rel, "sriov_numvfs"), f"{count}\n")
        for vf in wanted:
            self._write_vf(node, root, vf)
        if keep:
            self.state.setdefault("vfs", {})[node.name] = keep
        else:
            written.pop(node.name, None)

    def _write_vf(self, node: SimNode, root: str, vf: SimVf) -> None:
        j, w = os.path.join, self.writer
        pci, ddir = j(root, vf.pci_rel), j(root, vf.dev_rel)
        w.dir(j(ddir, "ports"))
        for rel, text in vf_pci_files(vf).items():
            w.file(j(pci, rel), text)
        w.link(j(pci, "physfn"), f"../{vf.pf.pci_addr}")
        w.link(j(root, vf.pf.pci_rel, f"virtfn{vf.index}"), f"../{vf.pci_addr}")
        for rel, text in vf_device_files(node.name, vf).items():
            w.file(j(ddir, rel), text)
        w.link(j(ddir, "device"), f"../../../{vf.pci_addr}")
        w.link(j(root, "bus", "pci", "devices", vf.pci_addr), bus_link(vf.pci_rel))
        for port in vf.pf.ports:
            if self._hidden(port.key):
                continue  # the physical port vanished: its VFs' ports with it
            pdir = j(ddir, "ports", str(port.number))
            w.dir(j(pdir, "counters"))
            w.dir(j(pdir, "gids"))
            pf_files = port_files(
                vf.pf, port, self.state["ports"][port.key], self._effects[port.key], self._phys[port.key]
            )
            for rel, text in vf_port_files(vf, port, pf_files).items():
                w.file(j(pdir, rel), text)
        w.link(j(root, "class", "infiniband", vf.name), f"../../{vf.dev_rel}")
