"""The node side of polling: `collect`, sent by central beat to node.<name> (answered by loop.py), and the hello.

Both read a node's tree (fabricweb/agent/poll.py) and send the JSON snapshot to the snapshots
queue (read in batches by `manage.py ingest`) as a task message of `ingest_snapshot`, signed with
the node's key when it has one (fabricweb/nodeauth.py, standard library only): nothing here needs
the database, Celery or the central apps, and nothing central imports this module.
"""

from __future__ import annotations

import logging
import time

from collectors import wire
from collectors.sysfs import DeadlinePassed
from fabricweb.agent.config import AgentConfig
from fabricweb.agent.events import EventWatch
from fabricweb.agent.poll import Poller
from fabricweb.agent.publish import Publisher
from fabricweb.agent.resp import BrokerError, BrokerLost
from fabricweb.names import BROKER_FULL, INGEST_SNAPSHOT, NODE_QUEUE_PREFIX, snapshot_queue
from fabricweb.nodeauth import signed_kwargs

log = logging.getLogger(__name__)

FULL_BROKER_WAIT_S = 2.0  # how long a snapshot waits out a broker at its maxmemory before it is given up
FULL_BROKER_RETRY_S = 0.05


class Agent:
    """What the agent does for the nodes of one AgentConfig: answer a poll, say hello, watch port events."""

    def __init__(self, config: AgentConfig, publisher: Publisher) -> None:
        self.config = config
        self.publisher = publisher
        self.poller = Poller(config)
        self.events: EventWatch | None = None
        # Its snapshots' wire form, which leaves out what it sent already (collectors/wire.py): one per process.
        self.encoder = wire.Encoder()

    def deliver(self, snap: dict) -> None:
        """Send `snap` to ingest (its node's snapshots queue) in its wire form (collectors/wire.py), signed with
        its node's key when there is one."""
        host = snap["host"]
        snap = self.encoder.encode(snap)
        key = self.config.node_keys.get(host)
        queue = snapshot_queue(host, self.config.ingest_shards)
        # The reprs stand in the headers for the snapshot, which a reader of the message need not walk.
        if key is None:
            self._send(INGEST_SNAPSHOT, args=[snap], queue=queue, argsrepr=f"[snapshot of {host}]")
        else:
            signed = signed_kwargs(key, snap)
            self._send(
                INGEST_SNAPSHOT, kwargs=signed, queue=queue, argsrepr="()", kwargsrepr=f"{{signed snapshot of {host}}}"
            )

    def _send(self, task: str, **options) -> None:
        """Publish (fabricweb/agent/publish.py), waiting out a broker at its maxmemory for up to FULL_BROKER_WAIT_S:
        while a flood fills it, ingest sheds the flood and a push a moment later is taken (docs/security.md)."""
        deadline = time.monotonic() + FULL_BROKER_WAIT_S
        while True:
            try:
                self.publisher.send(task, **options)
                return
            except (BrokerError, BrokerLost) as e:
                if BROKER_FULL not in str(e) or time.monotonic() >= deadline:
                    raise
            time.sleep(FULL_BROKER_RETRY_S)

    def collect(self, node: str) -> dict:
        """Read `node` and send its snapshot; a poll past its deadline sends nothing (the node goes stale)."""
        try:
            snap = self.poller.snapshot(node)
        except DeadlinePassed as e:
            log.error("collect %s: abandoned after %g s, %s", node, self.config.poll_deadline_s, e)
            return {"node": node, "abandoned": str(e)}
        self.deliver(snap)
        return {"node": node, "devices": len(snap["devices"]), "errors": len(snap["errors"])}

    def hello(self, queues: list[str]) -> None:
        """Register every node this worker consumes for: its first snapshot creates the Node row."""
        nodes = [name.removeprefix(NODE_QUEUE_PREFIX) for name in queues if name.startswith(NODE_QUEUE_PREFIX)]
        for node in nodes:
            try:
                self.deliver(self.poller.snapshot(node))
            except Exception:  # one unreadable node must not keep the others from registering
                log.exception("hello: could not send the first snapshot of %s", node)
        if nodes:
            log.info("hello: sent the first snapshot of %d node(s): %s", len(nodes), ", ".join(nodes))
        if not self.config.node_keys:
            log.warning(
                "snapshots are sent unsigned (no FABRIC_NODE_KEY): ingest refuses them if FABRIC_NODE_AUTH is required"
            )

    def watch_events(self, pyverbs=None) -> bool:
        """Send a snapshot of this node at once on a port event (at most one extra a second)."""
        if not self.config.watches_events():
            return False
        self.events = EventWatch(lambda: self.collect(self.config.node_name), pyverbs=pyverbs)
        return self.events.start()

    def stop(self) -> None:
        if self.events is not None:
            self.events.stop()
        self.publisher.close()
