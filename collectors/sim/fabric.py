"""The simulated fabric: state on disk, faults, and one step of simulated time.

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
from dataclasses import dataclass

from . import cabling as cb
from . import console as ibsim
from . import faults as fl
from .hardware import pcie_usable_gbps, rate_gbps
from .layout import Layout, SimDevice, SimNode, SimPort, build
from .traffic import FLAP_RECOVERIES_PER_S, Profile, accrue, new_port_state, profile, step_traffic, zero
from .tree import TreeWriter, device_files, pci_files, port_files

STATE_FILE = ".simstate.json"
STATE_VERSION = 1


class SimError(ValueError):
    """A simulator directory or option that cannot be used, said in words."""


@dataclass(frozen=True, slots=True)
class SwitchOptions:
    """`simulate --fabric`: the switches, and the faults built into fabric.net (START_ONLY kinds)."""

    switch_ports: int = cb.DEFAULT_SWITCH_PORTS
    leaves: int | None = None
    spines: int | None = None
    faults: tuple[str, ...] = ()

    def config(self) -> dict:
        faults = {}  # normalised; a later spec for the same target and kind replaces an earlier one
        for spec in self.faults:
            f = fl.parse(spec)
            faults[(f.target, f.kind)] = f.spec
        sizes = {"switch_ports": self.switch_ports, "leaves": self.leaves, "spines": self.spines}
        return {**sizes, "faults": list(faults.values())}


def _layout(config: dict) -> Layout:
    return build(config["seed"], config["nodes"], config["ports"], config["hcas"])


def _cabling(config: dict, layout: Layout) -> cb.Cabling | None:
    sw = config.get("switches")
    if sw is None:
        return None
    return cb.build(layout, sw["switch_ports"], sw["leaves"], sw["spines"], sw["faults"])


def _without_start_faults(config: dict) -> tuple[dict, list[str]]:
    """The options to compare when continuing a fabric, and the faults built into its fabric.net."""
    sw = config.get("switches")
    if sw is None:
        return config, []
    return {**config, "switches": {k: v for k, v in sw.items() if k != "faults"}}, sw["faults"]


def _options_text(config: dict) -> str:
    text = " ".join(f"--{k} {v}" for k, v in config.items() if v is not None and k != "switches")
    sw = config.get("switches")
    if sw is not None:
        text += " --fabric" + "".join(
            f" --{k.replace('_', '-')} {sw[k]}" for k in ("switch_ports", "leaves", "spines") if sw[k] is not None
        )
    return text


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
        self.cabling = _cabling(state["config"], layout)
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
    ):
        """A fresh fabric at simulated time 0, written to disk; replaces a fabric already in `out`.

        With `switches`, also the switch fabric the hosts hang on: DIR/fabric.net for ibsim and
        DIR/fabric-expected.yaml, and the host ports train what ibsim will train.
        """
        layout = build(seed, nodes, ports, hcas)
        config = {"seed": seed, "nodes": nodes, "ports": ports, "hcas": hcas}
        if switches is not None:
            config["switches"] = switches.config()
        cabling = _cabling(config, layout)  # before anything is removed: a bad option changes nothing
        os.makedirs(out, exist_ok=True)
        old = _read_state(out)
        if old is not None:  # remove only the node trees the old fabric wrote
            for node in _layout(old["config"]).nodes:
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
        fl.write_atomic(os.path.join(out, fl.FAULTS_FILE), b'{"version": 1, "next_id": 1, "faults": []}\n')
        if cabling is not None:
            fl.write_atomic(os.path.join(out, cb.NET_FILE), cabling.net_text(layout).encode())
            fl.write_atomic(os.path.join(out, cb.EXPECTED_FILE), cabling.expected_yaml().encode())
        fabric._save()  # before the tree: whoever sees a node can already add faults
        fabric.render()
        return fabric

    @classmethod
    def load(cls, out: str) -> Fabric:
        state = _read_state(out)
        if state is None:
            raise SimError(f"{out} holds no simulated fabric (no {STATE_FILE}); run `simulate --out {out}` first")
        return cls(out, _layout(state["config"]), state)

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
    ) -> Fabric:
        """Continue the fabric in `out` when its options match; create one when there is none (or `fresh`).

        The faults of `switches` must be those it was created with: they are built into fabric.net.
        """
        state = _read_state(out)
        if state is None or fresh:
            return cls.create(out, nodes, ports, seed, hcas=hcas, switches=switches)
        want = {"seed": seed, "nodes": nodes, "ports": ports, "hcas": hcas}
        if switches is not None:
            want["switches"] = switches.config()
        have, built = _without_start_faults(state["config"])
        want, given = _without_start_faults(want)
        if have != want:
            raise SimError(
                f"{out} already holds a simulated fabric ({_options_text(state['config'])}); pass the same "
                "options to continue it, or --fresh to start a new one there"
            )
        for spec in given:
            if spec not in built:
                raise SimError(
                    f"{spec}: the fabric in {out} was built without it, and ibsim cannot change a link's "
                    "cabling, width or speed while it runs; --fresh builds a new fabric with it"
                )
        return cls(out, _layout(state["config"]), state)

    # -- faults -------------------------------------------------------------------------
    def add_fault(self, *specs: str) -> list[str]:
        """Add faults (checked against this fabric); they take effect at the next step() or render()."""
        return self._built_in() + fl.edit(self.out, self.layout, add=specs, cabling=self.cabling)

    def remove_fault(self, *specs: str) -> list[str]:
        built_in = self._built_in()
        for spec in specs:
            loose = fl.parse_loose(spec)
            if any(fl.matches(loose, fl.parse(b)) for b in built_in):
                raise fl.FaultError(
                    f"{spec}: built into fabric.net when the fabric was created; ibsim cannot change a running "
                    "link's cabling, width or speed (simulate --fresh --fabric builds a new fabric)"
                )
        return built_in + fl.edit(self.out, self.layout, remove=specs, cabling=self.cabling)

    def clear_faults(self) -> list[str]:
        """Remove every fault but those built into fabric.net."""
        return self._built_in() + fl.edit(self.out, self.layout, clear=True, cabling=self.cabling)

    def faults(self) -> list[str]:
        return self._built_in() + [f.spec for _, f in fl.load(self.out, self.layout, self.cabling)]

    def _built_in(self) -> list[str]:
        """Fabric mode's start-only faults: part of fabric.net, not of faults.json."""
        return list(self.state["config"].get("switches", {}).get("faults", []))

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

    # -- the switch side (fabric mode) --------------------------------------------------
    @property
    def switch_side(self) -> ibsim.Wanted | None:
        """What the switch fabric shows after the last step (what ibsim's console is told); None without --fabric."""
        return self._wanted

    def _ibsim_wanted(self) -> ibsim.Wanted:
        """What ibsim should show now: the host faults that break a cable break it there too."""
        step, switches = self.state["step"], self.cabling.switches
        on_switches = [f for _, f in self.active if f.node in switches]
        links_down = set()
        for link in self.cabling.links:
            host = link.far_end.key if link.far_end.node not in switches else None
            if host is not None:  # its effects already carry the switch end's
                up = not self._hidden(host) and fl.port_link(self._effects[host], step)[0]
            else:
                up = all(
                    fl.port_link(fl.effects(self.active, end.key), step)[0] for end in (link.switch_end, link.far_end)
                )
            if not up:
                links_down.add(link.key)
        whole = [f for f in on_switches if f.port is None]
        counters = self.state["switches"]["ports"]
        return ibsim.Wanted(
            switches_down={f.node for f in whole if f.kind == "down" or (f.kind == "flap" and step % 2 == 1)},
            links_down=links_down,
            muted={f.node for f in whole if f.kind == "mute"},
            symbol_errors={key: ps["c"]["symbol_error"] for key, ps in counters.items()},
        )

    def _count_switch_errors(self, seconds: float) -> None:
        """Symbol errors on switch ports, kept in the state (ibsim's PMA holds what it is told)."""
        counters = self.state["switches"]["ports"]
        for link in self.cabling.links:
            if link.key in self._wanted.links_down:
                continue  # no symbols without a link
            for end in (link.switch_end, link.far_end):
                if end.node not in self.cabling.switches:
                    continue
                rate = fl.effects(self.active, end.key).symbol_rate
                if rate:
                    ps = counters.setdefault(end.key, {"c": {"symbol_error": 0}, "carry": {}})
                    accrue(ps, "symbol_error", rate, seconds)
        self._wanted.symbol_errors = {key: ps["c"]["symbol_error"] for key, ps in counters.items()}

    def _tell_ibsim(self) -> None:
        """Send the console commands for what changed since they were last applied (no --ibsim-ctl: none)."""
        if self.console is None or self._wanted is None:
            return
        sw = self.state["switches"]
        new_reader = self.console.connect()
        if new_reader:
            sw["applied"] = ibsim.empty_applied()  # an ibsim started since knows only fabric.net
        if new_reader is not None:
            lines = ibsim.commands(self.cabling, sw["applied"], self._wanted)
            if not lines or self.console.send(lines):
                sw["applied"] = ibsim.applied_state(self._wanted)
        problem = self.console.problem
        self.console_warning = problem and f"{problem}; ibsim's commands wait until one reads it"

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
