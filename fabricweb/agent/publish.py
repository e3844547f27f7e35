"""The agent's snapshots onto the broker: one LPUSH of the Celery task message, built here.

A node's snapshot is a Celery protocol 2 message of `ingest_snapshot` on its snapshots queue
(fabricweb/names.py; ingest reads it: telemetry/intake/messages.py). Celery's send_task makes that
message through its router, its amqp layer, kombu's producer, channel and exchange lookup, and
redis-py: the longest stretch of code an agent runs each poll, run once every few seconds on a
node whose CPU caches the jobs have emptied since, so it cost more than reading the node
(BENCHMARKS.md). Here it is the same message (the fields send_task writes, the body as JSON text,
`body_encoding` null as PLAIN_BODIES asks) pushed on the agent's own connection (resp.py), whose URL,
TLS and credentials are the broker's. tests/agent/test_agent_publish.py compares it with send_task's.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid

from fabricweb.agent.resp import BrokerLost, Connection

# Protocol 2's third body element: no callbacks, errbacks, chain or chord.
EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}
# No space after a separator: every reader parses the JSON, and the body's spaces are in every message.
_COMPACT = (",", ":")


def task_message(task: str, queue: str, args: list, kwargs: dict, argsrepr: str, kwargsrepr: str, origin: str) -> str:
    """The kombu envelope of a protocol 2 message of `task` on `queue`, as JSON text (what Redis holds)."""
    task_id = str(uuid.uuid4())
    return json.dumps(
        {
            "body": json.dumps([args, kwargs, EMBED], separators=_COMPACT),
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
        },
        separators=_COMPACT,
    )


class Publisher:
    """Sends task messages by LPUSH on a connection of its own (the poll loop's waits in BRPOP), one at a time:
    the loop and the port events' thread both send."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.origin = f"gen{os.getpid()}@{socket.gethostname()}"
        self._lock = threading.Lock()

    def send(self, task: str, queue: str, args=None, kwargs=None, argsrepr: str = "", kwargsrepr: str = "") -> None:
        """Put one message of `task` on `queue`; BrokerError for the broker's refusal, BrokerLost when it cannot be
        reached. A connection the broker dropped since the last push (a restart) is made again once."""
        text = task_message(task, queue, list(args or ()), kwargs or {}, argsrepr, kwargsrepr, self.origin)
        with self._lock:
            try:
                self.connection.command("LPUSH", queue, text)
            except BrokerLost:
                self.connection.command("LPUSH", queue, text)

    def close(self) -> None:
        with self._lock:
            self.connection.close()
