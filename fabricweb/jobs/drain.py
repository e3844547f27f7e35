"""Draining, safely: a node whose own port, or the link from it to its leaf, is down or critically degraded
is taken out of the scheduler, so the next job does not land on it (docs/jobs.md, "Drain").

Once a poll interval, after the jobs are read (fabricweb.jobs.tasks):

1. **Who is to blame.** Open events on a host's port, or on a leaf's port whose cable goes to a host, whose
   kind and severity the host's drain policy (fabricweb.health.models.DrainPolicy; default DEFAULT_KINDS at
   critical) says drain. A fault between two switches never drains a node: no node is to blame for it.
2. **How many at once.** At most FABRIC_DRAIN_MAX nodes (default max(2, 1 % of the hosts)) held drained
   by fabricweb. Past that, none of the new ones is drained: a whole leaf going down is a fabric fault, and
   the nodes' drain events page (critical) instead.
3. **Never an operator's drain.** A node already drained whose reason does not begin `fabricweb:` is left
   alone, and so is resuming: only nodes whose reason begins `fabricweb:` are ever resumed, and only with
   FABRIC_DRAIN_RESUME_AFTER set, that long after the finding cleared.
4. **Dry run** (FABRIC_DRAIN=dry-run, the default) records "would drain cn005: <reason>" and does nothing.
5. **Visible.** Every action is a DrainAction (who, what, when) and each node's drain state is one event
   of kind `drain` on it (info while drained or would be, warning while a drain fails, critical past the
   limit), shown on its page and in the events, notified like any other. A failed `scontrol` is retried
   at the next run; its error is the event's message.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from fabricweb.fabric.linkrows import hosts_beyond_switch_ports
from fabricweb.health.models import DrainPolicy, Event
from fabricweb.health.records import lifecycle
from fabricweb.health.records.drainpolicyfile import DEFAULT_KINDS
from fabricweb.health.records.events import EventBook, target_of
from fabricweb.health.rules.findings import Finding, Kind, Severity, node_key
from fabricweb.inventory.models import Node, Port

from .models import Drain, DrainAction, Job
from .sources import JobSource, SchedulerError

log = logging.getLogger(__name__)

PREFIX = "fabricweb:"  # every reason fabricweb gives starts so; nothing else is ever resumed by it
DEFAULT_SEVERITY = "critical"
REASON_MAX = 200  # characters of a Slurm reason we write: the finding, shortened
_RANK = {"info": 0, "warning": 1, "critical": 2}
FABRICWEB = "fabricweb"


@dataclass(frozen=True, slots=True)
class Candidate:
    node: str
    reason: str  # the finding's message
    key: str  # the finding's event key
    port_id: int  # the port the finding is on


@dataclass(slots=True)
class DrainReport:
    mode: str
    candidates: list[str] = field(default_factory=list)
    drained: list[str] = field(default_factory=list)
    would: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    limited: list[str] = field(default_factory=list)
    left: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)


def drain_limit() -> int:
    if settings.FABRIC_DRAIN_MAX is not None:
        return settings.FABRIC_DRAIN_MAX
    hosts = Node.objects.filter(kind=Node.Kind.HOST).count()
    return max(2, math.ceil(hosts / 100))


def _policy_for(node: str, policies: list[DrainPolicy]) -> tuple[bool, Iterable[str], str]:
    for policy in policies:
        if policy.matches(node):
            return policy.drain, policy.kinds, policy.severity
    return True, DEFAULT_KINDS, DEFAULT_SEVERITY


def candidates() -> dict[str, Candidate]:
    """The hosts the open events and the drain policies say should be drained, each with its worst finding."""
    policies = list(DrainPolicy.objects.filter(enabled=True))
    kinds = set(DEFAULT_KINDS).union(*(p.kinds for p in policies))
    events = (
        Event.objects.filter(resolved_at__isnull=True, port__isnull=False, kind__in=sorted(kinds))
        .select_related("node")
        .order_by("opened_at", "id")
    )
    out: dict[str, tuple[int, Candidate]] = {}
    beyond = hosts_beyond_switch_ports()
    for event in events:
        host = _host_of(event, beyond)
        if host is None:
            continue  # between two switches, or a port facing nothing known: no node to blame
        drains, wanted, least = _policy_for(host, policies)
        rank = _RANK.get(event.severity, 0)
        if not drains or event.kind not in wanted or rank < _RANK[least]:
            continue
        if host not in out or rank > out[host][0]:
            out[host] = (rank, Candidate(host, event.message, event.key, event.port_id))
    return {host: c for host, (_, c) in out.items()}


def _host_of(event: Event, beyond: dict[int, str]) -> str | None:
    """The host an event on a port blames: the port's own host, or the host cabled to a leaf's port (an agent's
    node, or one seen only by the fabric collector, by its node description); None between two switches."""
    if event.node.kind == Node.Kind.HOST:
        return event.node.name
    if event.node.kind == Node.Kind.SWITCH:
        return beyond.get(event.port_id)
    return None


def scheduler_names() -> dict[str, str]:
    """fabricweb node -> the scheduler's name for it, from the jobs read (the same name where none says)."""
    out = {}
    for nodes, hosts in Job.objects.values_list("nodes", "hosts"):
        for name, host in zip(nodes, hosts, strict=False):
            out[host] = name
    return out


