"""A sketch, for measurement only: the node agent's job without the Celery worker.

    REDIS_URL=... FABRIC_NODE_NAME=cn001 FABRIC_SYSFS_ROOT=DIR python bench/agent_sketch.py

Not the agent (fabricweb/agent/ is): `bench/bench_agent.py --sketch` runs it in the agent's
place to show what the same queues and message format cost without Celery's worker, for
the alternative BENCHMARKS.md proposes. It waits for `collect` on node.<name> in one BRPOP,
reads the tree with collectors (hw_counters every 6th poll, as the agent), and pushes a
Celery protocol-2 `ingest_snapshot` message to `snapshots`, as kombu's Redis transport lays
it out, so central beat and `manage.py ingest` are unchanged. Left out, which a real one
needs: acknowledgement (a poll taken by an agent that dies is lost), the hello's retry,
port events, reconnection.
"""

from __future__ import annotations

import json
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import redis

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from collectors import read_host, to_dict, wire
from fabricweb.names import INGEST_SNAPSHOT, SNAPSHOT_QUEUE, node_queue

HW_EVERY = 6


def message(snap: dict) -> bytes:
    """A Celery protocol-2 task message as kombu's Redis transport stores it for the agent (JSON, the body as it
    is: names.PLAIN_BODIES)."""
    task_id = str(uuid.uuid4())
    body = json.dumps([[wire.encode(snap)], {}, {"callbacks": None, "errbacks": None, "chain": None, "chord": None}])
    return json.dumps(
        {
            "body": body,
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": {
                "lang": "py",
                "task": INGEST_SNAPSHOT,
                "id": task_id,
                "root_id": task_id,
                "parent_id": None,
                "group": None,
                "retries": 0,
                "eta": None,
                "expires": None,
                "argsrepr": f"[snapshot of {snap['host']}]",
                "kwargsrepr": "{}",
                "origin": f"agent-sketch@{snap['host']}",
            },
            "properties": {
                "correlation_id": task_id,
                "delivery_mode": 2,
                "delivery_info": {"exchange": "", "routing_key": SNAPSHOT_QUEUE},
                "priority": 0,
                "body_encoding": None,
                "delivery_tag": str(uuid.uuid4()),
            },
        }
    ).encode()


def main() -> int:
    node = os.environ["FABRIC_NODE_NAME"]
    root = os.environ.get("FABRIC_SYSFS_ROOT", "/sys")
    # redis-py 8 times reads out after 5 s by default: longer than one BRPOP.
    client = redis.Redis.from_url(os.environ["REDIS_URL"], socket_timeout=15)
    polls = 0
    hw: dict = {}

    def snapshot() -> dict:
        nonlocal polls, hw
        fresh = polls % HW_EVERY == 0
        polls += 1
        snap = to_dict(read_host(root, host=node, use_verbs=False, hw_counters=fresh, deadline=time.monotonic() + 10))
        for dev in snap["devices"]:
            for port in dev["ports"]:
                key = (dev["name"], port["port"])
                if fresh:
                    hw[key] = port["hw_counters"]
                else:
                    port["hw_counters"] = hw.get(key, {})
        return snap

    client.lpush(SNAPSHOT_QUEUE, message(snapshot()))  # the hello
    while True:
        popped = client.brpop([node_queue(node)], timeout=10)
        if popped is None:
            continue
        headers = json.loads(popped[1])["headers"]
        expires = headers.get("expires")
        if expires and datetime.fromisoformat(expires) < datetime.now(UTC):
            continue
        client.lpush(SNAPSHOT_QUEUE, message(snapshot()))


if __name__ == "__main__":
    sys.exit(main())
