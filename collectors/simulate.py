"""Simulated InfiniBand nodes: `python -m collectors simulate` and `python -m collectors fault`.

simulate --out DIR --nodes N [--ports P] [--hcas H] [--seed S] [--fault SPEC ...]
         [--once] [--interval SECONDS] [--step-seconds SECONDS] [--fresh]
         [--fabric [--switch-ports R] [--leaves L] [--spines S] [--ibsim-ctl FIFO]]
    Writes DIR/cn001 ... DIR/cnNNN, each a sysfs tree (point `snapshot --sysfs-root`
    at one), and advances their counters by --step-seconds of simulated time every
    --interval seconds until SIGINT/SIGTERM; --once advances one step and exits.
    The state (simulated clock, counter totals) is kept in DIR/.simstate.json, so a
    later run with the same options continues where the last one stopped.

    --fabric also writes the switch fabric the hosts hang on: DIR/fabric.net, ibsim's net
    file (leaf01.., spine01..; hosts on a leaf's low ports, uplinks on its top ports spread
    over the spines; by default half of a leaf's R ports face hosts), and
    DIR/fabric-expected.yaml, the cabling as it should be. Each host port's tree says what
    ibsim trains: its GUIDs, and a healthy link as 12X QDR, the best ibsim's ports do.
    With --ibsim-ctl, each step writes to that FIFO (ibsim's console on its stdin) the
    commands that bring ibsim in line with the faults: Unlink/ReLink, Error, PerformanceSet.

fault --out DIR add SPEC... | remove SPEC... | clear | list
    Edits DIR/faults.json, which a running simulator re-reads every step.

SPEC is NODE[/DEVICE[/PORT]]:KIND[=VALUE]; a fault on a node or device applies to
all its ports. Kinds: down, disabled, speed=QDR, width=1X, symbol-errors=RATE, rcv-errors=RATE,
remote-errors=RATE, discards=RATE (per second, or N/s, N/min, N/h), flap, reset, saturate,
pcie=GEN3x8, uplink=x8 (the PCIe switch uplink above the HCA trains at that), vanish, vfs=N (N
SR-IOV virtual functions on each HCA it names, each an RDMA device of its own named after the
physical ones, mlx5_2 ..., its device/physfn linking to its HCA).

Every node has a PCIe tree (collectors/sim/pcitree.py): each HCA on a PCIe switch of its own below
a root port, every link at full speed and width. Layout faults, given at start only (--fault at
the first run, or with --fresh), reshape it for the fabric's life: NODE:dgx (8 GPUs and 8 HCAs
behind 4 PCIe switches, 2 GPUs + 2 HCAs each, two sockets: a DGX A100's layout) and NODE:misbuilt
(its first HCA below the switch of two GPUs, the three behind one uplink wired x4, too narrow for its port).

With --fabric, a SPEC may name a switch (leaf03) or a switch port (leaf03/12). Switch
kinds: down (a switch loses power: all its links go down; a port: the cable is pulled),
flap, symbol-errors=RATE (the switch port's SymbolErrorCounter), mute (a switch stops
answering management datagrams), speed= and width= (start only). A host port's
`miscable` (start only) cables it to a free port of another leaf than the expected file
says. Host down, disabled, flap and vanish take the cable down in ibsim too.
What ibsim cannot do: links train at SDR, DDR or QDR and 1X, 4X, 8X or 12X only, and a
running ibsim cannot change a link's width, speed or cabling, so speed=, width= and
miscable are built into fabric.net when the fabric is created (--fault at the first run,
or with --fresh) and `fault add`/`remove` refuses them. After ReLink a port waits in
Initialize until a subnet manager (opensm) sweeps it to Active.
"""

from __future__ import annotations

import argparse
import fcntl
import os
import signal
import sys
import threading
import time

from .sim import Fabric, FaultError, SimError, SwitchOptions
from .sim.cabling import DEFAULT_SWITCH_PORTS
from .sim.faults import LAYOUT_KINDS, START_ONLY
from .sim.faults import parse as parse_fault
from .sim.layout import LayoutError

_LOCK_FILE = ".simlock"
_ERRORS = (SimError, FaultError, LayoutError)


