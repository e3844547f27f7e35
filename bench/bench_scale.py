"""The central side at 100,000 ports: ingest of a 4,000-host, 1,000-switch fabric on PostgreSQL,
through Redis, by `manage.py ingest` with one consumer and with two (shards), polls every 10 s.

    eval "$(scripts/test-services start)"     # PostgreSQL on 127.0.0.1:15432 (TEST_POSTGRES_URL)
    .venv/bin/python bench/bench_scale.py [--hosts 4000] [--hcas 8] [--switches 1000] [--switch-ports 64]
                                          [--polls 5] [--warm-polls 1] [--consumers 1 2] [--batch 100]
                                          [--sweep counters|full] [--profile] [--db URL]
                                          [--degraded-uplinks] [--seed-rings S] [--against DIR [--rounds R]]
    .venv/bin/python bench/bench_scale.py --hosts 400 --switches 100 --polls 3 --consumers 1   # 1/10: ~50 s
    git worktree add /tmp/before HEAD~3        # the peer: another tree of the same migrations
    .venv/bin/python bench/bench_scale.py --consumers 1 --against /tmp/before --rounds 2

`--against DIR` runs, for each --consumers value, the consumers (and the rollup job) of the tree at DIR in
turn with this tree's, R rounds alternated, on the same fabric, the same registered database and messages
made the same way (by this tree's agent code), then prints each tree's headline figures run by run, against
each other, with the ratio of the medians: the peer beside it in one invocation, as the machine drifts by a
tenth within minutes.

The fabric is made in memory, nothing is written to disk: `--hosts` hosts of `--hcas` one-port HCAs
(ConnectX-6, 4X HDR: the simulator's, read once from one simulated node, collectors.sim, and copied with
names, GUIDs and LIDs of each host's own), and `--switches` switches of `--switch-ports` ports, a two-level
fat tree: a fifth of them spines, the rest leaves, host ports on the leaves' low ports rail by rail (HCA r
of every host on the leaves of rail r), each leaf's uplinks spread round-robin over the spines' ports. At
full size: 32,000 host ports, 800 leaves of 40 host ports and 16 uplinks (8 ports spare), 200 spines of 64,
64,000 switch ports. Switch sweeps are tests/fabric/fabric_support.py's SweepBuilder over that tree (links
retrained to 4X HDR, as the hosts say, every port supporting up to 4X HDR: no slow link), moved as
bench_fabric.py's Sweeps moves them. `--degraded-uplinks` makes every switch port support 12X, so every
switch-to-switch link is a width downgrade: a fabric in trouble, 12,800 critical events open at full size
(what this bench ran before the widths were set, by an oversight).
`--seed-rings 3600` gives every port that is up the ring of a busy port an hour old (~110 entries of waits)
and spreads the nodes' history checkpoints over 120 s, as in a fabric that has run for a while (seed_rings);
without it the rings are as young as the bench's polls, and no checkpoint falls due in a run. The rings are
written as lists of entries, the form every tree reads (--against's too); a tree that holds them as columns
(inventory/ringcolumns.py) makes them columns as it loads them, and writes columns at each node's next checkpoint.

Every poll moves every host port's counters as traffic would: data at a rate of the port's own (busy and
idle ports), packets and waits with it, hw_counters every 6th poll (the agent's FABRIC_HW_COUNTERS_EVERY),
and now and then errors (symbol errors on ~0.2% of ports a poll, receive errors, link recoveries); switch
ports the same way (cabled ports' traffic, symbol errors on ~0.1% a sweep). Counters only ever rise.

Messages are what the agents put on the broker: each host's snapshot signed with its node key and sent by
the node agent's own Agent.deliver (fabricweb/agent/tasks.py: the current wire format, `snapshots` or
`snapshots.<k>` by the node's shard), each sweep by the fabric agent's FabricAgent.deliver (`sweeps`,
signed with the collector's key), both into a staging database of the bench's private redis-server, from
which their bytes are taken (untimed) and pushed as they are onto the real queues at each poll. Two runs'
messages differ only in their dates and queues.

Each run (one per --consumers value): a fresh database copied from one registered once (the first poll of
every host stored directly and the first full sweep; `CREATE DATABASE ... TEMPLATE`), then N processes of
`manage.py ingest --shards N` (FABRIC_INGEST_SHARDS=N, signed snapshots required) started, then every 10 s
one poll of every host (pushed at once, as beat's dispatch makes all agents poll together) and one sweep.
First --warm-polls polls, pushed and waited for until stored, are not counted (the consumers load every
row, the shards are shared out); then the timed polls, made once the warm-up is stored (dated as far ahead
as making them takes, each pushed at its date), and for them:

- lag: from pushing a poll to the moment this process sees the last of its rows committed (the hosts'
  NodePoll rows of that date, the sweep's Sweep row), polled every 0.1 s; under 10 s keeps up;
- port-samples/s: the poll's host and switch ports over the time the consumers spent on it (from its push,
  or the previous poll's end when that came later, to its end), all consumers and per consumer;
- CPU: the consumers' and their PostgreSQL backends' (from /proc, each backend read while it lives),
  µs per port-sample; with the sweeps apart, by kind (a host port-sample on the snapshot queues' consumers, a
  switch port-sample on the sweeps'), over the whole run and while busy (from each poll's push to the last row
  of its kind: without the idle looks between polls, a fifth of a consumer's CPU at a tenth of the size);
- consumer peak RSS: VmHWM of each `manage.py ingest` process at the end (not tracemalloc);
- PostgreSQL disk: the samples tables (pg_partition_tree of telemetry_nodepoll), the whole database
  (pg_database_size: with the port rows' old versions, until vacuum) and WAL written (the cluster's: run
  nothing else on it) per poll, and for a day of 10 s polls (the mean over the timed polls x 8,640);
- rollups: after the timed polls, with the consumers stopped, the real rollup job (rollup() of
  fabricweb/telemetry/history/rollup.py, what beat's `rollup-samples` runs every 300 s) run once, in a
  `manage.py shell -c` on the run's database, dated 2 h after the last poll so that every bucket of the
  polls stored (registration, warm-up, timed) is complete: rows written and buckets per period; bytes
  added to the 5-minute and hourly rollup tables (pg_total_relation_size over pg_partition_tree of
  telemetry_portrollup_300 and _3600, indexes and the partitions it made included) and per row; WAL
  written per row; the job's wall time (one run: no spread), its process's CPU and its PostgreSQL
  backend's, in all and per raw port-sample it read (every NodePoll row's: beat's run reads a
  bucket's 30 polls, this one the run's few). The timed polls (5 x 10 s) fill at most one 5-minute
  bucket, and partly, so the day is not extrapolated from the run: rollups' disk per day = B per
  5-minute row x ports x 288 (a bucket per port every 300 s) + B per hourly row x ports x 24 (one
  every 3,600 s), ports = host + switch ports offered (rows per bucket are printed beside them); rows
  as written, before any vacuum or rewrite; their WAL a day the same way, B of WAL per row x ports x 312;
- bytes in the broker per host port and per switch port: each message's length as Redis holds it.

The rings of recent samples are not full (a fabric's first minute, not an hour in: bench_consumer.py
--warm does that at small scale), which flatters ingest a little. Figures are min / median / max over
the timed polls, with the load average; `--profile` runs the first consumer under cProfile
(its figures are then cProfile's too: for where the time goes, not for how much).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import itertools
import json
import math
import os
import pstats
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench_fabric import REPO, Sweeps, cpu_s, drop_database, iso, load, machine, proc_kb, setup_django
from bench_fabric import spread as _spread

from harness import start_redis

COLLECTOR = "fabric-scale"
SECRET = "bench-scale-node-key-secret-" + "5" * 40  # FABRIC_NODE_KEY_SECRET of the run (32+ characters)
STAGING_DB = 15  # the redis database the agents send to, from which the bench takes their messages
POLL_S = 10.0
DAY_POLLS = round(86400 / POLL_S)
HOST_OUI, HDR = 0x0C42A1, "HDR"
REGISTER_BATCH = 200
SPINE_SHARE = 5  # one switch in five is a spine


def spread(values: list[float], fmt: str = "{:.2f}") -> str:
    return _spread(values, fmt)


# -- the fabric, in memory -----------------------------------------------------------------------
@dataclass
class Tree:
    """A two-level fat tree: who is cabled to what, and the sweep builder that reads it."""

    hosts: list[str]
    hcas: int
    leaves: list[str]
    spines: list[str]
    down: int  # host ports per leaf
    up: int  # uplinks per leaf
    builder: object = None  # fabric_support.SweepBuilder
    switch_ports: int = 0

    def ca(self, h: int, r: int) -> tuple[str, int]:
        """(net id, node GUID) of host h's HCA r: mlx5_r of cn<h>, GUIDs as ConnectX's (OUI, 0x0300)."""
        return f"{self.hosts[h]} mlx5_{r}", (HOST_OUI << 40) | (0x0300 << 24) | ((h * self.hcas + r) * 2 + 2)

    def lid(self, h: int, r: int) -> int:
        """The LID of host h's HCA r port: after the switches' (SweepBuilder gives them 1 on)."""
        return len(self.leaves) + len(self.spines) + 1 + h * self.hcas + r


def fat_tree(hosts: int, hcas: int, switches: int, ports: int, degraded_uplinks: bool = False) -> Tree:
    from collectors.mads import netfile
    from collectors.sim.cabling import SWITCH_OUI, Switch
    from tests.fabric.fabric_support import SweepBuilder

    spines = max(1, switches // SPINE_SHARE)
    leaves = switches - spines
    down = math.ceil(hosts * hcas / leaves)
    up = min(ports - down, spines * ports // leaves)
    if up < 1:
        raise SystemExit(f"{hosts * hcas} host ports do not fit on {leaves} leaves of {ports} ports with uplinks")
    width = len(str(hosts))
    tree = Tree(
        [f"cn{h + 1:0{max(4, width)}d}" for h in range(hosts)],
        hcas,
        _names("leaf", leaves),
        _names("spine", spines),
        down,
        up,
        switch_ports=switches * ports,
    )
    net = netfile.NetFile()
    for i, name in enumerate(tree.leaves + tree.spines):
        switch = Switch(name, (SWITCH_OUI << 40) | (0x0300 << 24) | (0x10000 + i), ports)
        net.nodes[name] = netfile.NetNode("switch", ports, name, switch.description, switch.guid)
    for h in range(hosts):
        for r in range(hcas):
            ident, guid = tree.ca(h, r)
            net.nodes[ident] = netfile.NetNode("ca", 1, ident, ident, guid)
    builder = SweepBuilder(net, collector=COLLECTOR)
    for i, (h, r) in enumerate((h, r) for r in range(hcas) for h in range(hosts)):  # rail by rail
        builder.link(tree.leaves[i // down], i % down + 1, tree.ca(h, r)[0], 1, 4, HDR)
        builder.nodes[tree.ca(h, r)[0]].ports[1].lid = tree.lid(h, r)
    spine_next = dict.fromkeys(tree.spines, 1)
    for k, leaf in enumerate(tree.leaves):
        for j in range(up):
            spine = tree.spines[(k * up + j) % spines]
            builder.link(leaf, down + 1 + j, spine, spine_next[spine], 4, HDR)
            spine_next[spine] += 1
    _supports_hdr(builder, 12 if degraded_uplinks else 4)
    tree.builder = builder
    return tree


def _names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i:0{max(3, len(str(count)))}d}" for i in range(1, count + 1)]


def _supports_hdr(builder, widest: int) -> None:
    """Every port supports up to HDR (SweepBuilder's ibsim-like ports stop at QDR); an HCA's up to 4X (a
    ConnectX-6), a switch's up to `widest` lanes. At 4X, as a Quantum switch's, 4X HDR is no slow link: the fabric
    is healthy but for the errors each poll brings. At 12X (--degraded-uplinks), every switch-to-switch link is a
    width downgrade: a critical event open on one end of each (12,800 at full size), loaded and stepped through
    the events' lifecycle at every sweep; the links to hosts stay whole (4X both ends can)."""
    from collectors.link import SPEEDS
    from collectors.mads.mad import NODE_TYPE_SWITCH

    speeds = frozenset(s.name for s in SPEEDS[: [s.name for s in SPEEDS].index(HDR) + 1])
    for node in builder.nodes.values():
        lanes = widest if node.node_type == NODE_TYPE_SWITCH else 4
        for port in node.ports.values():
            port.speed_supported, port.width_supported = speeds, frozenset(w for w in (1, 2, 4, 8, 12) if w <= lanes)


# -- host snapshots --------------------------------------------------------------------------------
@dataclass
class PortState:
    counters: dict
    hw: dict
    rate: float  # its share of the link: busy and idle ports


@dataclass
class Hosts:
    """Every host's snapshot, poll after poll: the simulator's 8-HCA node copied, counters moving."""

    tree: Tree
    top: dict = field(default_factory=dict)  # the template: its top-level fields
    devices: list[list[dict]] = field(default_factory=list)  # per host: its devices, ports without counters
    state: list[list[PortState]] = field(default_factory=list)
    polls: int = 0
    rng: random.Random = field(default_factory=lambda: random.Random(37))

    @classmethod
    def of(cls, tree: Tree) -> Hosts:
        from bench_ingest import from_simulator  # one simulated node: 8 one-port ConnectX-6, 4X HDR

        template = from_simulator(1, tree.hcas, 1, 1)[0][0]
        hosts = cls(tree, template)
        for h, host in enumerate(tree.hosts):
            devices, state = [], []
            for r, dev in enumerate(template["devices"]):
                _, guid = tree.ca(h, r)
                port = dev["ports"][0]
                ports = [{**port, "port_guid": f"0x{guid + 1:016x}", "lid": tree.lid(h, r), "netdevs": [f"ib{r}"]}]
                devices.append(
                    {
                        **dev,
                        "node_guid": _colons(guid),
                        "sys_image_guid": _colons(tree.ca(h, 0)[1]),
                        "node_desc": f"{host} {dev['name']}",
                        "ports": ports,
                    }
                )
                rate = hosts.rng.random() ** 2
                state.append(PortState(dict(port["counters"]), dict(port["hw_counters"]), rate))
            hosts.devices.append(devices)
            hosts.state.append(state)
        return hosts

    @property
    def ports(self) -> int:
        return sum(len(d) for d in self.devices)

    def poll(self, when: datetime) -> list[dict]:
        """Every host's next snapshot, dated `when` (the first call: the counters as read)."""
        if self.polls:
            for state in self.state:
                for port in state:
                    self._move(port)
        self.polls += 1
        at = iso(when)
        out = []
        for host, devices, state in zip(self.tree.hosts, self.devices, self.state, strict=True):
            devs = [
                {**dev, "ports": [{**dev["ports"][0], "counters": s.counters, "hw_counters": s.hw}]}
                for dev, s in zip(devices, state, strict=True)
            ]
            out.append({**self.top, "host": host, "collected_at": at, "devices": devs})
        return out

    def _move(self, port: PortState) -> None:
        rng, c = self.rng, port.counters
        for way in ("xmit", "rcv"):
            data = int(port.rate * rng.uniform(0.7, 1.3) * 25e9 * POLL_S)  # bytes: a share of 4X HDR's 25 GB/s
            packets = data // 4096 + rng.randrange(1000)
            multicast = rng.randrange(200)
            c[f"port_{way}_data"] += data
            c[f"port_{way}_packets"] += packets
            c[f"unicast_{way}_packets"] += packets - multicast
            c[f"multicast_{way}_packets"] += multicast
        c["port_xmit_wait"] += int(port.rate**3 * 2e6 * rng.random())
        if rng.random() < 0.002:
            c["symbol_error"] += rng.randrange(1, 20)
        if rng.random() < 0.001:
            c["port_rcv_errors"] += rng.randrange(1, 5)
        if rng.random() < 0.0002:
            c["link_error_recovery"] += 1
        if self.polls % 6 == 0:  # the agent reads hw_counters every 6th poll and sends the last ones between
            hw = port.hw
            hw["rx_write_requests"] += int(port.rate * 4e8)
            hw["rx_read_requests"] += int(port.rate * 1e8)
            if rng.random() < 0.01:
                hw["out_of_sequence"] += rng.randrange(1, 100)


def _colons(guid: int) -> str:
    h = f"{guid:016x}"
    return ":".join(h[i : i + 4] for i in range(0, 16, 4))


# -- switch sweeps ---------------------------------------------------------------------------------
class Switches:
    """The tree's sweeps: bench_fabric's Sweeps (cabled ports' traffic moved k steps at sweep k) plus
    symbol errors that stay counted, on ~0.1% of the cabled ports a sweep."""

    def __init__(self, tree: Tree, when: datetime) -> None:
        full = tree.builder.snapshot(when)
        counters = {"sweep": {**full["sweep"], "queries": tree.switch_ports, "duration_s": 0.6}}
        self.sweeps = Sweeps(json.dumps(full), json.dumps(counters))
        self.cabled = sorted({index for index, _, _ in self.sweeps.moves})
        self.symbol = self.sweeps.full["counters"]["columns"].index("symbol_error")
        self.errors: dict[int, int] = {}
        self.k = 0
        self.rng = random.Random(38)

    def sweep(self, when: datetime, mode: str) -> dict:
        snap = self.sweeps.sweep(self.k, when, mode)
        if self.k:
            for index in self.rng.sample(self.cabled, max(1, len(self.cabled) // 1000)):
                self.errors[index] = self.errors.get(index, 0) + self.rng.randrange(1, 50)
        for index, count in self.errors.items():
            snap["counters"]["rows"][index][self.symbol] += count
        self.k += 1
        return snap


# -- the wire ------------------------------------------------------------------------------------
class Wire:
    """Messages as the node agent and the fabric agent put them on the broker, taken from a staging database."""

    def __init__(self, port: int, hosts: list[str], shards: int) -> None:
        import redis

        from fabricweb.agent.config import AgentConfig
        from fabricweb.agent.loop import connection
        from fabricweb.agent.publish import Publisher
        from fabricweb.agent.tasks import Agent
        from fabricweb.fabricagent.app import create_app as fabric_app
        from fabricweb.fabricagent.config import FabricAgentConfig
        from fabricweb.names import SWEEP_QUEUE, snapshot_queue
        from fabricweb.nodeauth import collector_key, node_key

        url = f"redis://127.0.0.1:{port}/{STAGING_DB}"
        self.client = redis.Redis(port=port, db=STAGING_DB)
        keys = {host: node_key(SECRET, host) for host in hosts}
        config = AgentConfig(broker_url=url, node_name="bench-scale", node_keys=keys, ingest_shards=shards)
        self.node = Agent(config, Publisher(connection(config)))
        fconfig = FabricAgentConfig(broker_url=url, collector=COLLECTOR, key=collector_key(SECRET, COLLECTOR))
        self.fabric_app, self.fabric = fabric_app(fconfig, port_factory=lambda *a: None)
        self.queues = [*sorted({snapshot_queue(h, shards) for h in hosts}), SWEEP_QUEUE]

    def poll(self, snaps: list[dict], sweep: dict) -> dict[str, list[bytes]]:
        """Queue -> the poll's messages on it, oldest first."""
        for snap in snaps:
            self.node.deliver(snap)
        self.fabric.deliver(sweep)
        out = {}
        for queue in self.queues:
            out[queue] = self.client.lrange(queue, 0, -1)[::-1]  # LPUSHed: the newest first
            self.client.delete(queue)
        return out

    def close(self) -> None:
        self.node.stop()
        self.fabric_app.close()


def push(client, messages: dict[str, list[bytes]]) -> None:
    pipe = client.pipeline(transaction=False)
    for queue, msgs in messages.items():
        for i in range(0, len(msgs), 100):
            pipe.lpush(queue, *msgs[i : i + 100])
    pipe.execute()


# -- PostgreSQL ------------------------------------------------------------------------------------
def db_url(base: str, name: str) -> str:
    return base.rsplit("/", 1)[0] + "/" + name


def copy_database(base: str, template: str, name: str) -> None:
    import psycopg

    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name}")
        for attempt in range(50):  # autovacuum may be in the template for a moment
            try:
                conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
                return
            except psycopg.errors.ObjectInUse:
                if attempt == 49:
                    raise
                time.sleep(0.2)


class Watch:
    """What the run's database says: polls stored, sizes, WAL; the consumers' backends."""

    def __init__(self, url: str) -> None:
        import psycopg

        self.conn = psycopg.connect(url, autocommit=True)

    def one(self, sql: str, args=()) -> tuple:
        return self.conn.execute(sql, args).fetchone()

    def hosts_stored(self, when: datetime) -> int:
        return self.one("SELECT count(*) FROM telemetry_nodepoll WHERE ts = %s", [when])[0]

    def sweep_stored(self, when: datetime) -> bool:
        return self.one("SELECT count(*) FROM fabric_sweep WHERE collected_at = %s", [when])[0] > 0

    def sizes(self) -> dict:
        samples = self.one(
            "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree('telemetry_nodepoll')"
        )[0]
        db = self.one("SELECT pg_database_size(current_database())")[0]
        wal = self.one("SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')")[0]
        return {"samples": int(samples), "database": int(db), "wal": int(wal)}

    def samples(self, when: datetime | None = None) -> int:
        """Port-samples in the NodePoll rows dated `when`, or in all of them (packing.unpack)."""
        from fabricweb.telemetry.storage.packing import unpack

        if when is None:
            rows = self.conn.execute("SELECT ports FROM telemetry_nodepoll").fetchall()
        else:
            rows = self.conn.execute("SELECT ports FROM telemetry_nodepoll WHERE ts = %s", [when]).fetchall()
        return sum(len(unpack(bytes(r[0]))) for r in rows)

    def backends(self) -> list[int]:
        rows = self.conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchall()
        return [r[0] for r in rows]

    def close(self) -> None:
        self.conn.close()


# -- consumers ---------------------------------------------------------------------------------------
class Consumers:
    """N `manage.py ingest --shards N` processes on the run's database, their logs in scratch."""

    def __init__(self, n: int, env: dict, scratch: Path, batch: int, profile: bool, repo: Path = REPO) -> None:
        self.procs, self.logs, self.profile = [], [], None
        for i in range(n):
            cmd = [sys.executable]
            if profile and i == 0:
                self.profile = scratch / "consumer.prof"
                cmd += ["-m", "cProfile", "-o", str(self.profile)]
            cmd += [str(repo / "manage.py"), "ingest", "--shards", str(n), "--batch", str(batch)]
            log = scratch / f"consumer{i}.log"
            with open(log, "wb") as out:
                self.procs.append(subprocess.Popen(cmd, cwd=repo, env=env, stdout=out, stderr=subprocess.STDOUT))
            self.logs.append(log)

    def cpu(self) -> float:
        return sum(self.cpus())

    def cpus(self) -> list[float]:
        return [cpu_s(p.pid) for p in self.procs]

    def hwm_mb(self) -> list[float]:
        return [proc_kb("VmHWM", p.pid) / 1024 for p in self.procs]

    def check(self) -> None:
        for proc, log in zip(self.procs, self.logs, strict=True):
            if proc.poll() is not None:
                raise RuntimeError(f"a consumer exited ({proc.returncode}): {log.read_text()[-2000:]}")

    def holds(self) -> list[str]:
        """What each consumer's log last said it reads."""
        out = []
        for log in self.logs:
            lines = [x for x in log.read_text(errors="replace").splitlines() if "ingest: reading" in x]
            out.append(lines[-1].split("ingest: reading ", 1)[1].split(" on ")[0] if lines else "?")
        return out

    def warnings(self) -> list[str]:
        return [
            x
            for log in self.logs
            for x in log.read_text(errors="replace").splitlines()
            if " WARNING " in x or " ERROR " in x
        ]

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# -- one run ---------------------------------------------------------------------------------------
@dataclass
class Poll:
    k: int
    when: datetime  # the hosts' collected_at; the sweep's is a second later
    messages: dict
    pushed: float = 0.0  # time.time()
    hosts_done: float | None = None
    sweep_done: float | None = None
    sizes: dict | None = None
    cpu: float = 0.0  # consumers' CPU s at its end
    cpus: list[float] | None = None  # ... each consumer's
    pg_cpu: float = 0.0
    # Each consumer's CPU s when it was pushed, when the hosts' rows were all stored and when the sweep's was:
    # the CPU of its busy stretches, without the idle looks between polls.
    cpus_pushed: list[float] | None = None
    cpus_hosts_done: list[float] | None = None
    cpus_sweep_done: list[float] | None = None

    @property
    def sweep_when(self) -> datetime:
        return self.when + timedelta(seconds=1)

    @property
    def done(self) -> float | None:
        return None if self.hosts_done is None or self.sweep_done is None else max(self.hosts_done, self.sweep_done)


class Schedule:
    """Polls made ahead of their dates: dated as far ahead as making them takes (calibrated), so that each is
    pushed at its own date, as an agent sends a poll just read."""

    def __init__(self, wire: Wire, hosts: Hosts, switches: Switches, mode: str) -> None:
        self.wire, self.hosts, self.switches, self.mode = wire, hosts, switches, mode
        self.k = 0
        self.per_host = self._calibrate()

    def _calibrate(self) -> float:
        """Seconds to make and send one host's messages (100 hosts' next poll, sent and thrown away)."""
        n = min(100, len(self.hosts.tree.hosts))
        snaps = self.hosts.poll(datetime.now(UTC))[:n]  # the counters moved: no matter, they only rise
        start = time.perf_counter()
        for snap in snaps:
            self.wire.node.deliver(snap)
        seconds = (time.perf_counter() - start) / n
        for queue in self.wire.queues:
            self.wire.client.delete(queue)
        return seconds

    def make(self, count: int) -> list[Poll]:
        est = (self.per_host * len(self.hosts.tree.hosts) + 0.5) * count * 1.15 + 2
        t0 = datetime.fromtimestamp(math.ceil(time.time() + est), UTC)
        start = time.perf_counter()
        polls = []
        for i in range(count):
            when = t0 + timedelta(seconds=POLL_S * i)
            self.k += 1
            sweep = self.switches.sweep(when + timedelta(seconds=1), self.mode)
            polls.append(Poll(self.k, when, self.wire.poll(self.hosts.poll(when), sweep)))
        made = time.perf_counter() - start
        print(f"  {count} polls' messages made in {made:.1f} s (dated {est:.0f} s ahead)", flush=True)
        return polls


def run(
    n: int,
    args,
    tree: Tree,
    hosts: Hosts,
    switches: Switches,
    redis_port: int,
    template: str,
    scratch: Path,
    repo: Path = REPO,
    tag: str = "",
) -> dict:
    """One run of `n` consumers of the tree at `repo` (this one, or --against's), its database and scratch
    named by `n` and `tag`."""
    import redis

    name = f"{template}_run{n}{tag}"
    copy_database(args.db, template, name)
    wire = Wire(redis_port, tree.hosts, n)
    env = {
        **os.environ,
        "DATABASE_URL": db_url(args.db, name),
        "REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "FABRIC_INGEST_SHARDS": str(n),
        "LOG_LEVEL": "INFO",
    }
    (scratch / f"run{n}{tag}").mkdir(exist_ok=True)  # (the next round of --against writes over its logs)
    consumers = Consumers(n, env, scratch / f"run{n}{tag}", args.batch, args.profile, repo)
    watch = Watch(db_url(args.db, name))
    try:
        schedule = Schedule(wire, hosts, switches, args.sweep)
        client = redis.Redis(port=redis_port, db=0)
        warm = drive(schedule.make(args.warm_polls), client, watch, consumers, len(tree.hosts))
        print(f"  warm-up: {', '.join(f'{p.done - p.pushed:.1f}' for p in warm['polls'])} s from push to stored")
        result = drive(schedule.make(args.polls), client, watch, consumers, len(tree.hosts))
        polls = result["polls"]
        result["holds"] = consumers.holds()
        result["hwm_mb"] = consumers.hwm_mb()
        result["warnings"] = consumers.warnings()
        result["bytes"] = message_sizes(polls[0].messages, hosts.ports // len(tree.hosts), tree.switch_ports)
        hosts_stored = result["host_samples"] = [watch.samples(p.when) for p in polls]
        sweeps_stored = result["switch_samples"] = [watch.samples(p.sweep_when) for p in polls]
        result["samples_stored"] = [h + w for h, w in zip(hosts_stored, sweeps_stored, strict=True)]
        result["profile"] = None
        consumers.stop()
        result["rollup"] = rollups(env, watch, polls[-1].when, repo)
        if consumers.profile and consumers.profile.exists():
            text = io.StringIO()
            stats = pstats.Stats(str(consumers.profile), stream=text)
            stats.sort_stats("tottime").print_stats(20)
            stats.sort_stats("cumulative").print_stats("fabricweb", 30)
            result["profile"] = text.getvalue()
            if args.profile_to:
                shutil.copyfile(consumers.profile, args.profile_to)
        return result
    finally:
        consumers.stop()
        watch.close()
        wire.close()
        if not args.keep:
            drop_database(args.db, name)


def drive(polls: list[Poll], client, watch: Watch, consumers: Consumers, n_hosts: int) -> dict:
    """Push each poll at its date and watch it stored, until the last is; the timeline, and the disk, the
    consumers' CPU and their backends' as the first poll was pushed."""
    backends = BackendCPU()
    pending: list[Poll] = []
    todo = list(polls)
    before = None
    while todo or pending:
        backends.tick(watch.backends())
        if todo and time.time() >= todo[0].when.timestamp():
            poll = todo.pop(0)
            if before is None:
                cpus = consumers.cpus()
                before = {"sizes": watch.sizes(), "cpu": sum(cpus), "cpus": cpus, "pg_cpu": backends.total()}
            poll.cpus_pushed = consumers.cpus()
            poll.pushed = time.time()
            push(client, poll.messages)
            pending.append(poll)
            continue
        for poll in list(pending):
            if poll.hosts_done is None and watch.hosts_stored(poll.when) >= n_hosts:
                poll.hosts_done, poll.cpus_hosts_done = time.time(), consumers.cpus()
            if poll.sweep_done is None and watch.sweep_stored(poll.sweep_when):
                poll.sweep_done, poll.cpus_sweep_done = time.time(), consumers.cpus()
            if poll.done is not None:
                poll.sizes, poll.cpus, poll.pg_cpu = watch.sizes(), consumers.cpus(), backends.total()
                poll.cpu = sum(poll.cpus)
                pending.remove(poll)
        consumers.check()
        if pending and time.time() - pending[0].pushed > 600:
            raise RuntimeError(f"poll {pending[0].k} not stored after 600 s")
        time.sleep(0.1)
    return {"polls": polls, "before": before}


class BackendCPU:
    """CPU seconds of the run database's backends (not the watcher's), each read while it lives: Django may
    open a new connection now and then, and an ended backend's time is no longer in /proc."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}

    def tick(self, pids: list[int]) -> None:
        for pid in pids:
            with contextlib.suppress(OSError):
                self.seen[pid] = cpu_s(pid)

    def total(self) -> float:
        return sum(self.seen.values())


# The job as beat's worker runs it, in its own process on the run's database: its wall time, its CPU
# and its backend's (this process's pid's, read from /proc before and after: PostgreSQL is local).
ROLLUP_JOB = """
import json, os, time
from datetime import datetime
from django.db import connection
from fabricweb.telemetry.history.rollup import rollup

def cpu(pid):
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

with connection.cursor() as cursor:
    cursor.execute("SELECT pg_backend_pid()")
    backend = cursor.fetchone()[0]
pg, own, start = cpu(backend), time.process_time(), time.perf_counter()
written = rollup(now=datetime.fromisoformat(%r))
wall, own, pg = time.perf_counter() - start, time.process_time() - own, cpu(backend) - pg
print(%r + json.dumps({"written": written, "wall_s": wall, "cpu_s": own, "pg_cpu_s": pg}), flush=True)
"""
ROLLUP_MARK = "bench-scale-rollup: "
ROLLUP_TABLES = {300: "telemetry_portrollup_300", 3600: "telemetry_portrollup_3600"}
DAY_BUCKETS = {300: 86400 // 300, 3600: 86400 // 3600}


def rollups(env: dict, watch: Watch, last: datetime, repo: Path = REPO) -> dict:
    """Run the rollup job once over the polls stored (dated 2 h after the last: every bucket complete);
    rows, buckets and bytes added per period, WAL written, its wall time and CPU."""

    def tables() -> dict[int, int]:
        sql = "SELECT coalesce(sum(pg_total_relation_size(relid)), 0) FROM pg_partition_tree(%s::regclass)"
        return {period: int(watch.one(sql, [table])[0]) for period, table in ROLLUP_TABLES.items()}

    before, wal = tables(), watch.sizes()["wal"]
    rolled = watch.samples()
    code = ROLLUP_JOB % ((last + timedelta(hours=2)).isoformat(), ROLLUP_MARK)
    proc = subprocess.run(
        [sys.executable, str(repo / "manage.py"), "shell", "-c", code],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith(ROLLUP_MARK)]
    if proc.returncode or not lines:
        raise RuntimeError(f"the rollup job failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-2000:]}")
    job = json.loads(lines[-1][len(ROLLUP_MARK) :])
    after, wal = tables(), watch.sizes()["wal"] - wal
    out = {"wall_s": job["wall_s"], "cpu_s": job["cpu_s"], "pg_cpu_s": job["pg_cpu_s"], "wal": wal}
    out |= {"samples": rolled, "periods": {}}
    for period in ROLLUP_TABLES:
        rows = int(job["written"][str(period)])
        buckets = watch.one("SELECT count(DISTINCT bucket) FROM telemetry_portrollup WHERE period_s = %s", [period])[0]
        out["periods"][period] = {"rows": rows, "buckets": int(buckets), "bytes": after[period] - before[period]}
    return out


def _cpu(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += cpu_s(pid)
    return total


def message_sizes(messages: dict[str, list[bytes]], ports_per_host: int, switch_ports: int) -> dict:
    from fabricweb.names import SWEEP_QUEUE

    host = [len(m) for q, msgs in messages.items() if q != SWEEP_QUEUE for m in msgs]
    sweep = [len(m) for m in messages[SWEEP_QUEUE]]
    return {
        "host_message": statistics.mean(host),
        "host_port": statistics.mean(host) / ports_per_host,
        "sweep_message": sweep[0],
        "switch_port": sweep[0] / switch_ports,
        "poll_bytes": sum(host) + sum(sweep),
    }


# -- registration ---------------------------------------------------------------------------------
def register(hosts: Hosts, switches: Switches) -> dict:
    """The first poll of every host and the first full sweep, stored directly (Django in this process)."""
    from django.db import connections

    from fabricweb.fabric.ingest import ingest_fabric
    from fabricweb.telemetry.ingest import ingest_batch

    when = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=POLL_S)
    snaps = hosts.poll(when)
    start = time.perf_counter()
    for i in range(0, len(snaps), REGISTER_BATCH):
        result = ingest_batch(snaps[i : i + REGISTER_BATCH], now=when + timedelta(milliseconds=100))
        if result.rejected:
            raise RuntimeError(f"registration refused: {result.rejected[:3]}")
    hosts_s = time.perf_counter() - start
    start = time.perf_counter()
    sweep = switches.sweep(when + timedelta(seconds=1), "full")
    fabric = ingest_fabric(sweep, now=when + timedelta(seconds=1, milliseconds=100))
    sweep_s = time.perf_counter() - start
    connections.close_all()  # the template copied for each run must have no session
    return {"hosts_s": hosts_s, "sweep_s": sweep_s, "switch_samples": fabric.samples_written}


def seed_rings(seconds: float) -> int:
    """Give every port that is up a ring of `seconds` of history before its node's checkpoint, as a busy port's
    after that long: polls older than ring.FINE_S merged into ring.COARSE_S entries, one entry a poll after,
    port_xmit_wait moved in each (a few counts: no congestion). Each node's checkpoint is dated 0-119 s before its
    first poll, so that, as in a fabric running for a while, a twelfth of the nodes write theirs at each poll.
    Without it the rings are as young as the bench's polls and no checkpoint falls due in a run. Returns the ports
    seeded."""
    import orjson
    from django.db import connection, connections

    from collectors.facts import UP_STATE_IDS, XMIT_WAIT
    from fabricweb.inventory.models import NodeReadings
    from fabricweb.telemetry.storage.ring import COARSE_S, FINE_S

    draw = random.Random(7)
    seeded, rows = 0, []
    for node_id, history in NodeReadings.objects.order_by("node_id").values_list("node_id", "history"):
        document = orjson.loads(bytes(history))
        if type(document) is not dict or document["at"] is None:
            continue
        document["at"] -= (node_id * 7_919 % 120) * 1_000_000  # (a prime: consecutive ids far apart in the 120 s)
        end = document["at"] / 1e6
        fine_from = end - FINE_S
        for port in document["ports"]:
            if port[3] not in UP_STATE_IDS:
                continue
            coarse = [fine_from - COARSE_S * k for k in range(int((seconds - FINE_S) // COARSE_S) - 1, -1, -1)]
            ring = [[ts, COARSE_S, {XMIT_WAIT: draw.randrange(6, 1200)}] for ts in coarse]
            fine = [fine_from + POLL_S * k for k in range(1, int(FINE_S // POLL_S) + 1)]
            ring += [[ts, POLL_S, {XMIT_WAIT: draw.randrange(1, 200)}] for ts in fine]
            port[2] = ring
            seeded += 1
        rows.append((orjson.dumps(document), node_id))
    with connection.cursor() as cursor:
        cursor.executemany("UPDATE inventory_nodereadings SET history = %s WHERE node_id = %s", rows)
    connections.close_all()
    return seeded


# -- report ----------------------------------------------------------------------------------------
def report(n: int, result: dict, host_ports: int, switch_ports: int) -> dict:
    """Print a run's figures; its headline ones (medians of the timed polls, CPU over them) for --against."""
    timed = result["polls"]
    lag = [p.done - p.pushed for p in timed]
    host_lag = [p.hosts_done - p.pushed for p in timed]
    sweep_lag = [p.sweep_done - p.pushed for p in timed]
    ports = host_ports + switch_ports
    rates, prev_done = [], None
    for p in timed:
        began = max(p.pushed, prev_done or 0.0)
        rates.append(ports / (p.done - began))
        prev_done = p.done
    before, last = result["before"], timed[-1]
    sizes = [p.sizes for p in timed]
    growth = {
        key: [b[key] - a[key] for a, b in zip([before["sizes"], *sizes[:-1]], sizes, strict=True)] for key in sizes[0]
    }
    stored = result["samples_stored"]
    cpu = (last.cpu - before["cpu"]) / sum(stored) * 1e6
    pg_cpu = (last.pg_cpu - before["pg_cpu"]) / sum(stored) * 1e6
    b = result["bytes"]
    print(f"{n} consumer(s), shards {n} (each reads: {'; '.join(result['holds'])}):")
    print(
        f"  lag, push to stored (s): {spread(lag)} (hosts {spread(host_lag)}; sweep {spread(sweep_lag)})"
        f"; per poll: {', '.join(f'{x:.1f}' for x in lag)}"
    )
    print(
        f"  port-samples/s stored: {spread(rates, '{:,.0f}')} all consumers, "
        f"{spread([r / n for r in rates], '{:,.0f}')} per consumer (keeping up needs {ports / POLL_S:,.0f})"
    )
    whole = ports * len(timed) / (max(p.done for p in timed) - timed[0].pushed)
    print(
        f"  over the run, first push to last stored: {whole:,.0f} port-samples/s, {whole / n:,.0f} per consumer "
        "(the consumers' rate when they never caught up; less when they idled between polls)"
    )
    print(
        f"  port-samples stored per poll: {spread(stored, '{:,.0f}')} (offered {ports:,}: {host_ports:,} host, "
        f"{switch_ports:,} switch)"
    )
    print(f"  CPU per port-sample: consumers {cpu:.1f} µs, their PostgreSQL backends {pg_cpu:.1f} µs")
    kinds = per_kind(result)
    if kinds is not None:
        print(
            f"  CPU per port-sample by kind (the sweeps' consumer apart from the hosts'): a host port-sample "
            f"{kinds['host']:.1f} µs, a switch port-sample {kinds['switch']:.1f} µs (host / switch "
            f"{kinds['host'] / kinds['switch']:.2f}x)"
        )
        if kinds["busy"] is not None:
            host, switch = kinds["busy"]
            print(
                f"  ... while busy (each consumer's CPU from a poll's push to its kind's last row, without its idle "
                f"looks between polls): a host port-sample {host:.1f} µs, a switch port-sample {switch:.1f} µs "
                f"(host / switch {host / switch:.2f}x)"
            )
    print(f"  consumer peak RSS (VmHWM): {', '.join(f'{m:.0f} MB' for m in result['hwm_mb'])}")
    mb, polls = 1024 * 1024, len(timed)
    for key, what in (("samples", "samples tables"), ("database", "database"), ("wal", "WAL written")):
        per, mean = growth[key], (sizes[-1][key] - before["sizes"][key]) / polls
        print(
            f"  {what} per poll: {spread([x / mb for x in per])} MiB, {mean / mb:.2f} MiB over the {polls} polls; "
            f"a day of 10 s polls {mean * DAY_POLLS / 1024**3:.1f} GiB (x {DAY_POLLS:,})"
        )
    print(
        f"  bytes in the broker: {b['host_port']:.0f} B per host port ({b['host_message']:,.0f} B a host "
        f"message), {b['switch_port']:.0f} B per switch port ({b['sweep_message']:,} B a sweep); "
        f"{b['poll_bytes'] / mb:.1f} MiB a poll, {b['poll_bytes'] / POLL_S / mb:.1f} MiB/s"
    )
    report_rollups(result["rollup"], ports)
    if result["warnings"]:
        print(f"  consumer warnings/errors: {len(result['warnings'])}, the first: {result['warnings'][0][:300]}")
    if result["profile"]:
        print(result["profile"])
    headline = {"lag": statistics.median(lag), "busy": statistics.median(rates), "cpu": cpu, "pg_cpu": pg_cpu}
    return headline | ({"host_cpu": kinds["host"], "switch_cpu": kinds["switch"]} if kinds else {})


def per_kind(result: dict) -> dict | None:
    """CPU µs per host port-sample and per switch port-sample over the timed polls, where the consumers split by
    kind: one read the sweeps alone, the others only snapshot queues (several consumers with the sweeps apart,
    FABRIC_COLLECTORS set); None otherwise."""
    holds = result["holds"]
    sweepers = [i for i, h in enumerate(holds) if h == "sweeps"]
    if len(sweepers) != 1 or any("sweeps" in h or h == "?" for i, h in enumerate(holds) if i not in sweepers):
        return None
    before, last = result["before"]["cpus"], result["polls"][-1].cpus
    spent = [b - a for a, b in zip(before, last, strict=True)]
    switch = spent[sweepers[0]]
    return {
        "host": (sum(spent) - switch) / sum(result["host_samples"]) * 1e6,
        "switch": switch / sum(result["switch_samples"]) * 1e6,
        "busy": busy_by_kind(result["polls"], sweepers[0], result),
    }


def busy_by_kind(polls: list[Poll], sweeper: int, result: dict) -> tuple[float, float] | None:
    """CPU µs per host and per switch port-sample of the consumers' busy stretches (a poll's push to the last row of
    its kind), or None where a poll was pushed before the last was stored (the stretches overlap)."""
    if any(b.pushed < a.done for a, b in itertools.pairwise(polls)):
        return None
    host = switch = 0.0
    for poll in polls:
        start = poll.cpus_pushed
        host += sum(e - s for i, (s, e) in enumerate(zip(start, poll.cpus_hosts_done, strict=True)) if i != sweeper)
        switch += poll.cpus_sweep_done[sweeper] - start[sweeper]
    return host / sum(result["host_samples"]) * 1e6, switch / sum(result["switch_samples"]) * 1e6


def same_schema(peer: Path) -> str | None:
    """Why the tree at `peer` cannot run on this tree's databases (its migrations differ), or None."""

    def migrations(root: Path) -> dict[str, bytes]:
        return {str(f.relative_to(root)): f.read_bytes() for f in sorted(root.glob("fabricweb/*/migrations/0*.py"))}

    ours, theirs = migrations(REPO), migrations(peer)
    if not theirs:
        return f"{peer} holds no fabricweb migrations: not a checkout of this project"
    differ = sorted(name for name in ours.keys() | theirs.keys() if ours.get(name) != theirs.get(name))
    return f"its migrations differ from this tree's ({', '.join(differ[:5])})" if differ else None


def report_against(n: int, ours: list[dict], theirs: list[dict], peer: Path) -> None:
    """This tree's runs beside --against's, run by run and their medians, with the ratios."""

    def figures(runs: list[dict], key: str, fmt: str) -> str:
        return " / ".join(fmt.format(r[key]) for r in runs)

    def ratio(key: str) -> str:
        mine, peers = statistics.median(r[key] for r in ours), statistics.median(r[key] for r in theirs)
        return f"{mine / peers:.2f}x" if peers else "-"

    print(f"{n} consumer(s), this tree against {peer}, run by run (alternated):")
    for key, what, fmt in (
        ("busy", "port-samples/s while busy (median of a run's polls)", "{:,.0f}"),
        ("lag", "lag, push to stored (s, median)", "{:.2f}"),
        ("cpu", "consumer CPU per port-sample (µs)", "{:.1f}"),
        ("host_cpu", "... per host port-sample, the hosts' consumers (µs)", "{:.1f}"),
        ("switch_cpu", "... per switch port-sample, the sweeps' consumer (µs)", "{:.1f}"),
        ("pg_cpu", "PostgreSQL backends' CPU per port-sample (µs)", "{:.1f}"),
    ):
        if all(key in r for r in (*ours, *theirs)):  # (by kind only where the consumers split by kind)
            print(f"  {what}: {figures(ours, key, fmt)} against {figures(theirs, key, fmt)}; ratio {ratio(key)}")


def report_rollups(r: dict, ports: int) -> None:
    """The rollup job's rows and bytes, and the rollups' disk per day at this size from bytes per row."""
    mb, names = 1024 * 1024, {300: "5-minute", 3600: "hourly"}
    rows = sum(p["rows"] for p in r["periods"].values())
    us = 1e6 / max(r["samples"], 1)
    print(
        f"  rollup job, run once after the timed polls (rollup(), beat's every 300 s): {r['wall_s']:.2f} s, "
        f"CPU {r['cpu_s']:.2f} s, its PostgreSQL backend {r['pg_cpu_s']:.2f} s, over {r['samples']:,} raw "
        f"port-samples ({r['wall_s'] * us:.1f} µs wall, {r['cpu_s'] * us:.1f} + {r['pg_cpu_s'] * us:.1f} µs CPU "
        f"each); {rows:,} rows, WAL {r['wal'] / mb:.1f} MiB ({r['wal'] / max(rows, 1):.0f} B per row)"
    )
    day = 0.0
    parts = []
    for period, p in r["periods"].items():
        per_row = p["bytes"] / p["rows"] if p["rows"] else 0.0
        per_bucket = p["rows"] / p["buckets"] if p["buckets"] else 0.0
        day += per_row * ports * DAY_BUCKETS[period]
        parts.append(f"{per_row:.0f} B x {ports:,} x {DAY_BUCKETS[period]}")
        print(
            f"  {names[period]} rollups ({ROLLUP_TABLES[period]}): {p['rows']:,} rows in {p['buckets']} "
            f"bucket(s), {per_bucket:,.0f} rows per bucket (ports {ports:,}); {p['bytes'] / mb:.2f} MiB added, "
            f"{per_row:.0f} B per row, indexes included"
        )
    wal_day = r["wal"] / max(rows, 1) * ports * sum(DAY_BUCKETS.values())
    print(
        f"  rollups a day at this size: {day / 1024**3:.2f} GiB = B per 5-minute row x ports x 288 + B per hourly "
        f"row x ports x 24 = {' + '.join(parts)} (a bucket per port every 300 s and every 3,600 s); "
        f"their WAL {wal_day / 1024**3:.2f} GiB (B per row x ports x 312)"
    )


# -- driver ----------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=4000)
    parser.add_argument("--hcas", type=int, default=8, help="one-port HCAs per host")
    parser.add_argument("--switches", type=int, default=1000)
    parser.add_argument("--switch-ports", type=int, default=64)
    parser.add_argument("--polls", type=int, default=5, help="timed polls")
    parser.add_argument("--warm-polls", type=int, default=1, help="polls through the consumers before the timed")
    parser.add_argument(
        "--seed-rings",
        type=float,
        default=0.0,
        metavar="S",
        help="S seconds of waits in the ring of every port that is up, and checkpoints spread over 120 s (seed_rings)",
    )
    parser.add_argument("--consumers", type=int, nargs="+", default=[1, 2], help="a run for each")
    parser.add_argument("--batch", type=int, default=100, help="the consumers' --batch")
    parser.add_argument("--sweep", choices=("counters", "full"), default="counters", help="the sweep every poll")
    parser.add_argument(
        "--profile", action="store_true", help="the first consumer under cProfile (tottime, and cumulative)"
    )
    parser.add_argument("--profile-to", type=Path, help="with --profile: keep the cProfile file there, for pstats")
    parser.add_argument("--keep", action="store_true", help="keep the databases (bench_scale_*)")
    parser.add_argument(
        "--against",
        type=Path,
        help="a checkout of another tree (a git worktree): its consumers run in turn with this tree's, on the same "
        "fabric and the same messages, and each figure is printed beside this tree's with the ratio",
    )
    parser.add_argument("--rounds", type=int, default=1, help="with --against: runs of each tree, alternated")
    parser.add_argument(
        "--degraded-uplinks",
        action="store_true",
        help="every switch-to-switch link a width downgrade (4X where both ends support 12X): a fabric in trouble",
    )
    parser.add_argument("--db", default=os.environ.get("TEST_POSTGRES_URL"), help="PostgreSQL to create them on")
    args = parser.parse_args()
    if not args.db:
        sys.exit('TEST_POSTGRES_URL is not set: eval "$(scripts/test-services start)"')
    if args.warm_polls < 1:
        sys.exit("--warm-polls must be 1 or more (the consumers' start and shares are not timed)")
    if args.against is not None:
        why = same_schema(args.against)
        if why:
            sys.exit(f"--against {args.against}: {why}; the databases are this tree's")
    if args.rounds < 1:
        sys.exit("--rounds must be 1 or more")

    started = time.perf_counter()
    print(f"{machine()}; load {load()}")
    tree = fat_tree(args.hosts, args.hcas, args.switches, args.switch_ports, args.degraded_uplinks)
    hosts = Hosts.of(tree)
    switches = Switches(tree, datetime.now(UTC))
    host_ports = hosts.ports
    print(
        f"fabric: {len(tree.hosts):,} hosts x {args.hcas} HCAs = {host_ports:,} host ports; {len(tree.leaves)} "
        f"leaves ({tree.down} host ports, {tree.up} uplinks) and {len(tree.spines)} spines of {args.switch_ports} "
        f"ports = {tree.switch_ports:,} switch ports ({len(switches.cabled):,} cabled); "
        f"{'every switch-to-switch link degraded (4X, 12X supported)' if args.degraded_uplinks else 'no slow link'}; "
        f"made in {time.perf_counter() - started:.1f} s"
    )

    os.environ.update(FABRIC_NODE_KEY_SECRET=SECRET, FABRIC_COLLECTORS=COLLECTOR, LOG_LEVEL="WARNING")
    template = "bench_scale"
    redis_server = start_redis()
    redis_port = redis_server.port
    try:
        with tempfile.TemporaryDirectory(prefix="bench-scale-") as scratch:
            label = setup_django(args.db, template)
            reg = register(hosts, switches)
            print(
                f"{label}; registered: {len(tree.hosts):,} hosts' first poll in {reg['hosts_s']:.1f} s, "
                f"the first full sweep ({reg['switch_samples']:,} switch port-samples) in {reg['sweep_s']:.1f} s"
            )
            if args.seed_rings:
                seeded = seed_rings(args.seed_rings)
                print(f"rings seeded with {args.seed_rings:.0f} s of waits: {seeded:,} Active ports")
            time.sleep(1.0)
            trees = [("this tree", REPO, "")]
            if args.against is not None:
                trees.append((f"--against {args.against}", args.against.resolve(), "_against"))
            # (with --keep one round: a database a run, a second round's would replace the first's)
            rounds = args.rounds if args.against is not None and not args.keep else 1
            for n in args.consumers:
                headlines: dict[str, list[dict]] = {tag: [] for _, _, tag in trees}
                for _ in range(rounds):
                    for what, repo, tag in trees:
                        t = time.perf_counter()
                        print(
                            f"run with {n} consumer(s) of {what}, {args.warm_polls} + {args.polls} polls at "
                            f"{POLL_S:g} s, load {load()}",
                            flush=True,
                        )
                        result = run(n, args, tree, hosts, switches, redis_port, template, Path(scratch), repo, tag)
                        headlines[tag].append(report(n, result, host_ports, tree.switch_ports))
                        print(f"  run took {time.perf_counter() - t:.0f} s; load {load()}", flush=True)
                if args.against is not None:
                    report_against(n, headlines[""], headlines["_against"], args.against)
    finally:
        drop_database(args.db, template)
        redis_server.stop()
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
