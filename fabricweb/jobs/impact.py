"""Which running jobs a link, a port or an event hurts: the jobs whose links (JobLink) include it now.

Batch lookups for pages, the API, /metrics and notifications: one query for the links of a set of
ports and one for the jobs of a set of links, never one per row. Jobs are listed largest first (the
node count), then by id, since a big job hurt is the first an operator wants to hear about.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Q

from fabricweb.fabric.models import Link
from fabricweb.health.models import Event
from fabricweb.health.signals import OPENED
from fabricweb.inventory.models import Port

from .models import Job, JobLink

FIRST_FEW = 3  # jobs named in a one-line summary; the rest counted
_CHUNK = 500  # ids per IN (...): SQLite caps a statement's parameters


@dataclass(frozen=True, slots=True)
class JobBrief:
    id: str
    name: str
    user: str
    nodes: int

    def words(self) -> str:
        return f"{self.id} {self.name} ({self.user}, {self.nodes} node{'s' if self.nodes != 1 else ''})"

    def as_dict(self) -> dict:
        return {"id": self.id, "name": self.name, "user": self.user, "nodes": self.nodes}


def _chunks(ids) -> list[list[int]]:
    ids = sorted(set(ids))
    return [ids[i : i + _CHUNK] for i in range(0, len(ids), _CHUNK)]


def jobs_by_link(link_ids) -> dict[int, list[JobBrief]]:
    """link id -> the running jobs crossing it, largest first."""
    out: dict[int, list[JobBrief]] = defaultdict(list)
    for chunk in _chunks(link_ids):
        rows = JobLink.objects.filter(link_id__in=chunk, job__ended_at__isnull=True).values_list(
            "link_id", "job__job_id", "job__name", "job__user", "job__nodes"
        )
        for link_id, job_id, name, user, nodes in rows:
            out[link_id].append(JobBrief(job_id, name, user, len(nodes)))
    for briefs in out.values():
        briefs.sort(key=lambda b: (-b.nodes, b.id))
    return out


def links_of_ports(port_ids) -> dict[int, set[int]]:
    """port id -> the links it is an end of (a port has one cable; a link gone keeps its row)."""
    out: dict[int, set[int]] = defaultdict(set)
    for chunk in _chunks(port_ids):
        for pk, a, b in Link.objects.filter(Q(a_id__in=chunk) | Q(b_id__in=chunk)).values_list("pk", "a_id", "b_id"):
            for end in (a, b):
                if end in chunk:
                    out[end].add(pk)
    return out


def jobs_by_port(port_ids) -> dict[int, list[JobBrief]]:
    """port id -> the running jobs crossing its link, largest first."""
    links = links_of_ports(port_ids)
    by_link = jobs_by_link({i for ids in links.values() for i in ids})
    out = {}
    for port_id, ids in links.items():
        merged = {b.id: b for i in ids for b in by_link.get(i, ())}
        if merged:
            out[port_id] = sorted(merged.values(), key=lambda b: (-b.nodes, b.id))
    return out


def jobs_for_events(events) -> dict[int, list[JobBrief]]:
    """event id -> the running jobs its link carries: its port's link, or for an event on a whole node
    (stale, a switch unreachable) the links of all the node's ports. One query when no job runs (a site
    without a scheduler pays no more per page than that)."""
    if not events or not Job.objects.filter(ended_at__isnull=True).exists():
        return {}
    ports_of: dict[int, list[int]] = {}
    whole_nodes = {e.node_id for e in events if e.port_id is None}
    node_ports: dict[int, list[int]] = defaultdict(list)
    for chunk in _chunks(whole_nodes):
        for pk, node_id in Port.objects.filter(device__node_id__in=chunk).values_list("pk", "device__node_id"):
            node_ports[node_id].append(pk)
    for e in events:
        ports_of[e.pk] = [e.port_id] if e.port_id is not None else node_ports.get(e.node_id, [])
    by_port = jobs_by_port({p for ports in ports_of.values() for p in ports})
    out = {}
    for event_id, ports in ports_of.items():
        merged = {b.id: b for p in ports for b in by_port.get(p, ())}
        out[event_id] = sorted(merged.values(), key=lambda b: (-b.nodes, b.id))
    return out


def on_events_changed(sender, changes, **kwargs) -> None:
    """An event opened with running jobs crossing its link keeps them in its details (`jobs`, as the webhook
    names them): the event's history says whom it hurt after the jobs have ended. One query when no job runs."""
    opened = [event for event, change in changes if change == OPENED]
    jobs = jobs_for_events(opened)
    hurt = [e for e in opened if jobs.get(e.pk)]
    for event in hurt:
        event.details = {**event.details, "jobs": [b.as_dict() for b in jobs[event.pk]]}
    if hurt:
        Event.objects.bulk_update(hurt, ["details"])


def summary(briefs: list[JobBrief]) -> str:
    """`2 jobs: 4242 allreduce (alice, 64 nodes), 4250 halo (bob, 2 nodes)`; `no running job` when none."""
    if not briefs:
        return "no running job"
    named = ", ".join(b.words() for b in briefs[:FIRST_FEW])
    more = f" and {len(briefs) - FIRST_FEW} more" if len(briefs) > FIRST_FEW else ""
    return f"{len(briefs)} job{'s' if len(briefs) != 1 else ''}: {named}{more}"