def _record(node: str, action: str, reason: str = "", error: str = "", by: str = FABRICWEB, at=None) -> None:
    DrainAction.objects.create(at=at or timezone.now(), node=node, action=action, by=by, reason=reason, error=error)


def run(source: JobSource, mode: str | None = None, now: datetime | None = None) -> DrainReport:
    """One drain pass (see the module docstring)."""
    mode = mode or settings.FABRIC_DRAIN
    now = now or timezone.now()
    report = DrainReport(mode)
    if mode == "off":
        # Turned off: what it only recorded (would drain, failed, past the limit) is forgotten and its events
        # resolved; a node it drained stays drained until an operator (or the node page) resumes it.
        rows = {d.node: d for d in Drain.objects.exclude(state=Drain.State.DRAINED)}
        if rows:
            Drain.objects.filter(pk__in=[d.pk for d in rows.values()]).delete()
            _events({d.node: d for d in Drain.objects.all()}, drain_limit(), now)
        return report
    wanted = candidates()
    report.candidates = sorted(wanted)
    names = scheduler_names()
    rows = {d.node: d for d in Drain.objects.all()}
    _release(source, mode, rows, wanted, now, report)
    held = sum(1 for d in rows.values() if d.state == Drain.State.DRAINED)
    new = [c for host, c in sorted(wanted.items()) if host not in rows or rows[host].state != Drain.State.DRAINED]
    hands_off = (Drain.State.OPERATOR, Drain.State.UNDONE)
    fresh = [c for c in new if c.node not in rows or rows[c.node].state not in hands_off]
    limit = drain_limit()
    over = mode == "on" and held + len([c for c in fresh if _would_act(rows.get(c.node))]) > limit
    for c in fresh:
        row = rows.get(c.node) or Drain(node=c.node, since=now)
        row.scheduler_node = names.get(c.node, c.node)
        row.reason, row.finding_key, row.port_id, row.clear_since = c.reason, c.key, c.port_id, None
        if mode == "dry-run":
            if row.state != Drain.State.WOULD or row.pk is None:
                _record(c.node, "would-drain", c.reason, at=now)
            row.state = Drain.State.WOULD
            report.would.append(c.node)
        elif over:
            if row.state != Drain.State.LIMITED:
                why = f"{held} drained and {len(fresh)} more would pass FABRIC_DRAIN_MAX {limit}"
                _record(c.node, "limited", c.reason, why, at=now)
            row.state, row.error = Drain.State.LIMITED, f"limit {limit}"
            report.limited.append(c.node)
        else:
            _drain(source, row, c, now, report)
        row.save()
        rows[c.node] = row
    _events(rows, limit, now)
    return report


