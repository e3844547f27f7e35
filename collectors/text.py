"""`snapshot --format text`: an ibstat-like summary a NOC engineer recognises."""

from __future__ import annotations

import os

from . import pcie, pcitopo
from .facts import ERROR_COUNTERS, IBSTAT_STATES
from .local import local_findings
from .model import ReadError, Snapshot


def safe(value: object) -> str:
    """Device strings (node_desc is settable by root) must not drive the terminal."""
    text = "-" if value is None else str(value)
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _group_errors(errors: list[ReadError]) -> list[tuple[str, str]]:
    """One line per directory and reason when many files fail alike (an iWARP port's 17 N/A counters)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for e in errors:
        groups.setdefault((os.path.dirname(e.path), e.reason), []).append(e.path)
    out = []
    for (directory, reason), paths in groups.items():
        if len(paths) > 3:
            out.append((f"{directory}/* ({len(paths)} files)", reason))
        else:
            out.extend((path, reason) for path in paths)
    return out


def render_text(snap: Snapshot) -> str:
    lines = [f"Host {safe(snap.host)} ({len(snap.devices)} RDMA devices, pyverbs: {snap.pyverbs})"]
    if not snap.devices:
        lines.append(f"No InfiniBand devices under {safe(snap.sysfs_root)}/class/infiniband")
    for dev in snap.devices:
        lines.append(f"CA '{safe(dev.name)}'")
        lines.append(f"\tCA type: {safe(dev.hca_type)}")
        lines.append(f"\tNumber of ports: {len(dev.ports)}")
        lines.append(f"\tFirmware version: {safe(dev.fw_ver)}")
        lines.append(f"\tHardware version: {safe(dev.hw_rev)}")
        lines.append(f"\tNode GUID: {safe(dev.node_guid)}")
        lines.append(f"\tSystem image GUID: {safe(dev.sys_image_guid)}")
        lines.append(f"\tNode description: {safe(dev.node_desc)}")
        if dev.virtual_function:
            pf = dev.physical_function
            lines.append(f"\tSR-IOV virtual function of {safe(pf) if pf else 'a physical function of unknown address'}")
        for d in dev.disagreements:
            lines.append(f"\tsysfs and verbs disagree on {d.field}: sysfs {safe(d.sysfs)}, verbs {safe(d.verbs)}")
        if dev.pci is not None:
            p = dev.pci
            lines.append(
                f"\tPCIe: {safe(p.address)} {pcie.describe(p.current_gts, p.current_width)}"
                f" (max {pcie.describe(p.max_gts, p.max_width)}), NUMA node {safe(p.numa_node)}"
            )
        if dev.pcie_path is not None:
            lines.append(f"\tPCIe path: {_path_text(dev.name, dev.pcie_path)}")
        for port in dev.ports:
            lines.append(f"\tPort {port.number}:")
            state = IBSTAT_STATES.get(port.state.id, port.state.name) if port.state else "-"
            lines.append(f"\t\tState: {state}")
            lines.append(f"\t\tPhysical state: {safe(port.phys_state.name if port.phys_state else None)}")
            rate = port.rate
            rate_text = "-" if rate is None else f"{rate.describe()}".replace("Gb/s", "Gb/sec")
            lines.append(f"\t\tRate: {rate_text}")
            lines.append(f"\t\tBase lid: {safe(port.lid)}")
            lines.append(f"\t\tLMC: {safe(port.lmc)}")
            lines.append(f"\t\tSM lid: {safe(port.sm_lid)}")
            if port.cap_mask is not None:
                lines.append(f"\t\tCapability mask: 0x{port.cap_mask:08x}")
            lines.append(f"\t\tLink layer: {safe(port.link_layer)}")
            if port.netdevs:
                lines.append(f"\t\tNetdev: {', '.join(safe(n) for n in port.netdevs)}")
            if port.verbs is not None and port.verbs.active_mtu:
                lines.append(f"\t\tActive MTU: {port.verbs.active_mtu} (max {safe(port.verbs.max_mtu)})")
            c = port.counters
            data = [
                f"{label} {_size(c[name])}"
                for label, name in (("rx", "port_rcv_data"), ("tx", "port_xmit_data"))
                if c.get(name) is not None
            ]
            if data:
                lines.append(f"\t\tData: {', '.join(data)} since counters were last reset")
            errors = [f"{name} {c[name]}" for name in ERROR_COUNTERS if c.get(name)]
            lines.append(f"\t\tError counters: {', '.join(errors) if errors else 'all zero'}")
            if port.lossless is not None:
                lines.append(f"\t\tLossless Ethernet: {_lossless_text(port.lossless)}")
            for d in port.disagreements:
                lines.append(f"\t\tsysfs and verbs disagree on {d.field}: sysfs {safe(d.sysfs)}, verbs {safe(d.verbs)}")
    if snap.gpus:
        lines.extend(_matrix_text(snap))
    findings = local_findings(snap)
    if findings:
        lines.append("Degradation seen on this host:")
        for f in findings:
            where = f"{safe(f.device)}/{f.port}" if f.port is not None else safe(f.device)
            lines.append(f"\t{where}: {f.message}")
    if snap.errors:
        lines.append(f"Unreadable files ({len(snap.errors)}):")
        lines.extend(f"\t{safe(where)}: {safe(reason)}" for where, reason in _group_errors(snap.errors))
    return "\n".join(lines) + "\n"


def _lossless_text(x) -> str:
    """A RoCE port's PFC pause and congestion counters (collectors.roce.Lossless), since they were last reset."""
    parts = []
    for direction, frames, micros in (
        ("received", x.rx_pause, x.rx_pause_duration),
        ("sent", x.tx_pause, x.tx_pause_duration),
    ):
        paused = [
            f"prio{p} {n} ({us / 1e6:.1f} s)" if us is not None else f"prio{p} {n}"
            for p, n, us in zip(range(len(frames)), frames, micros, strict=True)
            if n
        ]
        parts.append(f"PFC pause {direction}: {', '.join(paused) or 'none'}")
    if x.pause_storm_warnings is not None or x.pause_storm_errors is not None:
        parts.append(f"pause storms: {safe(x.pause_storm_warnings)} warning, {safe(x.pause_storm_errors)} error")
    parts.append(
        f"CNPs sent {safe(x.cnp_sent)}, handled {safe(x.cnp_handled)}; rx_discards_phy {safe(x.rx_discards_phy)}"
    )
    return "; ".join(parts)