_GRAMMAR = """\
fault SPEC: NODE[/DEVICE[/PORT]]:KIND[=VALUE], e.g. cn003/mlx5_0/1:speed=QDR, cn002:vanish,
cn001/mlx5_0:pcie=GEN3x8. A fault on a node or device applies to all its ports.
kinds: down, disabled, speed=SDR..XDR, width=1X|2X|4X|8X|12X, symbol-errors=N[/s|/min|/h],
rcv-errors=N[/s|/min|/h], remote-errors=N[/s|/min|/h], discards=N[/s|/min|/h],
flap, reset, saturate, pcie=GEN<g>x<lanes>, uplink=GEN<g>x<lanes> (the PCIe switch uplink above the
HCA), vanish, vfs=0..16 (SR-IOV virtual functions per HCA), and on a RoCE port pause-storm (the host stops
draining: PFC pause sent, the pause-storm watchdog's events) and cnp-storm (ECN marks and CNPs pour in)
layout (a node, at start only): NODE:dgx (8 GPUs and 8 HCAs behind 4 PCIe switches, two sockets),
NODE:misbuilt (its first HCA and two GPUs behind one switch uplink wired x4)
with --fabric: leaf03[/PORT]:down|flap|symbol-errors=N[/s|/min|/h]|speed=|width=, leaf03:mute,
NODE/DEVICE/PORT:miscable; speed= (SDR, DDR, QDR), width= (1X, 4X, 8X, 12X) and miscable only at
start: ibsim cannot change a running link"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _GRAMMAR
    parser.add_argument("--out", required=True, metavar="DIR", help="directory for the node trees and the state")
    parser.add_argument("--nodes", required=True, type=int, metavar="N", help="number of nodes: cn001 ... cnNNN")
    parser.add_argument(
        "--ports", type=int, metavar="P", help="ports per HCA (default: 1 on ConnectX-6/7 and RoCE, 2 on ConnectX-3)"
    )
    parser.add_argument(
        "--hcas", type=int, metavar="H", help="HCAs per node (default: 2 on ConnectX-6/7 and RoCE, 1 on ConnectX-3)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the same seed and steps give byte-identical trees")
    parser.add_argument(
        "--fault", action="append", default=[], metavar="SPEC", help="NODE[/DEVICE[/PORT]]:KIND[=VALUE]; repeatable"
    )
    parser.add_argument("--once", action="store_true", help="advance one step and exit")
    parser.add_argument("--interval", type=float, default=10.0, metavar="SECONDS", help="wall time between steps")
    parser.add_argument(
        "--step-seconds", type=float, metavar="SECONDS", help="simulated seconds per step (default: --interval)"
    )
    parser.add_argument("--fresh", action="store_true", help="start a new fabric even if DIR holds one")
    sw = parser.add_argument_group("the switch fabric (ibsim)")
    sw.add_argument(
        "--fabric", action="store_true", help="also write the switches: DIR/fabric.net for ibsim, fabric-expected.yaml"
    )
    sw.add_argument("--switch-ports", type=int, metavar="R", help="ports per switch (default 40)")
    sw.add_argument("--leaves", type=int, metavar="L", help="leaf switches (default: enough for half their ports)")
    sw.add_argument("--spines", type=int, metavar="S", help="spine switches (default: enough for the uplinks)")
    sw.add_argument(
        "--ibsim-ctl", metavar="FIFO", help="ibsim's console FIFO: each step, send it the commands for the faults"
    )


def main(args: argparse.Namespace) -> int:
    step_seconds = args.step_seconds if args.step_seconds is not None else args.interval
    if not (args.interval > 0 and step_seconds > 0):
        print("simulate: --interval and --step-seconds must be more than 0", file=sys.stderr)
        return 2
    switch_options = (args.switch_ports, args.leaves, args.spines, args.ibsim_ctl)
    if not args.fabric and any(x is not None for x in switch_options):
        print("simulate: --switch-ports, --leaves, --spines and --ibsim-ctl need --fabric", file=sys.stderr)
        return 2
    try:
        shapes = tuple(spec for spec in args.fault if parse_fault(spec).kind in LAYOUT_KINDS)
        switches, faults = _switch_options(args, [spec for spec in args.fault if spec not in shapes])
        os.makedirs(args.out, exist_ok=True)
        lock = _exclusive(args.out)
        try:
            fabric = Fabric.open(
                args.out, args.nodes, args.ports, args.seed, hcas=args.hcas, fresh=args.fresh, switches=switches,
                layout_faults=shapes,
            )  # fmt: skip
            if args.ibsim_ctl:
                fabric.use_console(args.ibsim_ctl)
            if faults:
                fabric.add_fault(*faults)
            if args.once:
                fabric.step(step_seconds)
                _say(fabric.warning)
                _say(fabric.console_warning)
                print(f"simulate: step {fabric.steps}, simulated clock {fabric.clock:g} s, {args.out}")
                return 0
            return _run(fabric, args.interval, step_seconds)
        finally:
            os.close(lock)
    except _ERRORS as e:
        print(f"simulate: {e}", file=sys.stderr)
        return 2


def _switch_options(args: argparse.Namespace, specs: list[str]) -> tuple[SwitchOptions | None, list[str]]:
    """The switch fabric's options with the faults built into fabric.net, and the faults for faults.json."""
    if not args.fabric:
        return None, specs
    built = [spec for spec in specs if parse_fault(spec).kind in START_ONLY]
    ports = args.switch_ports if args.switch_ports is not None else DEFAULT_SWITCH_PORTS
    options = SwitchOptions(ports, args.leaves, args.spines, tuple(built))
    return options, [spec for spec in specs if spec not in built]


