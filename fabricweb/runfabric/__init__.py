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
and if any child exits on its own the rest are stopped and the exit status is 1. With --log FILE the
children's output (worker banners, request lines) goes to FILE; with --web the last lines say where the
dashboard answers, and with --login NAME the login and password of an operator made for this run. With
--slurm-conf FILE the central processes read the running jobs (and drain) through that Slurm; with --slurm
a private Slurm (slurm.py) runs one slurmd per simulated host, with a few jobs across the leaves.

Central processes get the environment as it is (DATABASE_URL, SECRET_KEY or DEBUG=1,
REDIS_URL) with FABRIC_POLL_INTERVAL set to --interval; the node agent gets no
DATABASE_URL, no SECRET_KEY and no FABRIC_NODE_KEY_SECRET, as on a real compute node.
Nodes are authenticated as on a real site: with FABRIC_NODE_KEY_SECRET from the environment,
or one made up for this run, every node's key is derived as `manage.py node_key` derives it
and handed to its agent in a key file (FABRIC_NODE_KEY_FILE), and ingest refuses unsigned
snapshots (FABRIC_NODE_AUTH required, unless the environment says off).

Its parts: children.py (the process groups), start.py (what is started, and with what environment)
and ibsim.py (the simulated switch fabric); this module runs them from the command line.
"""

from __future__ import annotations

import argparse
import os
import secrets
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from fabricweb.env import Env, redact_url

from .children import BASE_DIR, PY, Children, Stopped, say
from .ready import announce, example_fault, first_device
from .slurm import PrivateSlurm, SlurmFailed, demo_jobs
from .slurm import missing as slurm_missing
from .start import MANAGE, node_trees, start_fabric, start_private_redis

DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/0"
AGENT_STOPS_AFTER_S = 30.0  # --agent-stops: a Celery worker needs seconds to start on a busy machine


def run(args: argparse.Namespace, children: Children, state_dir: str) -> int:
    env = {**os.environ, "FABRIC_POLL_INTERVAL": f"{poll_interval(args):g}", "LOG_LEVEL": args.log_level}
    node_secret = Env(env).secret("FABRIC_NODE_KEY_SECRET", None)
    if node_secret is None:
        # A secret of this run only: the nodes' keys are derived from it and handed out below.
        node_secret = env["FABRIC_NODE_KEY_SECRET"] = secrets.token_hex(32)
    say("migrating the database")
    log = children.log
    if subprocess.run([PY, MANAGE, "migrate", "--noinput"], env=env, cwd=BASE_DIR, stdout=log, stderr=log).returncode:
        raise SystemExit("migrate failed")
    if children.stop_requested:
        raise Stopped
    if args.start_redis:
        start_private_redis(children, env)
    slurm = scheduler(args, children, env, state_dir)
    start_fabric(args, children, env, state_dir, node_secret)
    if slurm is not None:
        try:
            slurm.start(node_trees(args.sim_dir))
        except SlurmFailed as e:
            say(f"Slurm did not start: {e}; running without jobs")
        else:
            for name, nodes in demo_jobs(args.ibsim_net, node_trees(args.sim_dir)) if args.ibsim_net else ():
                job = slurm.submit(nodes, name)
                if job is not None:
                    say(f"Slurm: job {job} {name} on {','.join(nodes)}")

    nodes, sim = node_trees(args.sim_dir), "" if args.no_sim else " (simulated)"
    say(f"{len(nodes)} nodes under {args.sim_dir}{sim}, polled every {env['FABRIC_POLL_INTERVAL']} s")
    say(f"broker {redact_url(env.get('REDIS_URL', DEFAULT_REDIS_URL))}")
    say(f"node auth {env.get('FABRIC_NODE_AUTH', 'required')}: each node signs with its key (FABRIC_NODE_KEY_FILE)")
    say(f"database {redact_url(env.get('DATABASE_URL', 'var/fabricweb.sqlite3 (the default)'))}")
    if args.log:
        say(f"the processes' output: {args.log}")
    if not args.no_sim:
        devices = {n: first for n in nodes if (first := first_device(args.sim_dir / n))}
        fault = example_fault(nodes, devices, args.fault, args.agent_stops)
        if fault is not None:
            say(f"take a port down: {PY} -m collectors fault --out {args.sim_dir} add {fault}  (then: remove {fault})")
    if args.agent_stops:
        say(f"{args.agent_stops}'s agent stops after about {AGENT_STOPS_AFTER_S:g} s (a demo fault), then turns stale")
    say("Ctrl-C stops everything")
    # --agent-stops: the node's own agent runs long enough to start, register and report, then stops.
    running_for = max(AGENT_STOPS_AFTER_S, 3 * float(env["FABRIC_POLL_INTERVAL"]))
    stop_agent_at = time.monotonic() + running_for if args.agent_stops else None
    if args.web:
        announce(children, args.web, args.login, env)

    while not children.stop_requested:
        if stop_agent_at is not None and time.monotonic() >= stop_agent_at:
            children.stop_one(f"node agent of {args.agent_stops}")
            children.note(
                f"the agent of {args.agent_stops} has stopped (a demo fault): the node turns stale after 3 polls"
            )
            stop_agent_at = None
        dead = children.exited()
        if dead is not None:
            say(f"the {dead.name} exited with status {dead.proc.returncode}; stopping the rest")
            return 1
        time.sleep(0.2)
    return 0


def scheduler(args: argparse.Namespace, children: Children, env: dict[str, str], state_dir: str) -> PrivateSlurm | None:
    """--slurm-conf: the central processes read jobs (and drain) through that Slurm. --slurm: a private Slurm for
    the simulated hosts, started once they are known (returned); without Slurm's packages, one line says so."""
    if args.slurm_conf is not None:
        env.update(FABRIC_JOBS="slurm", SLURM_CONF=str(args.slurm_conf))
        say(f"jobs from the Slurm of {args.slurm_conf}")
        return None
    if not args.slurm:
        return None
    why = slurm_missing()
    if why is not None:
        say(f"no Slurm for the jobs: {why}; running without jobs")
        return None
    slurm = PrivateSlurm(children, Path(state_dir) / "slurm")
    env.update(FABRIC_JOBS="slurm", SLURM_CONF=str(slurm.conf))
    return slurm


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
        "--slurm-conf",
        type=Path,
        metavar="FILE",
        help="read the running jobs (and drain) through the Slurm FILE configures (FABRIC_JOBS=slurm, SLURM_CONF)",
    )
    p.add_argument(
        "--slurm",
        action="store_true",
        help="run a private Slurm for the simulated hosts (one slurmd each) with a few jobs across the leaves",
    )
    p.add_argument("--log", type=Path, metavar="FILE", help="the processes' output goes to FILE (appended), not here")
    p.add_argument("--login", metavar="NAME", help="with --web: make an operator NAME and print its password last")
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
    if args.slurm and args.slurm_conf is not None:
        p.error("--slurm runs a Slurm of its own: it does not go with --slurm-conf")
    if args.login and not args.web:
        p.error("--login prints where to log in: it goes with --web")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    log = None
    if args.log is not None:
        args.log.parent.mkdir(parents=True, exist_ok=True)
        log = open(args.log, "a", buffering=1)  # noqa: SIM115 (open for the whole run, closed below)
    children = Children(log)

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
            if log is not None:
                log.close()
    return status
