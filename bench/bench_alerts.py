"""Notification latency with the whole pipeline running: fault -> event -> webhook received.

    .venv/bin/python bench/bench_alerts.py [--interval 2] [--nodes 6] [--rounds 12]

Starts the simulator (stepping every --sim-step s, so a fault reaches the trees at once, as
it would on hardware), `runfabric --no-sim --start-redis` on a SQLite database (agents,
ingest consumer, the alerts worker, beat; polls every --interval s) and a local webhook
receiver; creates one webhook channel (no `for`, no group window). Then, per round, after
a random pause (so faults land at any phase of the poll), it takes one more port down with
`collectors fault add` and times: fault written -> the event's poll (its opened_at, the
node's read time) and fault written -> the webhook body naming it arrives.
Goal: median fault -> notification at most the poll interval + 2 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from harness import wait_for  # noqa: E402

PY = sys.executable


class Receiver:
    def __init__(self) -> None:
        self.got: dict[str, float] = {}  # event key -> when the first notification naming it arrived
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                now = time.time()
                for item in body["events"]:
                    if body["status"] == "firing":
                        receiver.got.setdefault(item["key"], now)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/bench"


def settled(check):
    """`check` for harness.wait_for, an exception read as not yet (the tables appear when runfabric has migrated)."""

    def attempt():
        try:
            return check()
        except Exception:
            return None

    return attempt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=2.0, help="poll interval, s (default 2)")
    parser.add_argument("--nodes", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--sim-step", type=float, default=0.25, help="simulator step, s (default 0.25)")
    args = parser.parse_args()

    scratch = tempfile.mkdtemp(prefix="bench-alerts-", dir="/dev/shm" if os.access("/dev/shm", os.W_OK) else None)
    sim = os.path.join(scratch, "sim")
    from django.core.management.utils import get_random_secret_key

    os.environ.update(
        DATABASE_URL=f"sqlite:///{scratch}/bench.sqlite3",
        SECRET_KEY=get_random_secret_key(),
        DJANGO_SETTINGS_MODULE="fabricweb.settings",
        FABRIC_POLL_INTERVAL=f"{args.interval:g}",
        LOG_LEVEL="WARNING",
    )
    os.environ.pop("REDIS_URL", None)
    procs = []

    def start(argv, log):
        out = open(os.path.join(scratch, log), "wb")  # noqa: SIM115 - lives as long as the process
        procs.append(subprocess.Popen(argv, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, process_group=0))

    receiver = Receiver()
    try:
        simulate = ["-m", "collectors", "simulate", "--out", sim, "--nodes", str(args.nodes)]
        start([PY, *simulate, "--interval", f"{args.sim_step:g}", "--seed", "7"], "sim.log")
        wait_for("the simulated trees", settled(lambda: len(os.listdir(sim)) >= args.nodes), 30)
        fabric = ["-m", "fabricweb.runfabric", "--sim-dir", sim, "--no-sim", "--start-redis"]
        start([PY, *fabric, "--interval", f"{args.interval:g}", "--log-level", "WARNING"], "runfabric.log")

        import django

        django.setup()
        from fabricweb.alerts.models import Channel
        from fabricweb.health.models import Event
        from fabricweb.inventory.models import Node, Port

        wait_for("every node registered", settled(lambda: Node.objects.count() == args.nodes), 120)
        time.sleep(3 * args.interval)  # a history for every port, so nothing else is judged new
        Channel.objects.create(
            name="bench", kind="webhook", url=receiver.url, severities=["critical"], group_s=0, flap_hold_s=0
        )
        ports = list(
            Port.objects.filter(state_name="ACTIVE", link_layer="InfiniBand", vanished_at__isnull=True)
            .select_related("device__node")
            .order_by("device__node__name", "device__name", "number")
        )
        random.seed(1)
        random.shuffle(ports)
        rounds = ports[: args.rounds]
        print(
            f"{len(rounds)} rounds, poll interval {args.interval:g} s, {args.nodes} nodes, "
            f"simulator step {args.sim_step:g} s"
        )
        to_event, to_note = [], []
        for port in rounds:
            target = f"{port.device.node.name}/{port.device.name}/{port.number}"
            key = f"down:{target}"
            time.sleep(random.uniform(0, args.interval))
            fault = subprocess.run(
                [PY, "-m", "collectors", "fault", "--out", sim, "add", f"{target}:down"], cwd=REPO, capture_output=True
            )
            t0 = time.time()
            if fault.returncode:
                raise SystemExit(fault.stderr.decode())
            arrived = wait_for(
                f"the notification for {key}", lambda k=key: receiver.got.get(k), 10 * args.interval + 30
            )
            event = Event.objects.get(key=key, resolved_at__isnull=True)
            to_event.append(event.opened_at.timestamp() - t0)
            to_note.append(arrived - t0)
            print(f"  {target:22} poll +{to_event[-1]:5.2f} s   notification +{to_note[-1]:5.2f} s")
        goal = args.interval + 2
        median = statistics.median(to_note)
        ranked = sorted(to_note)
        p90 = ranked[min(len(ranked) - 1, int(0.9 * len(ranked)))]  # nearest rank: a value that was measured
        print(f"fault -> event's poll:    median {statistics.median(to_event):.2f} s")
        after_poll = [b - a for a, b in zip(to_event, to_note, strict=True)]
        print(f"event's poll -> received: median {statistics.median(after_poll):.2f} s")
        print(
            f"fault -> notification:    median {median:.2f} s, p90 {p90:.2f} s, max {max(to_note):.2f} s; "
            f"goal median <= {goal:g} s: {median / goal:.2f} of it"
        )
    finally:
        for proc in procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        receiver.server.shutdown()
        subprocess.run(["rm", "-rf", scratch])


if __name__ == "__main__":
    main()
