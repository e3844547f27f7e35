"""runfabric's simulated switch fabric: ibsim on the fabric's net file (its console a FIFO runfabric keeps
a writer on), opensm to bring the ports up, and the fabric collector(s) sweeping it under ibsim-run."""

from __future__ import annotations

import argparse
import os
import signal
from collections.abc import Callable
from pathlib import Path

from fabricweb.nodeauth import collector_key

from .children import BASE_DIR, PY, Children, say


def make_fifo(path: Path) -> None:
    """ibsim's console input, FILE.ctl: created if absent (a test writes console commands to it)."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(path, 0o600)
    elif not path.is_fifo():
        raise SystemExit(f"{path} exists and is not a FIFO")


def file_says(path: Path, text: str) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            return text in path.read_text(errors="replace")
        except OSError:
            return False

    return ready


def start_ibsim(args: argparse.Namespace, children: Children, env: dict[str, str], state_dir: str, secret: str) -> None:
    """ibsim on --ibsim-net (its console on FILE.ctl), opensm to bring the ports up, and the fabric collector(s)."""
    net, ctl = args.ibsim_net, Path(f"{args.ibsim_net}.ctl")
    make_fifo(ctl)
    # One IBSIM_SOCKNAME for the simulator and its clients: the environment's, or one of this run only. Its
    # clients run in the run's directory (umad2sim leaves a sys-<pid> directory where its client runs), with
    # the project on their path.
    env = {
        **env,
        "IBSIM_SOCKNAME": env.get("IBSIM_SOCKNAME") or f"fabricweb-{os.getpid()}",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(BASE_DIR), env.get("PYTHONPATH")])),
    }
    # Read and write: runfabric holds a writer, so ibsim never reads an end of file when a writer goes.
    console = os.open(ctl, os.O_RDWR | os.O_NONBLOCK)
    os.set_blocking(console, True)
    log_path = Path(state_dir) / "ibsim.log"
    with open(log_path, "wb") as log:
        children.start("ibsim", ["ibsim", "-s", str(net)], env, stdin=console, stdout=log)
    os.close(console)
    children.wait_for("ibsim's 'simulator ready'", file_says(log_path, "simulator ready"))
    osm_log, osm_out = Path(state_dir) / "opensm.log", Path(state_dir) / "opensm.out"
    osm_env = {**env, "OSM_CACHE_DIR": state_dir, "OSM_TMP_DIR": state_dir}
    with open(osm_out, "wb") as out:
        # Killed, not asked: opensm reads its exit flag once every 10 s (its main loop sleeps), so a SIGTERM took
        # the whole grace period, and the simulated fabric's subnet manager keeps nothing worth a clean exit.
        argv = ["ibsim-run", "opensm", "-f", str(osm_log), "-s", "2"]
        children.start("opensm", argv, osm_env, stdout=out, cwd=state_dir, stop_signal=signal.SIGKILL)
    # A master subnet manager sweeps at once: LIDs are assigned within its first sweep, ports made ACTIVE.
    children.wait_for("opensm's 'Entering MASTER state'", file_says(osm_out, "Entering MASTER state"), 60)
    for i, (host, name) in enumerate(collectors(args)):
        own = {
            **env,
            "SIM_HOST": host,
            "FABRIC_COLLECTOR_NAME": name,
            "FABRIC_COLLECTOR_KEY": collector_key(secret, name),
        }
        children.start(f"fabric collector {name}", ["ibsim-run", PY, "-m", "fabricweb.fabricagent"], own, cwd=state_dir)
        say(f"fabric collector {name} sweeps {net} from {host!r}" + (" (standby)" if i else ""))


def collectors(args: argparse.Namespace) -> list[tuple[str, str]]:
    """(channel adapter, name) of each fabric collector the run starts on --ibsim-net: the first CAs'."""
    return [(host, f"fabric-{host.split()[0]}") for host in ca_ids(args.ibsim_net)[: args.fabric_collectors]]


def ca_ids(net: Path) -> list[str]:
    """The channel adapters' ids in an ibsim net file, in its order: where a collector can attach."""
    from collectors.mads import netfile

    return [n.id for n in netfile.parse(net.read_text()).nodes.values() if n.kind == "ca"]
