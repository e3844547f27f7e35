"""`python -m collectors snapshot|simulate|fault ...` (interfaces fixed in DESIGN.md)."""

from __future__ import annotations

import argparse
import json
import os
import sys


def _snapshot(args: argparse.Namespace) -> int:
    from .snapshot import read_host, to_dict
    from .text import render_text

    root = args.sysfs_root
    if not os.path.isdir(root):
        print(f"snapshot: sysfs root {root!r} is not a directory", file=sys.stderr)
        return 2
    # Verbs describe this machine's devices: merging them into a fixture or simulated
    # tree would report disagreements that are not there.
    use_verbs = not args.no_verbs and os.path.realpath(root) == "/sys"
    snap = read_host(root, host=args.host, use_verbs=use_verbs)
    if args.format == "wire":  # what an agent sends (collectors/wire.py), from the same reading
        from .wire import encode

        return _print(args, lambda: encode(to_dict(snap)), lambda: render_text(snap))
    return _print(args, lambda: to_dict(snap), lambda: render_text(snap))


def _print(args: argparse.Namespace, as_json, as_text) -> int:
    """What `--format` asks for: JSON (indented with --pretty: the snapshot, or its wire form), or the text."""
    if args.format in ("json", "wire"):
        json.dump(as_json(), sys.stdout, indent=2 if args.pretty else None)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(as_text())
    return 0


def _fabric(args: argparse.Namespace) -> int:
    from .mads.routes import lid_owners, render_ibroute
    from .mads.snapshot import routes_dict, to_dict
    from .mads.sweep import Sweeper, SweepSettings, open_port
    from .mads.text import render_text
    from .mads.umad import UmadError

    settings = SweepSettings(window=args.window, timeout_ms=args.timeout, retries=args.retries)
    try:
        with open_port(args.ca, args.port) as port:
            sweeper = Sweeper(port, args.collector, settings)
            sweep = sweeper.sweep(routes=args.routes)
            if args.mode == "counters":
                sweep = sweeper.sweep("counters")
    except UmadError as e:
        print(f"fabric: {e}", file=sys.stderr)
        return 2
    if args.routes:
        owners = lid_owners(sweep.nodes)
        switches = sorted((n for n in sweep.nodes if n.is_switch and n.lft is not None), key=lambda n: n.lid or 0)
        for error in sweep.errors:
            print(f"fabric: {error.path}: {error.reason}", file=sys.stderr)
        return _print(args, lambda: routes_dict(sweep), lambda: "".join(render_ibroute(n, owners) for n in switches))
    return _print(args, lambda: to_dict(sweep), lambda: render_text(sweep))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m collectors", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    snap = sub.add_parser("snapshot", help="read this host's InfiniBand ports and print a snapshot")
    snap.add_argument("--sysfs-root", default="/sys", help="directory that contains class/infiniband/ (default /sys)")
    snap.add_argument(
        "--format",
        choices=("json", "wire", "text"),
        default="text",
        help="json: the snapshot DESIGN.md describes; wire: what a node agent sends (columnar); text: ibstat-like",
    )
    snap.add_argument("--host", default=None, help="host name to report (default: this machine's short name)")
    snap.add_argument(
        "--no-verbs",
        action="store_true",
        help="read sysfs only, even when pyverbs is installed (always so with --sysfs-root other than /sys)",
    )
    snap.add_argument("--pretty", action="store_true", help="indent the JSON")
    snap.set_defaults(func=_snapshot)

    fabric = sub.add_parser(
        "fabric", help="sweep the fabric this host's port reaches (management datagrams) and print it"
    )
    fabric.add_argument("--format", choices=("json", "text"), default="text")
    fabric.add_argument("--ca", default=None, help="local channel adapter to send from (default: the first)")
    fabric.add_argument("--port", type=int, default=0, help="its port (default: the first active one)")
    fabric.add_argument("--collector", default=None, help="the collector's name in the snapshot (default: host name)")
    fabric.add_argument(
        "--mode",
        choices=("full", "counters"),
        default="full",
        help="counters: discover, then print a counters-only poll",
    )
    fabric.add_argument("--timeout", type=int, default=300, metavar="MS", help="per query try (default 300 ms)")
    fabric.add_argument("--retries", type=int, default=2, help="tries after the first (default 2)")
    fabric.add_argument("--window", type=int, default=64, help="queries in flight at once (default 64)")
    fabric.add_argument("--pretty", action="store_true", help="indent the JSON")
    fabric.add_argument(
        "--routes",
        action="store_true",
        help="read every switch's linear forwarding table and print the tables (text as ibroute prints them)",
    )
    fabric.set_defaults(func=_fabric)

    from . import simulate

    sim = sub.add_parser("simulate", help="write simulated node trees and keep their counters moving")
    simulate.add_arguments(sim)
    sim.set_defaults(func=simulate.main)

    fault = sub.add_parser("fault", help="add, remove or list the faults of a simulated fabric")
    simulate.add_fault_arguments(fault)
    fault.set_defaults(func=simulate.fault_main)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except BrokenPipeError:  # `snapshot | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