def _path_text(name: str, path) -> str:
    """`0000:41:00.0 mlx5_0 Gen4 x16 ← 0000:40:01.1 switch port Gen4 x8 ← 0000:00:01.0 root port Gen4 x16`."""
    hops = []
    for h in path.hops:
        what = safe(name) if h.kind == "function" else h.kind
        hops.append(f"{safe(h.address)} {what} {pcie.describe(h.current_gts, h.current_width)}")
    text = " \u2190 ".join(hops)
    if path.host_bridge:
        text += f" ({safe(path.host_bridge)})"
    shared = [
        f"{'GPU' if n.kind == 'gpu' else safe(n.name)} {safe(n.address)} below {safe(n.via)}" for n in path.neighbours
    ]
    return text + (f"; sharing it: {', '.join(shared)}" if shared else "")


def _matrix_text(snap: Snapshot) -> list[str]:
    """The GPU x RDMA device matrix in nvidia-smi topo -m words."""
    names, rows = pcitopo.matrix(snap.gpus)
    width = max([12, *(len(n) + 1 for n in names)])
    out = [f"GPUs and RDMA devices (nvidia-smi topo -m words; {len(snap.gpus)} GPUs):"]
    out.append("\t" + " " * 14 + "".join(safe(n).ljust(width) for n in names) + "NUMA node")
    for i, (g, row) in enumerate(zip(snap.gpus, rows, strict=True)):
        label = f"GPU{i} {g.address[5:]}"
        out.append("\t" + label.ljust(14) + "".join(c.ljust(width) for c in row) + safe(g.numa_node))
    out.append("\tPIX one PCIe switch or bridge, PXB several switches, PHB through the host bridge (CPU),")
    out.append("\tNODE across host bridges of one NUMA node, SYS across NUMA nodes (sockets) or NUMA node unknown")
    return out
