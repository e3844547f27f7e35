"""The simulated fabric: state on disk, faults, and one step of simulated time.

DIR/.simstate.json holds everything a later process needs to continue (options,
simulated clock, step number, raw counter totals, what is vanished, which resets
were applied), so `simulate --once` continues where the last step stopped and the
same seed and steps give byte-identical trees. No wall-clock time goes into a value.
"""

from __future__ import annotations

import json
import os

from . import faults as fl
from .hardware import pcie_usable_gbps, rate_gbps
from .layout import Layout, SimDevice, SimNode, SimPort, build
from .traffic import FLAP_RECOVERIES_PER_S, Profile, accrue, new_port_state, profile, step_traffic, zero
from .tree import TreeWriter, device_files, pci_files, port_files

STATE_FILE = ".simstate.json"
STATE_VERSION = 1


class SimError(ValueError):
    """A simulator directory or option that cannot be used, said in words."""


def _ancestry(key: str) -> list[str]:
    parts = key.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _capacity(dev: SimDevice, eff: fl.PortEffects) -> float:
    """Bytes/s the port can move: its link rate, or the HCA's PCIe link when that is slower."""
    m = dev.model
    link = rate_gbps(eff.speed or dev.speed, eff.lanes or m.lanes)
    pcie = pcie_usable_gbps(eff.pcie[0] or m.pcie_gts, eff.pcie[1] or m.pcie_width)
    return min(link, pcie) * 1e9 / 8