def _exclusive(out: str) -> int:
    """Hold DIR/.simlock: two simulators stepping one directory would corrupt each other's state."""
    fd = os.open(os.path.join(out, _LOCK_FILE), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise SimError(f"another simulator is already running on {out}") from None
    return fd


def _say(warning: str | None) -> None:
    if warning:
        print(f"simulate: {warning}", file=sys.stderr, flush=True)


def _run(fabric: Fabric, interval: float, step_seconds: float) -> int:
    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        fabric.render()  # faults given on the command line show at once, not after the first interval
        print(
            f"simulate: {len(fabric.layout.nodes)} nodes under {fabric.out}, {step_seconds:g} simulated s "
            f"every {interval:g} s; faults in {os.path.join(fabric.out, 'faults.json')}",
            file=sys.stderr,
            flush=True,
        )
        _say(fabric.console_warning)
        warned, console_warned = None, fabric.console_warning
        deadline = time.monotonic() + interval
        # A signal only sets `stop`: the step in progress finishes and its state is saved.
        while not stop.wait(max(0.0, deadline - time.monotonic())):
            fabric.step(step_seconds)
            if fabric.warning != warned:
                _say(fabric.warning)
                warned = fabric.warning
            if fabric.console_warning and not console_warned:  # once per outage, not every step
                _say(fabric.console_warning)
            console_warned = fabric.console_warning
            deadline = max(deadline + interval, time.monotonic())
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"simulate: stopped at step {fabric.steps}, simulated clock {fabric.clock:g} s", file=sys.stderr)
    return 0


def add_fault_arguments(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _GRAMMAR
    parser.add_argument("--out", required=True, metavar="DIR", help="the simulator's directory")
    sub = parser.add_subparsers(dest="action", required=True)
    sub.add_parser("add", help="add faults (one per node/device/port and kind: adding again replaces)").add_argument(
        "specs", nargs="+", metavar="SPEC"
    )
    sub.add_parser("remove", help="remove faults; the =VALUE may be left out").add_argument(
        "specs", nargs="+", metavar="SPEC"
    )
    sub.add_parser("clear", help="remove every fault")
    sub.add_parser("list", help="print the active faults")


def fault_main(args: argparse.Namespace) -> int:
    try:
        fabric = Fabric.load(args.out)
        if args.action == "add":
            fabric.add_fault(*args.specs)
        elif args.action == "remove":
            fabric.remove_fault(*args.specs)
        elif args.action == "clear":
            fabric.clear_faults()
        for spec in fabric.faults():
            print(spec)
    except _ERRORS as e:
        print(f"fault: {e}", file=sys.stderr)
        return 2
    return 0
