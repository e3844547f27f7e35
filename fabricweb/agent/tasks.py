"""The node side of polling: `collect`, sent by central beat to node.<name>, and the hello at start.

Both read a node's tree with collectors and send the JSON snapshot to the snapshots queue
(read in batches by `manage.py ingest`) by task name, so nothing here needs the database
or the central apps. The module is also imported centrally (fabricweb.celery `include`),
where it only names the task for routing.
"""

from __future__ import annotations

import logging
import os
import re
import socket

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from collectors import read_host, to_dict
from collectors.facts import NODE_NAME_PATTERN
from fabricweb.celery import NODE_QUEUE_PREFIX, SNAPSHOT_QUEUE, app

log = logging.getLogger(__name__)

INGEST_TASK = "fabricweb.telemetry.tasks.ingest_snapshot"


class NotServed(ValueError):
    """A collect for a node this worker does not read: reporting another tree under that name would lie."""


def this_node() -> str:
    return settings.FABRIC_NODE_NAME or socket.gethostname().split(".")[0]


def served_nodes() -> list[str]:
    """The nodes this worker answers for: every node tree in FABRIC_SIM_DIR, or this node."""
    sim_dir = settings.FABRIC_SIM_DIR
    if not sim_dir:
        return [this_node()]
    return sorted(
        name
        for name in os.listdir(sim_dir)
        if re.fullmatch(NODE_NAME_PATTERN, name) and os.path.isdir(os.path.join(sim_dir, name, "class", "infiniband"))
    )


def sysfs_root(node: str) -> str:
    sim_dir = settings.FABRIC_SIM_DIR
    if sim_dir:
        # A simulated node keeps its name when its tree vanishes: that is a fault to report.
        if not re.fullmatch(NODE_NAME_PATTERN, node):
            raise NotServed(f"{node!r} is not a node name")
        return os.path.join(sim_dir, node)
    if node != this_node():
        raise NotServed(f"this worker reads {this_node()}, not {node}")
    return settings.FABRIC_SYSFS_ROOT


def snapshot(node: str) -> dict:
    root = sysfs_root(node)
    # pyverbs describes this machine's devices: merged only into a reading of its real /sys.
    return to_dict(read_host(root, host=node, use_verbs=os.path.realpath(root) == "/sys"))


def deliver(snap: dict) -> None:
    app.send_task(INGEST_TASK, args=[snap], queue=SNAPSHOT_QUEUE)


@shared_task(per_node=True)
def collect(node: str) -> dict:
    """Read `node` and send its snapshot to the snapshots queue. Beat sends it with `expires` of one poll interval."""
    snap = snapshot(node)
    deliver(snap)
    return {"node": node, "devices": len(snap["devices"]), "errors": len(snap["errors"])}


@worker_ready.connect
def hello(sender, **kwargs) -> None:
    """Register every node this worker consumes for: its first snapshot creates the Node row."""
    queues = sender.app.amqp.queues.consume_from
    nodes = [name.removeprefix(NODE_QUEUE_PREFIX) for name in queues if name.startswith(NODE_QUEUE_PREFIX)]
    for node in nodes:
        try:
            deliver(snapshot(node))
        except Exception:  # one unreadable node must not keep the others from registering
            log.exception("hello: could not send the first snapshot of %s", node)
    if nodes:
        log.info("hello: sent the first snapshot of %d node(s): %s", len(nodes), ", ".join(nodes))