class Fabric:
    """N simulated nodes under `out`. Use create(), load() or open(); then step() and the fault methods."""

    def __init__(self, out: str, layout: Layout, state: dict) -> None:
        self.out = out
        self.layout = layout
        self.state = state
        self.writer = TreeWriter(out)
        self.active: list[tuple[int, fl.Fault]] = []
        self.warning: str | None = None  # why faults.json was last ignored, if it was
        self._profiles: dict[str, Profile] = {}
        self._effects: dict[str, fl.PortEffects] = {}
        self._phys: dict[str, int] = {}

    # -- construction -----------------------------------------------------------------
    @classmethod
    def create(cls, out: str, nodes: int, ports: int | None = None, seed: int = 0, *, hcas: int | None = None):
        """A fresh fabric at simulated time 0, written to disk; replaces a fabric already in `out`."""
        layout = build(seed, nodes, ports, hcas)
        os.makedirs(out, exist_ok=True)
        old = _read_state(out)
        if old is not None:  # remove only the node trees the old fabric wrote
            old_layout = build(**old["config"])
            for node in old_layout.nodes:
                TreeWriter(out).remove(os.path.join(out, node.name))
        state = {
            "version": STATE_VERSION,
            "config": {"seed": seed, "nodes": nodes, "ports": ports, "hcas": hcas},
            "clock": 0.0,
            "step": 0,
            "absent": [],
            "resets_done": [],
            "ports": {},
        }
        fabric = cls(out, layout, state)
        no_faults = fl.PortEffects()
        for _, dev, port in layout.ports():
            m = dev.model
            roce = m.link_layer == "Ethernet"
            state["ports"][port.key] = new_port_state(
                fabric._profile(port.key), _capacity(dev, no_faults), m.hw_counters, roce
            )
        fl.write_atomic(os.path.join(out, fl.FAULTS_FILE), b'{"version": 1, "next_id": 1, "faults": []}\n')
        fabric._save()  # before the tree: whoever sees a node can already add faults
        fabric.render()
        return fabric

    @classmethod
    def load(cls, out: str) -> Fabric:
        state = _read_state(out)
        if state is None:
            raise SimError(f"{out} holds no simulated fabric (no {STATE_FILE}); run `simulate --out {out}` first")
        return cls(out, build(**state["config"]), state)

    @classmethod
    def open(
        cls,
        out: str,
        nodes: int,
        ports: int | None = None,
        seed: int = 0,
        *,
        hcas: int | None = None,
        fresh: bool = False,
    ) -> Fabric:
        """Continue the fabric in `out` when its options match; create one when there is none (or `fresh`)."""
        state = _read_state(out)
        if state is None or fresh:
            return cls.create(out, nodes, ports, seed, hcas=hcas)
        want = {"seed": seed, "nodes": nodes, "ports": ports, "hcas": hcas}
        if state["config"] != want:
            have = " ".join(f"--{k} {v}" for k, v in state["config"].items() if v is not None)
            raise SimError(
                f"{out} already holds a simulated fabric ({have}); pass the same options to continue it, "
                "or --fresh to start a new one there"
            )
        return cls(out, build(**state["config"]), state)

    # -- faults -------------------------------------------------------------------------
    def add_fault(self, *specs: str) -> list[str]:
        """Add faults (checked against this fabric); they take effect at the next step() or render()."""
        return fl.edit(self.out, self.layout, add=specs)

    def remove_fault(self, *specs: str) -> list[str]:
        return fl.edit(self.out, self.layout, remove=specs)

    def clear_faults(self) -> list[str]:
        return fl.edit(self.out, self.layout, clear=True)

    def faults(self) -> list[str]:
        return [f.spec for _, f in fl.load(self.out, self.layout)]

    # -- time -------------------------------------------------------------------------
    @property
    def clock(self) -> float:
        return self.state["clock"]

    @property
    def steps(self) -> int:
        return self.state["step"]

    def step(self, seconds: float) -> None:
        """Advance the simulated clock by `seconds`: re-read faults, move counters, rewrite what changed."""
        if not seconds > 0:
            raise SimError("a step must last more than 0 simulated seconds")
        st = self.state
        self._reload_faults()
        st["step"] += 1
        self._sync()
        seed, step, t_mid = st["config"]["seed"], st["step"], st["clock"] + seconds / 2
        for _, dev, port in self.layout.ports():
            if self._hidden(port.key):
                continue  # a vanished port counts nothing
            ps, eff = st["ports"][port.key], self._effects[port.key]
            if ps["up"]:
                roce = dev.model.link_layer == "Ethernet"
                step_traffic(
                    ps, self._profile(port.key), seed, port.key, step, t_mid, seconds,
                    capacity=_capacity(dev, eff), saturated=eff.saturate, roce=roce,
                )  # fmt: skip
                accrue(ps, "symbol_error", eff.symbol_rate, seconds)  # no symbols without a link
                for counter, rate in eff.error_rates.items():
                    accrue(ps, counter, rate, seconds)
            if eff.flap:  # retraining goes on in the down steps too: a steady rate in simulated time
                accrue(ps, "link_error_recovery", FLAP_RECOVERIES_PER_S, seconds)
        st["clock"] += seconds
        self._write_tree()
        self._save()

    def render(self) -> None:
        """Apply the current faults to the tree without moving time (start-up of a running simulator)."""
        self._reload_faults()
        self._sync()
        self._write_tree()
        self._save()

    # -- internals ----------------------------------------------------------------------
    def _profile(self, key: str) -> Profile:
        prof = self._profiles.get(key)
        if prof is None:
            prof = self._profiles[key] = profile(self.state["config"]["seed"], key)
        return prof

    def _reload_faults(self) -> None:
        try:
            self.active = fl.load(self.out, self.layout)
            self.warning = None
        except fl.FaultError as e:
            self.warning = f"{e}; keeping the faults read before"

    def _hidden(self, key: str, absent: set[str] | None = None) -> bool:
        absent = set(self.state["absent"]) if absent is None else absent
        return any(k in absent for k in _ancestry(key))

    def _sync(self) -> None:
        """Bring link states, vanished parts and one-shot resets in line with the active faults."""
        st = self.state
        before, now = set(st["absent"]), fl.vanished(self.active)
        for key in sorted(now - before):
            self._remove(key)
        back = before - now
        done = set(st["resets_done"])
        for *_, port in self.layout.ports():
            eff = self._effects[port.key] = fl.effects(self.active, port.key)
            if self._hidden(port.key, now):
                continue
            ps = st["ports"][port.key]
            up, self._phys[port.key] = fl.port_link(eff, st["step"])
            if any(k in back for k in _ancestry(port.key)):
                zero(ps, hw=True)  # it comes back as after a reboot or driver reload
            elif ps["up"] and not up:
                ps["c"]["link_downed"] += 1
            ps["up"] = up
            if any(fid not in done for fid in eff.reset_ids):
                zero(ps, hw=False)  # perfquery -R clears the PMA counters, not hw_counters
        st["resets_done"] = sorted(fid for fid, f in self.active if f.kind == "reset")
        st["absent"] = sorted(now)

    def _remove(self, key: str) -> None:
        j, w = os.path.join, self.writer
        thing = self.layout.by_key[key]
        if isinstance(thing, SimNode):
            w.remove(j(self.out, key))
            return
        node = key.split("/")[0]
        if isinstance(thing, SimDevice):
            w.remove(j(self.out, node, "class", "infiniband", thing.name))
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
                continue
            root = j(self.out, node.name)
            class_dir = j(root, "class", "infiniband")
            w.dir(class_dir)
            for dev in node.devices:
                if dev.key in absent:
                    continue
                pci, ddir = j(root, dev.pci_rel), j(root, dev.dev_rel)
                w.dir(j(ddir, "ports"))
                for rel, text in pci_files(dev, self._effects[dev.ports[0].key].pcie).items():
                    w.file(j(pci, rel), text)
                for rel, text in device_files(node.name, dev).items():
                    w.file(j(ddir, rel), text)
                w.link(j(ddir, "device"), f"../../../{dev.pci_addr}")
                for port in dev.ports:
                    if port.key not in absent:
                        self._write_port(dev, port, pci, j(ddir, "ports", str(port.number)))
                # Linked last, so a reader never finds a device whose files are still being written.
                w.link(j(class_dir, dev.name), f"../../{dev.dev_rel}")

    def _write_port(self, dev: SimDevice, port: SimPort, pci: str, pdir: str) -> None:
        j, w = os.path.join, self.writer
        net = j(pci, "net", port.netdev)
        w.dir(net)
        w.file(j(net, "dev_port"), f"{port.number - 1}\n")
        w.dir(j(pdir, "counters"))
        w.dir(j(pdir, "gids"))
        if dev.model.old_pma:
            w.dir(j(pdir, "counters_ext"))
        if dev.model.hw_counters:
            w.dir(j(pdir, "hw_counters"))
        files = port_files(dev, port, self.state["ports"][port.key], self._effects[port.key], self._phys[port.key])
        for rel, text in files.items():
            w.file(j(pdir, rel), text)

    def _save(self) -> None:
        fl.write_atomic(os.path.join(self.out, STATE_FILE), json.dumps(self.state, separators=(",", ":")).encode())


def _read_state(out: str) -> dict | None:
    try:
        with open(os.path.join(out, STATE_FILE), encoding="utf-8") as f:
            state = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise SimError(f"{os.path.join(out, STATE_FILE)}: unreadable ({e})") from None
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION:
        raise SimError(f"{os.path.join(out, STATE_FILE)}: not a simulator state of version {STATE_VERSION}")
    return state
