"""Covers fabricweb/runfabric/__main__.py, fabricweb/nodeauth.py, fabricweb/telemetry/history/samples.py,
collectors/__main__.py.

A simulated fabric run as real processes (runfabric): node → ingest → rows → events, on SQLite and PostgreSQL.

The tests of this module share one running fabric per backend and run in file order:
the newcomer node is started by one test and stopped by the next.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from celery import Celery
from django.utils import timezone

from collectors import read_host, to_dict
from collectors.sim import Fabric
from fabricweb import nodeauth
from fabricweb.health.models import Event
from fabricweb.inventory.models import Node, Port
from fabricweb.names import INGEST_SNAPSHOT, SNAPSHOT_QUEUE
from fabricweb.telemetry.history.samples import between, of_port
from tests.e2e.e2e_harness import INTERVAL, NODE_KEY_SECRET, NODES, STARTUP_S

SIM_NODES = [f"cn{i:03d}" for i in range(1, NODES + 1)]
NEWCOMER = "cn901"
SLACK_S = 2.5  # scheduling and process wake-ups on a 2-core machine shared by four test workers (make test)


def node_rows(fabric, names) -> dict[str, Node]:
    return {n.name: n for n in Node.objects.using(fabric.db).filter(name__in=names)}


def samples(fabric, node: str) -> int:
    return len(list(between(nodes=Node.objects.using(fabric.db).filter(name=node), using=fabric.db)))


@pytest.fixture(scope="module")
def newcomer(fabric, tmp_path_factory):
    """A node agent started after the fabric, as on a new compute node: cn901 reading a tree of its own."""
    trees = tmp_path_factory.mktemp("newcomer")
    Fabric.create(str(trees), 1)
    return fabric.start_agent(NEWCOMER, trees / "cn001", "-X", "importtime")


def test_every_node_registers_itself_and_each_poll_is_stored_within_one_poll(fabric):
    # Beat polls Node rows only, so rows for every node can only come from each worker's hello.
    fabric.wait("every simulated node registered", lambda: len(node_rows(fabric, SIM_NODES)) == NODES, STARTUP_S)
    start = timezone.now()

    def polled_since_start():
        rows = node_rows(fabric, SIM_NODES)
        return all(n.last_collected_at and n.last_collected_at > start for n in rows.values()) and rows

    rows = fabric.wait("a poll of every node stored", polled_since_start, 2 * INTERVAL + SLACK_S)
    for node in rows.values():
        lag = (node.last_ingested_at - node.last_collected_at).total_seconds()
        assert 0 <= lag < INTERVAL, f"{node.name}: stored {lag:.2f} s after it was read"

    ports = Port.objects.using(fabric.db).filter(device__node__name__in=SIM_NODES)
    port_ids = set(ports.values_list("pk", flat=True))

    def per_port() -> Counter:
        return Counter(s.port_id for s in between(using=fabric.db) if s.port_id in port_ids)

    fabric.wait("4 samples of every port", lambda: min(per_port()[p] for p in port_ids) >= 4, 4 * INTERVAL + SLACK_S)
    # One collect per node per interval: no poll sent twice, none skipped while the node keeps up. Told by how many
    # polls each port had between two instants against how many intervals passed, not by their times: a poll
    # read late (a loaded machine) makes the gap before it long and the one after short (CI saw a median gap of
    # 0.77 s), and a first poll read late shortens a port's span by up to a poll (0.78 s a poll over it, once),
    # where a poll sent twice or skipped moves the count by one an interval. (The hello, a few seconds before
    # beat's first poll, was stored before `start`.)
    end = timezone.now()
    polled = between(since=start, until=end, using=fabric.db)
    counts = Counter(sample.port_id for sample in polled if sample.port_id in port_ids)
    intervals = (end - start).total_seconds() / INTERVAL
    median = statistics.median(counts[p] for p in port_ids)
    # +-1: a poll read at the window's either edge, or read before `end` and not stored yet
    assert 0.75 * intervals - 1 <= median <= 1.25 * intervals + 1, f"{median} polls a port in {intervals:.1f} intervals"


def test_a_new_node_worker_registers_itself_and_runs_without_a_database(fabric, newcomer):
    fabric.wait(f"{NEWCOMER} registered by its hello", lambda: node_rows(fabric, [NEWCOMER]), 30)
    fabric.wait(f"{NEWCOMER} polled by beat", lambda: samples(fabric, NEWCOMER) >= 6, 3 * INTERVAL + SLACK_S)

    # Its environment, as the kernel holds it: none of the central side's variables.
    env = dict(
        entry.split("=", 1) for entry in Path(f"/proc/{newcomer.proc.pid}/environ").read_text().split("\0") if entry
    )
    assert not {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "SECRET_KEY"} & env.keys()
    # Every module the running agent imported in six polls (`-X importtime` says each in its log): collectors, the
    # names and its own package of the project; neither Django nor Celery.
    log = newcomer.log.read_text(errors="replace").splitlines()
    modules = {line.rsplit("|", 1)[1].strip() for line in log if "import time:" in line}
    assert "fabricweb.agent.loop" in modules and "collectors.wire" in modules
    assert [m for m in modules if m.split(".")[0] in ("django", "celery", "kombu")] == []
    agent = ("fabricweb", "fabricweb.names", "fabricweb.agent", "collectors")
    project = [m for m in modules if m.split(".")[0] in ("fabricweb", "collectors")]
    assert [m for m in project if not m.startswith(agent)] == []


def test_a_dead_nodes_queue_does_not_pile_up(fabric, newcomer):
    assert newcomer.stop() == 0, newcomer.tail()
    # A snapshot sent just before it stopped may still be on its way through ingest: counted in.
    fabric.wait("the snapshots queue drained", lambda: fabric.redis.llen("snapshots") == 0, 10)
    time.sleep(0.5)  # ingest's longest batch wait (0.2 s) and its commit
    before = samples(fabric, NEWCOMER)
    queue = f"node.{NEWCOMER}"
    time.sleep(3 * INTERVAL)
    # The poll the worker held when it stopped went back to the queue (acks_late), and the
    # dispatcher sent at most one more while the queue was empty; then it sends none.
    held = fabric.redis.llen(queue)
    assert 1 <= held <= 2
    time.sleep(3 * INTERVAL)
    assert fabric.redis.llen(queue) == held
    assert samples(fabric, NEWCOMER) == before


def test_a_node_whose_worker_stopped_is_flagged_stale_after_three_missed_polls(fabric, newcomer):
    assert newcomer.stop() == 0
    node = node_rows(fabric, [NEWCOMER])[NEWCOMER]
    stale = Event.objects.using(fabric.db).filter(node=node, kind="stale", resolved_at__isnull=True)
    event = fabric.wait(f"a stale event for {NEWCOMER}", stale.first, 5 * INTERVAL + SLACK_S)
    # The first poll it does not take is sent one interval after its last snapshot and counted missed at the
    # next dispatch; check_stale runs every interval: flagged at the first check after the third miss.
    silent = (event.opened_at - node.last_ingested_at).total_seconds()
    assert 3 * INTERVAL <= silent <= 5 * INTERVAL + SLACK_S
    assert NEWCOMER in event.message and "worker" in event.message


@dataclass(frozen=True)
class Case:
    spec: str
    kind: str | None  # the event kind expected; None: no event at all
    words: tuple[str, ...] = ()  # in the event's reason
    polls: int = 1  # polls the rule needs by its own definition before it speaks

    @property
    def target(self) -> tuple[str, str, int | None]:
        node, device, *port = self.spec.split(":")[0].split("/")
        return node, device, int(port[0]) if port else None


CASES = [
    Case("cn001/mlx5_0/1:speed=QDR", "degraded", ("4X HDR", "4X QDR")),
    Case("cn001/mlx5_1/1:width=1X", "degraded", ("1X HDR",)),
    Case("cn002/mlx4_0/1:down", "down", ("port down", "Polling")),
    Case("cn002/mlx4_0/2:disabled", "down", ("port down", "Disabled")),
    Case("cn003/mlx5_0/1:symbol-errors=100/s", "symbol_errors", ("symbol errors in",)),
    # Two downs make flapping; it resolves once the link was stable for flapping_quiet_s (3 s here).
    Case("cn003/mlx5_1/1:flap", "flapping", ("link",), polls=4),
    Case("cn004/mlx5_0/1:saturate", "congestion", ("congested",), polls=3),
    Case("cn004/mlx5_1/1:reset", None),  # a counter reset is not a problem: no event, a reset sample
    Case("cn005/mlx5_0:pcie=GEN3x8", "pcie", ("PCIe",)),
    Case("cn005/mlx5_1:vanish", "vanished", ("device vanished",)),
    # The switch uplink above a ConnectX-7 retrains at run time (a device finding: port-less), with the figures.
    Case(
        "cn004/mlx5_1:uplink=x8",
        "pcie_path",
        ("PCIe switch uplink", "trained Gen5 x8 (~252 Gb/s), limits a 400 Gb/s (4X NDR) port", "supports Gen5 x16"),
    ),
]


def events_of(fabric, case: Case, since: datetime):
    node, device, port = case.target
    found = Event.objects.using(fabric.db).filter(node__name=node, device__name=device, opened_at__gte=since)
    return found.filter(port__number=port) if port else found.filter(port__isnull=True)


def fault_cli(fabric, *args: str) -> None:
    cmd = [sys.executable, "-m", "collectors", "fault", "--out", str(fabric.sim_dir), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, f"fault {' '.join(args)}: {done.stderr}"


def test_every_fault_kind_opens_its_event_within_one_poll_and_resolves_when_removed(fabric):
    assert sorted({c.spec.split(":")[1].split("=")[0] for c in CASES}) == sorted(
        ["down", "disabled", "speed", "width", "symbol-errors", "flap", "reset", "saturate", "pcie", "vanish", "uplink"]
    ), "one case per fault kind of the simulator"
    fabric.wait("every simulated node polled", lambda: len(node_rows(fabric, SIM_NODES)) == NODES, STARTUP_S)
    time.sleep(3 * INTERVAL)  # every port has a history (a best link held) before its faults
    added = timezone.now()
    fault_cli(fabric, "add", *(c.spec for c in CASES))

    def opened(case: Case):
        return events_of(fabric, case, added - timedelta(seconds=1)).filter(kind=case.kind).first()

    alarms = [c for c in CASES if c.kind]
    deadline = max(c.polls for c in alarms) * INTERVAL + INTERVAL + 2 * SLACK_S
    fabric.wait("an event for every fault", lambda: all(opened(c) for c in alarms), deadline)
    problems = []
    for case in alarms:
        event = opened(case)
        # One simulator step for the fault to reach the tree, then the polls the rule needs.
        allowed = INTERVAL + case.polls * INTERVAL + SLACK_S
        took = (event.opened_at - added).total_seconds()
        if took > allowed:
            problems.append(f"{case.spec}: opened {took:.1f} s after the fault (allowed {allowed:.1f} s)")
        missing = [w for w in case.words if w not in event.reason]
        if missing:
            problems.append(f"{case.spec}: reason {event.reason!r} lacks {missing}")
        if case.target[2] is None and case.kind != "vanished":  # a device fault opens its own finding and no other
            others = events_of(fabric, case, added - timedelta(seconds=1)).exclude(pk=event.pk)
            problems += [f"{case.spec}: another event {e.kind}: {e.message}" for e in others]
    reset = next(c for c in CASES if c.kind is None)
    node, device, port = reset.target
    reset_port = Port.objects.using(fabric.db).get(device__node__name=node, device__name=device, number=port)
    reset_seen = lambda: any(s.reset for s in of_port(reset_port, added, using=fabric.db))  # noqa: E731
    fabric.wait("a reset sample", reset_seen, 2 * INTERVAL + SLACK_S)
    alarms_on_reset = events_of(fabric, reset, added).exclude(severity=Event.Severity.INFO)
    problems += [f"{reset.spec}: unexpected event {e.kind}: {e.message}" for e in alarms_on_reset]
    assert not problems, "\n".join(problems)

    removed = timezone.now()
    fault_cli(fabric, "clear")
    resolvable = [opened(c) for c in alarms]

    def all_resolved():
        return all(Event.objects.using(fabric.db).get(pk=e.pk).resolved_at for e in resolvable)

    fabric.wait("every event resolved after its fault was removed", all_resolved, 8 * INTERVAL + 2 * SLACK_S)
    for event in resolvable:
        event = Event.objects.using(fabric.db).get(pk=event.pk)
        assert event.resolved_at > removed and event.reason.startswith("clear for 3 polls"), event.reason


@pytest.fixture(scope="module")
def laid_out(fabric, tmp_path_factory):
    """Two hosts as they were built, each with its own agent: a DGX-like node and a misbuilt one.
    The simulator lays a PCIe tree out only when it creates a fabric, so their trees are a fabric of their own."""
    trees = tmp_path_factory.mktemp("laid-out")
    Fabric.create(str(trees), 2, layout_faults=("cn001:dgx", "cn002:misbuilt"))
    hosts = {"cn921": "cn001", "cn922": "cn002"}
    for name, tree in hosts.items():
        fabric.start_agent(name, trees / tree)
    return list(hosts)


def test_a_dgx_like_node_opens_nothing_and_a_misbuilt_one_only_its_narrow_shared_uplink_at_its_first_poll(
    fabric, laid_out
):
    dgx, misbuilt = hosts = laid_out
    fabric.wait("both laid-out hosts polled", lambda: len(node_rows(fabric, hosts)) == 2, STARTUP_S)
    rows = node_rows(fabric, hosts)
    first_seen = {name: node.first_seen_at for name, node in rows.items()}
    time.sleep(3 * INTERVAL)  # three polls more, each judged
    gpus = {name: len(node.gpus or []) for name, node in node_rows(fabric, hosts).items()}
    assert gpus == {dgx: 8, misbuilt: 2}
    cards = Port.objects.using(fabric.db).filter(device__node__name=dgx).values("device").distinct().count()
    assert cards == 8
    events = Event.objects.using(fabric.db).filter(node__name__in=hosts)
    assert not events.filter(node__name=dgx).exists(), list(events.filter(node__name=dgx).values("kind", "message"))
    opened = list(events.filter(node__name=misbuilt))
    # Its uplink, wired x4, limits its first card's port (pcie_path) and two GPUs share it (pcie_shared).
    assert sorted(e.kind for e in opened) == ["pcie_path", "pcie_shared"], [(e.kind, e.message) for e in opened]
    shared = next(e for e in opened if e.kind == "pcie_shared")
    # One poll: the event is there when the host's first snapshot was judged.
    assert (shared.opened_at - first_seen[misbuilt]).total_seconds() <= INTERVAL + SLACK_S
    assert "GPU" in shared.message and "share a PCIe switch uplink" in shared.message, shared.message
    assert "Gen3 x4 (~32 Gb/s), narrower than the port of mlx4_0" in shared.message, shared.message  # a ConnectX-3


def test_a_broadcast_shutdown_from_anyone_on_the_broker_changes_nothing(fabric):
    # What any compute node could send: the broker is reachable from every one of them.
    client = Celery("e2e-attacker", broker=fabric.redis_url, set_as_current=False)
    try:
        client.control.broadcast("shutdown")
    finally:
        client.close()
    since = timezone.now()
    time.sleep(3 * INTERVAL)
    assert fabric.runner.proc.poll() is None, fabric.tail()
    fresh = Node.objects.using(fabric.db).filter(name__in=SIM_NODES, last_ingested_at__gt=since).count()
    assert fresh == NODES, f"only {fresh} of {NODES} nodes still polled after the broadcast\n{fabric.tail()}"


def test_a_snapshot_for_one_node_signed_with_another_nodes_key_is_refused_and_counted(fabric):
    victim, thief = SIM_NODES[0], SIM_NODES[1]
    fabric.wait("the victim registered", lambda: victim in node_rows(fabric, [victim]), STARTUP_S)
    # A false "port down" for the victim, as the holder of another node's key (a compromised node) could send it.
    forged = to_dict(read_host(str(fabric.sim_dir / victim), host=victim, use_verbs=False))
    forged["collected_at"] = (timezone.now() + timedelta(seconds=1)).isoformat()
    for device in forged["devices"]:
        for port in device["ports"]:
            port["state"], port["phys_state"] = {"id": 1, "name": "DOWN"}, {"id": 3, "name": "Disabled"}
    thief_key = nodeauth.node_key(NODE_KEY_SECRET, thief)
    signed_as_victim = nodeauth.signed_kwargs(thief_key, forged)  # names the victim, signed with the thief's key
    text = signed_as_victim["snapshot"]
    signed_as_thief = {"snapshot": text, "node": thief, "signature": nodeauth.sign(thief_key, thief, text)}
    client = Celery("e2e-thief", broker=fabric.redis_url, set_as_current=False)
    try:
        for kwargs in (signed_as_victim, signed_as_thief):
            client.send_task(INGEST_SNAPSHOT, kwargs=kwargs, queue=SNAPSHOT_QUEUE)
    finally:
        client.close()
    since = timezone.now()

    def refusals() -> list[str]:
        return [line for line in fabric.runner.log.read_text().splitlines() if "ingest: refused message" in line]

    fabric.wait("both forgeries refused", lambda: len(refusals()) >= 2, 5 * INTERVAL + SLACK_S)
    # Counted one by one, and nothing else refused in the whole run: every agent signs with its own key.
    assert len(refusals()) == 2, refusals()
    assert f"bad signature for node '{victim}': not sent with that node's key" in refusals()[0]
    assert f"signed by {thief} but names host '{victim}'" in refusals()[1]
    # The victim's own agent goes on: its next polls are stored, and no port of it was taken down.
    fabric.wait(
        "the victim's own polls stored",
        lambda: Node.objects.using(fabric.db).filter(name=victim, last_ingested_at__gt=since).exists(),
        3 * INTERVAL + SLACK_S,
    )
    down = Port.objects.using(fabric.db).filter(device__node__name=victim).exclude(state_id=4)
    assert not down.exists(), list(down.values("device__name", "port", "state_name"))