def _would_act(row: Drain | None) -> bool:
    return row is None or row.state in (Drain.State.WOULD, Drain.State.FAILED, Drain.State.LIMITED)


def _drain(source: JobSource, row: Drain, c: Candidate, now: datetime, report: DrainReport) -> None:
    reason = f"{PREFIX} {c.reason}"[:REASON_MAX]
    try:
        state = source.node_state(row.scheduler_node)
        if state.drained and not state.reason.startswith(PREFIX):
            if row.state != Drain.State.OPERATOR:
                _record(c.node, "left-alone", f"already drained by an operator: {state.reason}", at=now)
            row.state, row.error = Drain.State.OPERATOR, state.reason
            report.left.append(c.node)
            return
        if not state.drained:
            source.drain(row.scheduler_node, reason)
    except SchedulerError as e:
        row.attempts += 1
        row.state, row.error = Drain.State.FAILED, str(e)
        _record(c.node, "failed", reason, str(e), at=now)
        log.warning("drain: %s failed (attempt %d, retried at the next run): %s", c.node, row.attempts, e)
        report.failed.append(c.node)
        return
    row.state, row.error, row.since = Drain.State.DRAINED, "", now
    _record(c.node, "drain", reason, at=now)
    log.warning("drain: drained %s in %s: %s", c.node, source.name, reason)
    report.drained.append(c.node)


def _release(source: JobSource, mode: str, rows: dict[str, Drain], wanted: dict, now: datetime, report) -> None:
    """Rows whose finding is gone: forgotten, or (drained by fabricweb) resumed once clear long enough."""
    after = settings.FABRIC_DRAIN_RESUME_AFTER
    for host, row in list(rows.items()):
        if host in wanted:
            if row.clear_since is not None:  # the finding is back: its clear time starts again when it goes
                row.clear_since = None
                row.save(update_fields=["clear_since"])
            continue
        if row.state != Drain.State.DRAINED:
            _record(host, "cleared", f"no longer drained-for: {row.reason}", at=now)
            row.delete()
            rows.pop(host)
            continue
        if row.clear_since is None:
            row.clear_since = now
            row.save(update_fields=["clear_since"])
        if after is None or mode != "on" or now - row.clear_since < timedelta(seconds=after):
            continue
        try:
            state = source.node_state(row.scheduler_node)
            if state.drained and state.reason.startswith(PREFIX):
                source.resume(row.scheduler_node)
                _record(host, "resume", f"clear for {after:g} s: {row.reason}", at=now)
                report.resumed.append(host)
            else:
                _record(host, "forgotten", f"no longer drained by fabricweb ({state.reason or 'no reason'})", at=now)
        except SchedulerError as e:
            _record(host, "failed", "resume", str(e), at=now)
            continue
        row.delete()
        rows.pop(host)


def _message(row: Drain, limit: int) -> tuple[str, str]:
    where = row.node
    if row.state == Drain.State.WOULD:
        return "info", f"{where}: would drain (dry run): {row.reason}"
    if row.state == Drain.State.DRAINED:
        return "info", f"{where}: drained in the scheduler by fabricweb: {row.reason}"
    if row.state == Drain.State.FAILED:
        return "warning", f"{where}: drain failed ({row.error}); retried every poll: {row.reason}"
    if row.state == Drain.State.LIMITED:
        return "critical", (
            f"{where}: not drained: more nodes at once than FABRIC_DRAIN_MAX ({limit}), a fault this wide is the "
            f"fabric's (a leaf or its uplinks): {row.reason}"
        )
    if row.state == Drain.State.UNDONE:
        return "info", f"{where}: drain undone by an operator, not drained again while this stands: {row.reason}"
    return "info", f"{where}: left alone, drained by an operator ({row.error}): {row.reason}"


