"""Run a whole fabric on one machine: `python -m fabricweb.runfabric --sim-dir DIR [options]`.

Starts, in order: the database migrations (and waits for them), optionally a private
redis-server, the simulator writing DIR/<node>/class/infiniband/... (unless --no-sim:
then any trees of that layout are read, whoever writes them), the ingest consumer
(`manage.py ingest`: snapshots, in batches), the ingest worker (Celery: rollups, prune,
stale checks, dispatch), the alerts worker (Celery: notifications), celery beat, one node
agent serving every tree in DIR, and with --web Django's development server. With --fabric the
simulator also writes the switch fabric its hosts hang on (DIR/fabric.net), and with it or
--ibsim-net FILE, ibsim simulates that fabric (its console reads FILE.ctl), opensm brings it up, and
a fabric collector (`python -m fabricweb.fabricagent`, under ibsim-run) sweeps it every poll.
Each child runs in a process group of its own; Ctrl-C or SIGTERM stops every group,
and if any child exits on its own the rest are stopped and the exit status is 1.

Central processes get the environment as it is (DATABASE_URL, SECRET_KEY or DEBUG=1,
REDIS_URL) with FABRIC_POLL_INTERVAL set to --interval; the node agent gets no
DATABASE_URL, no SECRET_KEY and no FABRIC_NODE_KEY_SECRET, as on a real compute node.
Nodes are authenticated as on a real site: with FABRIC_NODE_KEY_SECRET from the environment,
or one made up for this run, every node's key is derived as `manage.py node_key` derives it
and handed to its agent in a key file (FABRIC_NODE_KEY_FILE), and ingest refuses unsigned
snapshots (FABRIC_NODE_AUTH required, unless the environment says off).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fabricweb.env import Env, redact_url
from fabricweb.names import ALERTS_QUEUE, INGEST_QUEUE
from fabricweb.nodeauth import collector_key, node_key

BASE_DIR = Path(__file__).resolve().parent.parent
PY, MANAGE = sys.executable, str(BASE_DIR / "manage.py")
CELERY = [PY, "-m", "celery", "-A", "fabricweb"]
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
STOP_GRACE_S = 10.0
START_TIMEOUT_S = 30.0
AGENT_STOPS_AFTER_S = 30.0  # --agent-stops: a Celery worker needs seconds to start on a busy machine
CENTRAL_ONLY = ("DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE")
# Neither the site's node-key secret (nor a key given to this process) nor the site's secret key, from a file either.
# REDIS_PASSWORD(_FILE) goes through: the agent reads it as the central side does.
AGENT_NEVER = ("FABRIC_NODE_KEY", "SECRET_KEY_FILE", "DATABASE_URL_FILE")


def say(message: str) -> None:
    print(f"runfabric: {message}", file=sys.stderr, flush=True)


class Stopped(Exception):
    """Ctrl-C or SIGTERM arrived while starting up."""


@dataclass
class Child:
    name: str
    proc: subprocess.Popen


class Children:
    """The processes started, each the leader of its own process group (so its own children go with it)."""

    def __init__(self) -> None:
        self.children: list[Child] = []
        self.stop_requested = False

    def start(
        self, name: str, argv: list[str], env: dict[str, str], stdin=subprocess.DEVNULL, stdout=None, cwd=BASE_DIR
    ) -> None:
        try:
            proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=stdin, stdout=stdout, process_group=0)
        except OSError as e:
            raise SystemExit(f"cannot start the {name}: {e}") from None
        self.children.append(Child(name, proc))

    def exited(self) -> Child | None:
        return next((c for c in self.children if c.proc.poll() is not None), None)

    def wait_for(self, what: str, ready: Callable[[], bool], timeout: float = START_TIMEOUT_S) -> None:
        """Wait until `ready()`, giving up if asked to stop, if a child dies, or after `timeout`."""
        deadline = time.monotonic() + timeout
        while not ready():
            if self.stop_requested:
                raise Stopped
            dead = self.exited()
            if dead is not None:
                raise SystemExit(f"the {dead.name} exited with status {dead.proc.returncode} before {what}")
            if time.monotonic() > deadline:
                raise SystemExit(f"no {what} after {timeout:g} s")
            time.sleep(0.1)

    def stop(self) -> None:
        """SIGTERM to every group, SIGKILL to any still there after the grace period."""
        self._signal_all(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for child in self.children:
            try:
                child.proc.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                say(f"the {child.name} did not stop in {STOP_GRACE_S:g} s; killing it")
        # A leader that stopped may leave members behind (pool processes): kill what is left of each group.
        self._signal_all(signal.SIGKILL)
        for child in self.children:
            child.proc.wait()

    def stop_one(self, name: str) -> None:
        """Stop one child (and its group) on purpose: it is no longer watched."""
        child = next(c for c in self.children if c.name == name)
        self.children.remove(child)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGTERM)
        try:
            child.proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            say(f"the {name} did not stop in {STOP_GRACE_S:g} s; killing it")
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.proc.pid, signal.SIGKILL)
        child.proc.wait()

    def _signal_all(self, sig: int) -> None:
        for child in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.proc.pid, sig)


def node_trees(sim_dir: Path) -> list[str]:
    if not sim_dir.is_dir():
        return []
    return sorted(p.name for p in sim_dir.iterdir() if (p / "class" / "infiniband").is_dir())


def redis_answers(url: str) -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(url, socket_timeout=1).ping())
    except redis.exceptions.ConnectionError:
        return False


def start_private_redis(children: Children, env: dict[str, str]) -> None:
    with socket.socket() as s:  # a free port; the tiny race with another binder is acceptable for a demo
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env["REDIS_URL"] = f"redis://127.0.0.1:{port}/0"
    argv = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    children.start("redis-server", [*argv, "--loglevel", "warning"], env)
    children.wait_for("answer from redis-server", lambda: redis_answers(env["REDIS_URL"]), 10)


def start_fabric(
    args: argparse.Namespace, children: Children, env: dict[str, str], state_dir: str, secret: str
) -> None:
    """Everything but the database and Redis: simulator, ingest consumer and worker, beat, node agent, web."""
    sim_dir, interval = args.sim_dir, env["FABRIC_POLL_INTERVAL"]
    if not args.no_sim:
        simulate = ["-m", "collectors", "simulate", "--out", str(sim_dir), "--nodes", str(args.nodes)]
        simulate += [f"--fault={spec}" for spec in args.fault]
        if args.fabric:
            simulate += ["--fabric", "--ibsim-ctl", f"{args.ibsim_net}.ctl"]
            make_fifo(Path(f"{args.ibsim_net}.ctl"))
        children.start("simulator", [PY, *simulate, "--interval", interval], env)
    want = 1 if args.no_sim else args.nodes
    children.wait_for(f"node trees under {sim_dir}", lambda: len(node_trees(sim_dir)) >= want)
    if args.ibsim_net is not None:
        children.wait_for(f"the fabric {args.ibsim_net}", args.ibsim_net.is_file)

    children.start("ingest consumer", [PY, MANAGE, "ingest"], env)
    quiet = ["--without-gossip", "--without-mingle", "--without-heartbeat", "--loglevel", args.log_level]
    ingest = ["worker", "-Q", INGEST_QUEUE, "-n", "ingest@%h", "-c", str(args.ingest_concurrency), *quiet]
    children.start("ingest worker", [*CELERY, *ingest], env)
    alerts = ["worker", "-Q", ALERTS_QUEUE, "-n", "alerts@%h", "-c", "1", *quiet]
    children.start("alerts worker", [*CELERY, *alerts], env)
    beat = ["beat", "-s", os.path.join(state_dir, "beat-schedule"), "--loglevel", args.log_level]
    children.start("beat", [*CELERY, *beat], env)
    agent_env = {k: v for k, v in env.items() if k not in CENTRAL_ONLY and not k.startswith(AGENT_NEVER)}
    served = str(sim_dir)
    keys = node_keys_file(secret, node_trees(sim_dir), state_dir)
    if args.agent_stops:
        served = trees_without(sim_dir, args.agent_stops, state_dir)
        own = {**agent_env, "FABRIC_NODE_NAME": args.agent_stops, "FABRIC_SYSFS_ROOT": str(sim_dir / args.agent_stops)}
        own["FABRIC_NODE_KEY"] = node_key(secret, args.agent_stops)
        children.start(f"node agent of {args.agent_stops}", [PY, "-m", "fabricweb.agent"], own)
    agent_env.update(FABRIC_SIM_DIR=served, FABRIC_NODE_KEY_FILE=keys)
    children.start("node agent", [PY, "-m", "fabricweb.agent"], agent_env)
    if args.ibsim_net is not None:
        start_ibsim(args, children, {k: v for k, v in agent_env.items() if not k.startswith("FABRIC_NODE_KEY")},
                    state_dir, secret)  # fmt: skip
    if args.web:
        children.start("web server", [PY, MANAGE, "runserver", "--noreload", args.web], env)


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
        children.start(
            "opensm", ["ibsim-run", "opensm", "-f", str(osm_log), "-s", "2"], osm_env, stdout=out, cwd=state_dir
        )
    # A master subnet manager sweeps at once: LIDs are assigned within its first sweep, ports made ACTIVE.
    children.wait_for("opensm's 'Entering MASTER state'", file_says(osm_out, "Entering MASTER state"), 60)
    hosts = [n for n in ca_ids(net)][: args.fabric_collectors]
    for i, host in enumerate(hosts):
        name = f"fabric-{host.split()[0]}"
        own = {
            **env,
            "SIM_HOST": host,
            "FABRIC_COLLECTOR_NAME": name,
            "FABRIC_COLLECTOR_KEY": collector_key(secret, name),
        }
        children.start(f"fabric collector {name}", ["ibsim-run", PY, "-m", "fabricweb.fabricagent"], own, cwd=state_dir)
        say(f"fabric collector {name} sweeps {net} from {host!r}" + (" (standby)" if i else ""))


def ca_ids(net: Path) -> list[str]:
    """The channel adapters' ids in an ibsim net file, in its order: where a collector can attach."""
    from collectors.fabric import netfile

    return [n.id for n in netfile.parse(net.read_text()).nodes.values() if n.kind == "ca"]


