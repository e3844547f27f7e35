"""The simulator's state on disk (DIR/.simstate.json) and the options a fabric was made with.

The state holds everything a later process needs to continue a fabric (options, simulated clock,
step number, raw counter totals, what is vanished, which resets were applied; in fabric mode the
switch ports' counters and what ibsim was last told): fabric.Fabric reads and writes it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from . import cabling as cb
from . import faults as fl
from .layout import Layout, build

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


def layout_config(specs) -> list[str]:
    """The layout faults (dgx, misbuilt) as the state keeps them: normalised, one per node."""
    shapes: dict[str, str] = {}
    for spec in specs:
        f = fl.parse(spec)
        if f.kind not in fl.LAYOUT_KINDS:
            raise fl.FaultError(f"{f.spec}: not a layout fault ({', '.join(sorted(fl.LAYOUT_KINDS))})")
        if shapes.get(f.node, f.kind) != f.kind:
            raise fl.FaultError(f"{f.spec}: {f.node} is already {shapes[f.node]}: a node takes one layout fault")
        shapes[f.node] = f.kind
    return [f"{node}:{kind}" for node, kind in shapes.items()]


def layout_of(config: dict) -> Layout:
    shapes = dict(spec.split(":") for spec in config.get("layout_faults", []))
    return build(config["seed"], config["nodes"], config["ports"], config["hcas"], shapes)


def cabling_of(config: dict, layout: Layout) -> cb.Cabling | None:
    sw = config.get("switches")
    if sw is None:
        return None
    return cb.build(layout, sw["switch_ports"], sw["leaves"], sw["spines"], sw["faults"])


def without_start_faults(config: dict) -> tuple[dict, list[str]]:
    """The options to compare when continuing a fabric, and the faults it was built with: its
    layout faults, and those built into its fabric.net."""
    rest = {k: v for k, v in config.items() if k != "layout_faults"}
    built = list(config.get("layout_faults", []))
    sw = config.get("switches")
    if sw is None:
        return rest, built
    return {**rest, "switches": {k: v for k, v in sw.items() if k != "faults"}}, built + sw["faults"]


_NOT_OPTIONS = ("switches", "layout_faults")


def options_text(config: dict) -> str:
    text = " ".join(f"--{k} {v}" for k, v in config.items() if v is not None and k not in _NOT_OPTIONS)
    text += "".join(f" --fault {spec}" for spec in config.get("layout_faults", []))
    sw = config.get("switches")
    if sw is not None:
        text += " --fabric" + "".join(
            f" --{k.replace('_', '-')} {sw[k]}" for k in ("switch_ports", "leaves", "spines") if sw[k] is not None
        )
    return text


def read_state(out: str) -> dict | None:
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
