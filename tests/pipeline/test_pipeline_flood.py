"""Covers fabricweb/nodeauth.py, fabricweb/brokeracl.py, fabricweb/identity/management/commands/broker_acl.py.

One node's broker user floods the snapshot queue; the broker's memory stays bounded and the other nodes'
polls stay fresh.

The attack: as node cn001's ACL user, validly signed snapshots pushed as fast as the broker takes them
(10,850/s took an unbounded Redis to 2.9 GB in 60 s); here flat out until the broker is full, then
~5,000/s. Now Redis runs with a maxmemory and noeviction, as compose ships it: past it Redis refuses
pushes (the flood's first), the consumer takes with RPOP (which Redis still runs) and drops cn001's
messages over its byte budget after one HMAC each, and honest agents wait a refused push out
(agent/tasks.py). Real redis-server with the ACL file `broker_acl` writes, a real consumer process,
real PostgreSQL.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
import uuid
from datetime import UTC, datetime

import pytest
import redis
from django.core.management import call_command

from fabricweb import nodeauth
from fabricweb.brokeracl import node_password
from fabricweb.celery import SNAPSHOT_QUEUE
from fabricweb.inventory.models import Node
from fabricweb.names import BROKER_FULL, INGEST_SNAPSHOT
from tests.e2e.e2e_harness import REPO, SECRET, clean_env
from tests.fixture_trees import snapshot
from tests.loopback import redis_with_acl
from tests.pipeline.pipeline_support import needs_postgres, on_the_wire

NODE_SECRET = "site-secret-for-the-flood-" + "f" * 40
MAXMEMORY = 48 * 1024 * 1024
# The honest nodes' poll. A poll's way through (a push the full broker refuses is retried for up to 2 s, then
# the consumer, on two cores shared with the rest of the suite) took up to 2.02 s under `make test`: a poll
# missed would add a whole interval more.
POLL_S = 3.0
FLOOD_S = 10.0
HONEST = ("cn002", "cn003")


def message(node: str, at: datetime) -> bytes:
    """A kombu envelope of a signed snapshot of `node` collected `at`, as the agent sends one."""
    signed = nodeauth.signed_kwargs(nodeauth.node_key(NODE_SECRET, node), on_the_wire(snapshot(host=node, at=at)))
    task_id = str(uuid.uuid4())
    body = json.dumps([[], signed, {"callbacks": None, "errbacks": None, "chain": None, "chord": None}])
    envelope = {
        "body": body,
        "content-encoding": "utf-8",
        "content-type": "application/json",
        "headers": {"task": INGEST_SNAPSHOT, "id": task_id, "kwargsrepr": f"{{signed snapshot of {node}}}"},
        "properties": {"body_encoding": None, "delivery_tag": task_id, "priority": 0},
    }
    return json.dumps(envelope).encode()


CONSUMER = """
import time
import django
django.setup()
from fabricweb.telemetry.intake.consumer import BatchConsumer