def _events(rows: dict[str, Drain], limit: int, now: datetime) -> None:
    """Each node's drain state as one event of kind `drain` (key drain:<host>), resolved when its row goes. It is
    on the host's node; a host with no agent has none, so its event is on the leaf port its finding is on."""
    open_rows = {
        target_of(e.key): e
        for e in Event.objects.filter(kind=Kind.DRAIN, resolved_at__isnull=True).select_related("node", "port")
    }
    hosts = {n.name: n for n in Node.objects.filter(name__in=list(rows), kind=Node.Kind.HOST)}
    ports = {p.pk: p for p in Port.objects.filter(pk__in=[r.port_id for r in rows.values() if r.port_id])
             .select_related("device__node")}  # fmt: skip
    places: dict[str, tuple[Node, object, object]] = {}
    for name, e in open_rows.items():
        places[name] = (e.node, e.device, e.port)
    for name, row in rows.items():
        if name in hosts:
            places.setdefault(name, (hosts[name], None, None))
        elif row.port_id in ports:
            port = ports[row.port_id]
            places.setdefault(name, (port.device.node, port.device, port))
    with transaction.atomic():
        book = EventBook.for_nodes({node.pk for node, _, _ in places.values()}, kind=Kind.DRAIN)
        for name, (node, device, port) in sorted(places.items()):
            findings = []
            row = rows.get(name)
            if row is not None:
                severity, message = _message(row, limit)
                details = {"state": row.state, "scheduler_node": row.scheduler_node, "attempts": row.attempts}
                findings.append(Finding(Kind.DRAIN, Severity(severity), node_key(Kind.DRAIN, name), message, details))
            targets = {name: (device, port)}
            actions = lifecycle.step(book.open_for(targets), findings, resolve_after=1)
            book.apply(actions, node, targets, now)
        book.write()


def _open_drain_nodes() -> list[str]:
    return list(Event.objects.filter(kind=Kind.DRAIN, resolved_at__isnull=True).values_list("node__name", flat=True))


# -- the operator's actions (the node page) -------------------------------------------------------------


def operator_drain(source: JobSource, node: str, user: str, reason: str) -> None:
    """Drain `node` now, as an operator asks from its page: with a `fabricweb:` reason naming them."""
    name = scheduler_names().get(node, node)
    text = f"{PREFIX} drained by {user} from the node page: {reason}"[:REASON_MAX]
    try:
        source.drain(name, text)
    except SchedulerError as e:
        _record(node, "failed", text, str(e), by=user)
        raise
    now = timezone.now()
    Drain.objects.update_or_create(
        node=node,
        defaults={"scheduler_node": name, "state": Drain.State.DRAINED, "reason": text, "since": now, "error": ""},
    )
    _record(node, "drain", text, by=user, at=now)


def operator_undo(source: JobSource, node: str, user: str) -> None:
    """Resume a node fabricweb drained (or forget a would-drain): never one an operator drained outside it."""
    row = Drain.objects.filter(node=node).first()
    name = row.scheduler_node if row is not None else scheduler_names().get(node, node)
    state = source.node_state(name)
    if state.drained:
        if not state.reason.startswith(PREFIX):
            raise SchedulerError(f"{node} was drained outside fabricweb ({state.reason}): resume it in the scheduler")
        try:
            source.resume(name)
        except SchedulerError as e:
            _record(node, "failed", "resume", str(e), by=user)
            raise
        _record(node, "resume", state.reason, by=user)
    else:
        _record(node, "undo", row.reason if row is not None else "", by=user)
    if row is not None:  # kept while its finding stands, so the next run does not drain it again
        row.state, row.error = Drain.State.UNDONE, f"undone by {user}"
        row.save(update_fields=["state", "error"])
