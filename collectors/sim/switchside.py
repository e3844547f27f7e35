"""The switch side of a fabric-mode simulator (simulate --fabric): what ibsim should show after each step,
the symbol errors its switch ports count, and the console commands that tell ibsim. A mixin of
fabric.Fabric, whose state it reads: the cabling, the active faults, each host port's effects."""

from __future__ import annotations

from . import console as ibsim
from . import faults as fl
from .traffic import accrue


class SwitchSide:
    """fabric.Fabric's switch side (fabric mode only: a Fabric without cabling has none)."""

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
