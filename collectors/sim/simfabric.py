"""The simulated fabric: state on disk, faults, and one step of simulated time.

Its parts: the state file and options (simstate.py), the node trees written (rendering.py), the
switch side in fabric mode (switchside.py); this module holds the fabric they make up.

DIR/.simstate.json holds everything a later process needs to continue (options,
simulated clock, step number, raw counter totals, what is vanished, which resets
were applied), so `simulate --once` continues where the last step stopped and the
same seed and steps give byte-identical trees. No wall-clock time goes into a value.

In fabric mode (options["switches"]) it also holds the switch ports' counters and what
was last applied to ibsim through its console, and DIR/fabric.net describes the switches.
"""

from __future__ import annotations

import json
import os

from . import cabling as cb
from . import console as ibsim
from . import faults as fl
from . import roce as roce_sim
from .hardware import pcie_usable_gbps, rate_gbps
from .layout import Layout, SimDevice, unit
from .rendering import TreeOutput
from .simstate import (
    STATE_FILE,
    STATE_VERSION,
    SimError,
    SwitchOptions,
    cabling_of,
    layout_config,
    layout_of,
    options_text,
    read_state,
    without_start_faults,
)
from .switchside import SwitchSide
from .traffic import FLAP_RECOVERIES_PER_S, Profile, accrue, new_port_state, profile, step_traffic, zero
from .tree import TreeWriter

__all__ = ["STATE_FILE", "Fabric", "SimError", "SwitchOptions"]


def _ancestry(key: str) -> list[str]:
    parts = key.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _capacity(dev: SimDevice, eff: fl.PortEffects) -> float:
    """Bytes/s the port can move: its link rate, or the HCA's PCIe link when that is slower."""
    m = dev.model
    link = rate_gbps(eff.speed or dev.speed, eff.lanes or m.lanes)
    pcie = pcie_usable_gbps(eff.pcie[0] or m.pcie_gts, eff.pcie[1] or m.pcie_width)
    uplink = pcie_usable_gbps(*(have or full for have, full in zip(eff.uplink, dev.slot.uplink, strict=True)))
    return min(link, pcie, uplink) * 1e9 / 8


def _fixed(spec: str) -> str:
    """Why a fault given at start stays for the fabric's life."""
    if fl.parse_loose(spec).kind in fl.LAYOUT_KINDS:
        return "a node's PCIe tree does not change while the simulator runs; --fresh builds a new fabric with it"
    return "ibsim cannot change a link's cabling, width or speed while it runs; --fresh builds a new fabric with it"


def _config(seed, nodes, ports, hcas, switches: SwitchOptions | None, layout_faults) -> dict:
    """The options a fabric is made with, as its state keeps them."""
    config = {"seed": seed, "nodes": nodes, "ports": ports, "hcas": hcas}
    if switches is not None:
        config["switches"] = switches.config()
    if layout_faults:
        config["layout_faults"] = layout_config(layout_faults)
    return config


