"""The agent's snapshots onto the broker: one LPUSH of the Celery task message, built here.

A node's snapshot is a Celery protocol 2 message of `ingest_snapshot` on its snapshots queue
(fabricweb/names.py; ingest reads it: telemetry/intake/messages.py). Celery's send_task makes that
message through its router, its amqp layer, kombu's producer, channel and exchange lookup, and
redis-py: the longest stretch of code an agent runs each poll, run once every few seconds on a
node whose CPU caches the jobs have emptied since, so it cost more than reading the node
(BENCHMARKS.md). Here it is the same message (the fields send_task writes, the body as JSON text,
`body_encoding` null as PLAIN_BODIES asks) pushed by the producer's own Redis client: the broker
connection, TLS and credentials stay kombu's. tests/agent/test_agent_publish.py compares it with
send_task's.

A broker that is not Redis (none in production; a test's memory:// one) goes through send_task.
"""

from __future__ import annotations

import json
import os
import socket
import uuid

from celery import Celery

# Protocol 2's third body element: no callbacks, errbacks, chain or chord.
EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def task_message(task: str, queue: str, args: list, kwargs: dict, argsrepr: str, kwargsrepr: str, origin: str) -> str:
    """The kombu envelope of a protocol 2 message of `task` on `queue`, as JSON text (what Redis holds)."""
    task_id = str(uuid.uuid4())
    return json.dumps(
        {
            "body": json.dumps([args, kwargs, EMBED]),
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": {
                "lang": "py",
                "task": task,
                "id": task_id,
                "shadow": None,
                "eta": None,
                "expires": None,
                "group": None,
                "group_index": None,
                "retries": 0,
                "timelimit": [None, None],
                "root_id": task_id,
                "parent_id": None,
                "argsrepr": argsrepr,
                "kwargsrepr": kwargsrepr,
                "origin": origin,
                "ignore_result": None,
                "replaced_task_nesting": 0,
                "stamped_headers": None,
                "stamps": {},
            },
            "properties": {
                "correlation_id": task_id,
                "reply_to": None,
                "argsrepr": argsrepr,
                "kwargsrepr": kwargsrepr,
                "delivery_mode": 2,
                "delivery_info": {"exchange": "", "routing_key": queue},
                "priority": 0,
                "body_encoding": None,
                "delivery_tag": str(uuid.uuid4()),
            },
        }
    )


class Publisher:
    """Sends task messages for one Celery app: by LPUSH on a Redis broker, else by send_task."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self.origin = f"gen{os.getpid()}@{socket.gethostname()}"
        self._producer = None  # one of the app's pooled producers, held for the process's life

    def send(self, task: str, queue: str, args=None, kwargs=None, argsrepr: str = "", kwargsrepr: str = "") -> None:
        """Put one message of `task` on `queue`; the broker's refusal or a lost connection raises."""
        producer = self._producer
        if producer is None:
            producer = self._producer = self.app.producer_pool.acquire(block=True)
        channel = producer.channel
        if not hasattr(channel, "conn_or_acquire"):  # not kombu's Redis channel
            self.app.send_task(
                task, args=args, kwargs=kwargs, queue=queue, argsrepr=argsrepr, kwargsrepr=kwargsrepr, producer=producer
            )
            return
        text = task_message(task, queue, list(args or ()), kwargs or {}, argsrepr, kwargsrepr, self.origin)
        with channel.conn_or_acquire() as client:
            client.lpush(queue, text)

    def close(self) -> None:
        """Give the producer back to the app's pool, which closes its connection with the app."""
        producer, self._producer = self._producer, None
        if producer is not None:
            producer.release()