def node_keys_file(secret: str, nodes: list[str], state_dir: str) -> str:
    """The keys of `nodes` ({node: key}, as `manage.py node_key --json` prints them), readable by this user only."""
    path = os.path.join(state_dir, "node-keys.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump({n: node_key(secret, n) for n in nodes}, f)
    return path


def trees_without(sim_dir: Path, node: str, state_dir: str) -> str:
    """A directory of links to every node tree but `node`'s: the shared agent serves those, `node` has its own."""
    if node not in node_trees(sim_dir):
        raise SystemExit(f"--agent-stops: no node tree {node} under {sim_dir}")
    view = Path(state_dir) / "agent-trees"
    view.mkdir()
    for name in node_trees(sim_dir):
        if name != node:
            (view / name).symlink_to(sim_dir / name)
    return str(view)


def run(args: argparse.Namespace, children: Children, state_dir: str) -> int:
    env = {**os.environ, "FABRIC_POLL_INTERVAL": f"{poll_interval(args):g}", "LOG_LEVEL": args.log_level}
    node_secret = Env(env).secret("FABRIC_NODE_KEY_SECRET", None)
    if node_secret is None:
        # A secret of this run only: the nodes' keys are derived from it and handed out below.
        node_secret = env["FABRIC_NODE_KEY_SECRET"] = secrets.token_hex(32)
    say("migrating the database")
    if subprocess.run([PY, MANAGE, "migrate", "--noinput"], env=env, cwd=BASE_DIR).returncode:
        raise SystemExit("migrate failed")
    if children.stop_requested:
        raise Stopped
    if args.start_redis:
        start_private_redis(children, env)
    start_fabric(args, children, env, state_dir, node_secret)

    nodes, sim = node_trees(args.sim_dir), "" if args.no_sim else " (simulated)"
    say(f"{len(nodes)} nodes under {args.sim_dir}{sim}, polled every {env['FABRIC_POLL_INTERVAL']} s")
    say(f"broker {redact_url(env.get('REDIS_URL', DEFAULT_REDIS_URL))}")
    say(f"node auth {env.get('FABRIC_NODE_AUTH', 'required')}: each node signs with its key (FABRIC_NODE_KEY_FILE)")
    say(f"database {redact_url(env.get('DATABASE_URL', 'var/fabricweb.sqlite3 (the default)'))}")
    if not args.no_sim:
        device = sorted(os.listdir(args.sim_dir / nodes[0] / "class" / "infiniband"))[0]
        say(f"add a fault: {PY} -m collectors fault --out {args.sim_dir} add {nodes[0]}/{device}/1:speed=QDR")
    if args.web:
        say(f"web: http://{args.web}/")
    say("Ctrl-C stops everything")

    # --agent-stops: the node's own agent runs long enough to start, register and report, then stops.
    running_for = max(AGENT_STOPS_AFTER_S, 3 * float(env["FABRIC_POLL_INTERVAL"]))
    stop_agent_at = time.monotonic() + running_for if args.agent_stops else None
    while not children.stop_requested:
        if stop_agent_at is not None and time.monotonic() >= stop_agent_at:
            children.stop_one(f"node agent of {args.agent_stops}")
            say(f"the agent of {args.agent_stops} has stopped (a demo fault): the node turns stale after 3 polls")
            stop_agent_at = None
        dead = children.exited()
        if dead is not None:
            say(f"the {dead.name} exited with status {dead.proc.returncode}; stopping the rest")
            return 1
        time.sleep(0.2)
    return 0


def poll_interval(args: argparse.Namespace) -> float:
    if args.interval is None:
        return Env().seconds("FABRIC_POLL_INTERVAL", 10.0)
    if not args.interval > 0:
        raise SystemExit("--interval must be more than 0")
    return args.interval


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m fabricweb.runfabric", description=__doc__.split("\n\n")[0])
    p.add_argument("--sim-dir", required=True, type=Path, metavar="DIR", help="node trees: DIR/<node>/class/infiniband")
    p.add_argument("--nodes", type=int, default=8, metavar="N", help="simulated nodes (default 8)")
    p.add_argument("--interval", type=float, metavar="S", help="poll interval (default: FABRIC_POLL_INTERVAL or 10)")
    p.add_argument("--no-sim", action="store_true", help="read the trees in DIR as they are; start no simulator")
    p.add_argument("--web", nargs="?", const="127.0.0.1:8000", metavar="ADDR", help="also run manage.py runserver")
    p.add_argument("--start-redis", action="store_true", help="start a private redis-server instead of REDIS_URL's")
    p.add_argument(
        "--fault", action="append", default=[], metavar="SPEC", help="a simulator fault from the start (repeatable)"
    )
    p.add_argument(
        "--fabric",
        action="store_true",
        help="the simulator also writes the switch fabric of its hosts (DIR/fabric.net), simulated with ibsim",
    )
    p.add_argument(
        "--ibsim-net",
        type=Path,
        metavar="FILE",
        help="simulate this fabric (ibnetdiscover's format) with ibsim and opensm, swept by a fabric collector",
    )
    p.add_argument("--fabric-collectors", type=int, default=1, choices=(1, 2), help="fabric collectors (default 1)")
    p.add_argument(
        "--agent-stops",
        metavar="NODE",
        help="NODE gets an agent of its own, stopped after 30 s or 3 polls (NODE turns stale)",
    )
    p.add_argument(
        "--ingest-concurrency",
        type=int,
        default=1,
        metavar="C",
        help="Celery ingest worker processes (rollups, prune, checks; default 1)",
    )
    p.add_argument(
        "--log-level",
        default="WARNING",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="of every process (default WARNING: INFO logs every task)",
    )
    args = p.parse_args(argv)
    args.sim_dir = args.sim_dir.resolve()
    if args.fabric:
        if args.no_sim:
            p.error("--fabric asks the simulator to write the fabric: it does not go with --no-sim")
        written = args.sim_dir / "fabric.net"
        if args.ibsim_net is not None and args.ibsim_net.resolve() != written:
            p.error(f"--fabric: the simulator writes {written}; leave out --ibsim-net or name that file")
        args.ibsim_net = written
    if args.ibsim_net is not None:
        args.ibsim_net = args.ibsim_net.resolve()
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    children = Children()

    def request_stop(signum, frame) -> None:
        children.stop_requested = True

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, request_stop)
    with tempfile.TemporaryDirectory(prefix="fabricweb-run-") as state_dir:
        try:
            status = run(args, children, state_dir)
        except Stopped:
            status = 0
        except SystemExit as e:
            if isinstance(e.code, str):
                say(e.code)
            status = e.code if isinstance(e.code, int) else 1
        finally:
            if children.children:
                say("stopping")
                children.stop()
    return status


if __name__ == "__main__":
    sys.exit(main())