consumer = BatchConsumer(100, 0.2)
consumer.run(until=lambda: time.monotonic() > %(until)f)
"""


@needs_postgres
@pytest.mark.django_db(transaction=True, databases=["postgres"])
def test_one_nodes_flood_leaves_the_broker_bounded_and_the_other_nodes_fresh(postgres, tmp_path, settings):
    settings.FABRIC_NODE_KEY_SECRET = NODE_SECRET
    acl = io.StringIO()
    call_command("broker_acl", "cn001", *HONEST, stdout=acl)
    options = ("--maxmemory", str(MAXMEMORY), "--maxmemory-policy", "noeviction")
    with redis_with_acl(tmp_path, acl.getvalue(), *options) as (address, central_url):
        env = clean_env(DATABASE_URL=postgres, SECRET_KEY=SECRET, REDIS_URL=central_url, LOG_LEVEL="INFO")
        env.update(
            DJANGO_SETTINGS_MODULE="fabricweb.settings", FABRIC_NODE_KEY_SECRET=NODE_SECRET, FABRIC_NODE_AUTH="required"
        )
        started = time.monotonic()
        run_until = time.monotonic() + FLOOD_S + 15  # (in the consumer's clock: the same monotonic clock)
        consumer = subprocess.Popen(
            [sys.executable, "-c", CONSUMER % {"until": run_until}],
            env=env,
            cwd=REPO,
            stderr=subprocess.PIPE,
            text=True,
        )
        as_node = {
            name: redis.Redis.from_url(f"redis://node.{name}:{node_password(NODE_SECRET, name)}@{address}/0")
            for name in ("cn001", *HONEST)
        }
        central = redis.Redis.from_url(central_url)
        stop = threading.Event()
        refused_pushes = {"flood": 0, "honest": 0}
        peak = {"used": 0}

        def flood() -> None:
            one = message("cn001", datetime.now(UTC))  # the same signed snapshot, over and over: valid each time
            # Flat out until the broker refuses (its maxmemory reached), then ~5,000 a second (25 MB/s) to keep
            # it there: a real attacker pushes from a machine of its own, and flat out from here the whole time it
            # would only take the CPU the consumer and the honest nodes share with it.
            while not stop.wait(0.01 if refused_pushes["flood"] else 0):
                with as_node["cn001"].pipeline(transaction=False) as pipe:
                    for _ in range(50):
                        pipe.lpush(SNAPSHOT_QUEUE, one)
                    for reply in pipe.execute(raise_on_error=False):
                        refused_pushes["flood"] += isinstance(reply, redis.ResponseError)

        def honest() -> None:
            while not stop.is_set():
                at = datetime.now(UTC)
                for name in HONEST:
                    deadline = time.monotonic() + 2.0  # the agent's wait for a full broker (agent/tasks.py)
                    while True:
                        try:
                            as_node[name].lpush(SNAPSHOT_QUEUE, message(name, at))
                            break
                        except redis.ResponseError as e:
                            assert BROKER_FULL in str(e)
                            refused_pushes["honest"] += 1
                            if time.monotonic() > deadline:
                                break
                            time.sleep(0.05)
                stop.wait(POLL_S)

        def watch() -> None:
            while not stop.is_set():
                peak["used"] = max(peak["used"], central.info("memory")["used_memory"])
                time.sleep(0.05)

        # The consumer up and the honest nodes stored once before the flood starts.
        threads = [threading.Thread(target=f, daemon=True) for f in (honest, watch)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while Node.objects.filter(name__in=HONEST).count() < 2:
            assert time.monotonic() < deadline and consumer.poll() is None, consumer.stderr.read()[-4000:]
            time.sleep(0.1)
        attacker = threading.Thread(target=flood, daemon=True)
        attacker.start()
        ages = []  # the newest stored poll of each honest node, its age, sampled through the flood
        flood_end = time.monotonic() + FLOOD_S
        while time.monotonic() < flood_end:
            now = datetime.now(UTC)
            for at in Node.objects.filter(name__in=HONEST).values_list("last_collected_at", flat=True):
                ages.append((now - at).total_seconds())
            time.sleep(0.2)
        stop.set()
        for t in (*threads, attacker):
            t.join(10)
        consumer.wait(timeout=40)
        log = consumer.stderr.read()
        queued = central.llen(SNAPSHOT_QUEUE)
    print(
        f"flood of {FLOOD_S:g} s: broker peak {peak['used'] / 2**20:.1f} MiB of {MAXMEMORY / 2**20:.0f} MiB, "
        f"{refused_pushes['flood']} flood pushes refused at maxmemory, {refused_pushes['honest']} honest ones "
        f"retried; honest polls' newest at most {max(ages):.2f} s old (poll {POLL_S:g} s); {queued} left queued; "
        f"run {time.monotonic() - started:.0f} s"
    )
    attacker_row = Node.objects.get(name="cn001")
    # Bounded: the flood reached the limit (pushes refused there), and went past it by at most the replies and
    # pipelines in flight (well under 10 %).
    assert refused_pushes["flood"] > 0 and peak["used"] < MAXMEMORY * 1.1, log[-4000:]
    # Fresh: no honest poll missed: the newest stored is at most one poll interval old, plus its way through.
    assert max(ages) < 2 * POLL_S, (sorted(ages)[-10:], log[-4000:])
    # The flood is counted and said, on the node's row (its page, /healthz) and in the log.
    assert attacker_row.refused_snapshots > 1000 and "bytes a minute" in attacker_row.refused_reason
    assert "cn001 sent more than its" in log