class Fabric(SwitchSide, TreeOutput):
    """N simulated nodes under `out`. Use create(), load() or open(); then step() and the fault methods."""

    def __init__(self, out: str, layout: Layout, state: dict) -> None:
        self.out = out
        self.layout = layout
        self.state = state
        self.writer = TreeWriter(out)
        self.cabling = cabling_of(state["config"], layout)
        self.console: ibsim.Console | None = None  # set by use_console()
        self.console_warning: str | None = None  # why ibsim's console did not take the last commands
        self.active: list[tuple[int, fl.Fault]] = []
        self.warning: str | None = None  # why faults.json was last ignored, if it was
        self._profiles: dict[str, Profile] = {}
        self._effects: dict[str, fl.PortEffects] = {}
        self._phys: dict[str, int] = {}
        self._wanted: ibsim.Wanted | None = None  # what ibsim should show after this step

    # -- construction -----------------------------------------------------------------
    @classmethod
    def create(
        cls,
        out: str,
        nodes: int,
        ports: int | None = None,
        seed: int = 0,
        *,
        hcas: int | None = None,
        switches: SwitchOptions | None = None,
        layout_faults: tuple[str, ...] = (),
    ):
        """A fresh fabric at simulated time 0, written to disk; replaces a fabric already in `out`.

        With `switches`, also the switch fabric the hosts hang on: DIR/fabric.net for ibsim and
        DIR/fabric-expected.yaml, and the host ports train what ibsim will train. `layout_faults`
        (NODE:dgx, NODE:misbuilt) reshape nodes' PCIe trees for the fabric's life.
        """
        config = _config(seed, nodes, ports, hcas, switches, layout_faults)
        layout = layout_of(config)
        cabling = cabling_of(config, layout)  # before anything is removed: a bad option changes nothing
        os.makedirs(out, exist_ok=True)
        old = read_state(out)
        if old is not None:  # remove only the node trees the old fabric wrote
            for node in layout_of(old["config"]).nodes:
                TreeWriter(out).remove(os.path.join(out, node.name))
        for name in (cb.NET_FILE, cb.EXPECTED_FILE):
            if cabling is None and os.path.exists(os.path.join(out, name)):
                os.unlink(os.path.join(out, name))  # an earlier fabric's: nothing describes these hosts now
        state = {
            "version": STATE_VERSION,
            "config": config,
            "clock": 0.0,
            "step": 0,
            "absent": [],
            "resets_done": [],
            "ports": {},
        }
        if cabling is not None:
            state["switches"] = {"ports": {}, "applied": ibsim.empty_applied()}
        fabric = cls(out, layout, state)
        for _, dev, port in layout.ports():
            m = dev.model
            roce = m.link_layer == "Ethernet"
            state["ports"][port.key] = new_port_state(
                fabric._profile(port.key), _capacity(dev, fabric._port_effects(port.key)), m.hw_counters, roce
            )
            if roce:  # its netdev's ethtool statistics: PFC pause and the pause-storm watchdog (sim/roce.py)
                state["ports"][port.key]["eth"] = roce_sim.new_counters()
        fl.write_atomic(os.path.join(out, fl.FAULTS_FILE), b'{"version": 1, "next_id": 1, "faults": []}\n')
        if cabling is not None:
            fl.write_atomic(os.path.join(out, cb.NET_FILE), cabling.net_text(layout).encode())
            fl.write_atomic(os.path.join(out, cb.EXPECTED_FILE), cabling.expected_yaml().encode())
        fabric._save()  # before the tree: whoever sees a node can already add faults
        fabric.render()
        return fabric

    @classmethod
    def load(cls, out: str) -> Fabric:
        state = read_state(out)
        if state is None:
            raise SimError(f"{out} holds no simulated fabric (no {STATE_FILE}); run `simulate --out {out}` first")
        return cls(out, layout_of(state["config"]), state)

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
        switches: SwitchOptions | None = None,
        layout_faults: tuple[str, ...] = (),
    ) -> Fabric:
        """Continue the fabric in `out` when its options match; create one when there is none (or `fresh`).

        The faults of `switches` and `layout_faults` must be among those it was created with: they
        are built into fabric.net and the nodes' PCIe trees.
        """
        state = read_state(out)
        if state is None or fresh:
            return cls.create(out, nodes, ports, seed, hcas=hcas, switches=switches, layout_faults=layout_faults)
        want = _config(seed, nodes, ports, hcas, switches, layout_faults)
        have, built = without_start_faults(state["config"])
        want, given = without_start_faults(want)
        if have != want:
            raise SimError(
                f"{out} already holds a simulated fabric ({options_text(state['config'])}); pass the same "
                "options to continue it, or --fresh to start a new one there"
            )
        for spec in given:
            if spec not in built:
                raise SimError(f"{spec}: the fabric in {out} was built without it, and {_fixed(spec)}")
        return cls(out, layout_of(state["config"]), state)

    # -- faults -------------------------------------------------------------------------
    def add_fault(self, *specs: str) -> list[str]:
        """Add faults (checked against this fabric); they take effect at the next step() or render()."""
        return self._built_in() + fl.edit(self.out, self.layout, add=specs, cabling=self.cabling)

    def remove_fault(self, *specs: str) -> list[str]:
        built_in = self._built_in()
        for spec in specs:
            loose = fl.parse_loose(spec)
            if any(fl.matches(loose, fl.parse(b)) for b in built_in):
                where = "the node's PCIe tree" if loose.kind in fl.LAYOUT_KINDS else "fabric.net"
                raise fl.FaultError(f"{spec}: built into {where} when the fabric was created; {_fixed(spec)}")
        return built_in + fl.edit(self.out, self.layout, remove=specs, cabling=self.cabling)

    def clear_faults(self) -> list[str]:
        """Remove every fault but those built into fabric.net."""
        return self._built_in() + fl.edit(self.out, self.layout, clear=True, cabling=self.cabling)

    def faults(self) -> list[str]:
        return self._built_in() + [f.spec for _, f in fl.load(self.out, self.layout, self.cabling)]

    def _built_in(self) -> list[str]:
        """The layout faults and fabric mode's start-only faults: part of the fabric, not of faults.json."""
        return without_start_faults(self.state["config"])[1]

    # -- ibsim's console --------------------------------------------------------------
    def use_console(self, path: str) -> None:
        """Send ibsim the console commands that follow the faults, each step, to the FIFO at `path`."""
        if self.cabling is None:
            raise SimError("--ibsim-ctl drives ibsim, which only a --fabric simulator has")
        console = ibsim.Console(path)
        try:
            console.check()
        except ValueError as e:
            raise SimError(str(e)) from None
        self.console = console

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
        if self.cabling is not None:
            self._count_switch_errors(seconds)
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
                if roce:
                    roce_sim.step(ps, eff.roce, seconds, unit(seed, port.key, step, "pfc"))
                accrue(ps, "symbol_error", eff.symbol_rate, seconds)  # no symbols without a link
                for counter, rate in eff.error_rates.items():
                    accrue(ps, counter, rate, seconds)
            if eff.flap:  # retraining goes on in the down steps too: a steady rate in simulated time
                accrue(ps, "link_error_recovery", FLAP_RECOVERIES_PER_S, seconds)
        st["clock"] += seconds
        self._write_tree()
        self._tell_ibsim()
        self._save()

    def render(self) -> None:
        """Apply the current faults to the tree without moving time (start-up of a running simulator)."""
        self._reload_faults()
        self._sync()
        self._write_tree()
        self._tell_ibsim()
        self._save()

    # -- internals ----------------------------------------------------------------------
    def _profile(self, key: str) -> Profile:
        prof = self._profiles.get(key)
        if prof is None:
            prof = self._profiles[key] = profile(self.state["config"]["seed"], key)
        return prof

    def _reload_faults(self) -> None:
        try:
            self.active = fl.load(self.out, self.layout, self.cabling)
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
            eff = self._effects[port.key] = self._port_effects(port.key)
            if self._hidden(port.key, now):
                continue
            ps = st["ports"][port.key]
            up, self._phys[port.key] = fl.port_link(eff, st["step"])
            if any(k in back for k in _ancestry(port.key)):
                zero(ps, hw=True)  # it comes back as after a reboot or driver reload
                if "eth" in ps:
                    ps["eth"] = roce_sim.new_counters()
            elif ps["up"] and not up:
                ps["c"]["link_downed"] += 1
            ps["up"] = up
            if any(fid not in done for fid in eff.reset_ids):
                zero(ps, hw=False)  # perfquery -R clears the PMA counters, not hw_counters
        st["resets_done"] = sorted(fid for fid, f in self.active if f.kind == "reset")
        st["absent"] = sorted(now)
        if self.cabling is not None:
            self._wanted = self._ibsim_wanted()

    def _port_effects(self, key: str) -> fl.PortEffects:
        """The faults' effects on a host port; in fabric mode it trains what its link trains in
        fabric.net and goes down when the switch end does (a switch or its port down, flapping)."""
        eff = fl.effects(self.active, key)
        if self.cabling is None:
            return eff
        link = self.cabling.by_end.get(key)
        if link is None:  # an Ethernet port: no cable in fabric.net, but the start faults still set its rate
            built = fl.effects([(0, fl.parse(spec)) for spec in self._built_in()], key)
            eff.speed, eff.lanes = built.speed, built.lanes
            return eff
        eff.speed, eff.lanes = link.speed, link.lanes
        switch_end = fl.effects(self.active, link.switch_end.key)
        eff.down = eff.down or switch_end.down
        eff.flap = eff.flap or switch_end.flap
        return eff

    def _save(self) -> None:
        fl.write_atomic(os.path.join(self.out, STATE_FILE), json.dumps(self.state, separators=(",", ":")).encode())
