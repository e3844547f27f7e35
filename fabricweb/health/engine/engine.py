"""Judge every stored snapshot inside the ingest transaction: findings -> events, expectations -> ports.

Connected to `fabricweb.telemetry.signals.snapshots_ingested` (HealthConfig.ready).
Per batch: the thresholds, policies and fabric majority (context), the open events
of the batch's nodes (one query), then per snapshot in time order a PortView per
port seen or missing, rules.judge_port on each, lifecycle.step against the node's
open events about what was judged, and finally one INSERT/UPDATE for events and
one UPDATE for ports whose expected link changed. Healthy ports cost no writes.
A quiet port whose judgement can only repeat itself reuses it (quiet.py), most of
the time without a PortView at all (memo.py, the fast path).

A batch holding several snapshots of one node (a backfill) shares one Port row per
port, as it was after the last of them; each snapshot is still judged on its own
link state, deltas and time, and its state_polls and missing counts are worked
back from the last.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from collectors import xmitwait
from fabricweb.inventory import rowwrites
from fabricweb.inventory.models import Node, Port
from fabricweb.telemetry.results import IngestResult, LinkState, PortObservation
from fabricweb.telemetry.storage.store import update_rows
from fabricweb.thresholds import Thresholds

from ..records import context, eventbudget, lifecycle
from ..records.events import EventBook, Target
from ..rules import Judgement, judge_clock, judge_port
from ..rules.expectation import Expectation
from ..rules.findings import JUDGED_ELSEWHERE, Finding, Kind, device_target, merge_findings, node_key, port_target
from ..rules.view import PcieView, PortView
from . import memo, pciehost, quiet

log = logging.getLogger(__name__)

EXPECTED_FIELDS = ["expected_speed", "expected_lanes", "expected_source", "expect_up"]


@dataclass(slots=True)
class Outcome:
    """What one batch did, for logs and for measuring the engine."""

    snapshots: int = 0
    ports: int = 0
    events: dict[str, int] = field(default_factory=dict)
    alarms: list[str] = field(default_factory=list)  # warning/critical events opened or updated: "critical key"
    expected_written: int = 0
    seconds: float = 0.0
    reused: int = 0  # port judgements reused (memo.reuse or quiet.rejudge)
    fast: int = 0  # of which without a view (memo.reuse)
    over_budget: int = 0  # findings not opened as events: their node holds FABRIC_NODE_MAX_OPEN_EVENTS (eventbudget)


def on_snapshots_ingested(sender, results: list[IngestResult], **kwargs) -> Outcome | None:
    """The receiver; the batch's Outcome (what Signal.send hands back), None when judging failed.
    A database error rolls the batch back (ingest retries it); any other failure is a bug in
    judging, and must not cost the samples: logged, and the batch is stored unjudged."""
    try:
        return judge_batch(results)  # every write is at its end: a failure before them leaves nothing
    except DatabaseError:
        raise
    except Exception:
        log.exception("health: judging %d snapshot(s) failed; they are stored but not judged", len(results))
        # Judging may have changed port rows in memory before it failed: no ingest process may reuse them.
        rowwrites.invalidate(n.pk for n in _nodes(results).values())
        return None


def judge_batch(results: list[IngestResult]) -> Outcome:
    started = time.perf_counter()
    out = Outcome()
    nodes = _nodes(results)
    if not nodes:
        return out
    now = _server_time(nodes.values())
    norms = context.norms(now)
    book = EventBook.for_nodes(n.pk for n in nodes.values())
    expected: dict[int, Port] = {}
    newest = {r.node: r for r in results}
    for result, state_polls, missing, alone in _per_snapshot(results):
        node = nodes.get(result.node)
        if node is None:
            continue
        at = min(result.collected_at, now)  # a node clock ahead of ours must not date events in the future
        findings, unknown, judged, targets = _judge(result, node, norms, state_polls, missing, alone, out)
        pciehost.claim(book, node, result, targets)
        # The node's newest snapshot against when this server stored it: its clock's skew (older ones of a
        # backfill batch arrived late by design). Judged only there, so only there are these events touched.
        if newest[node.name] is result and node.last_ingested_at is not None:
            skew = (result.collected_at - node.last_ingested_at).total_seconds()
            findings.extend(judge_clock(node.name, skew, norms.thresholds))
        elif newest[node.name] is not result:
            unknown = unknown | {node_key(Kind.CLOCK_SKEW, node.name)}
        held = book.open_for(targets)
        unknown = unknown | {key for key, e in held.items() if e.kind in JUDGED_ELSEWHERE}
        actions = lifecycle.step(held, findings, unknown, norms.resolve_after)
        actions, waiting = eventbudget.within(actions, book.open_count(node.name), settings.FABRIC_NODE_MAX_OPEN_EVENTS)
        if waiting:
            out.over_budget += waiting
            log.warning(
                "health: %s holds its bound of open events (FABRIC_NODE_MAX_OPEN_EVENTS=%d): %d more not opened",
                node.name,
                settings.FABRIC_NODE_MAX_OPEN_EVENTS,
                waiting,
            )
        book.apply(actions, node, targets, at)
        out.snapshots += 1
        out.ports += len(result.observations)
        for port, exp in judged:
            if _set_expected(port, exp, _operator_expect_up(exp, norms.cabling, node, port)) and port.pk is not None:
                expected[port.pk] = port
    book.write()
    if expected:
        update_rows(Port, expected.values(), EXPECTED_FIELDS)
    out.events, out.alarms = book.tally.as_dict(), book.tally.alarms
    out.expected_written = len(expected)
    out.seconds = time.perf_counter() - started
    log.debug("health: %d snapshots, %d ports judged in %.1f ms", out.snapshots, out.ports, out.seconds * 1e3)
    return out


# --- rows of the batch -----------------------------------------------------------


def _nodes(results: list[IngestResult]) -> dict[str, Node]:
    """The node row of each result, as ingest attached it to the ports; queried only when none is attached."""
    nodes: dict[str, Node] = {}
    for r in results:
        for obs in r.observations:
            nodes[r.node] = obs.device.node
            break
        else:
            for device in r.missing_devices or [p.device for p in r.missing_ports]:
                nodes[r.node] = device.node
                break
    lacking = {r.node for r in results} - set(nodes)
    if lacking:  # a node that reported no device at all still reported: its stale event counts a clean poll
        nodes.update((n.name, n) for n in Node.objects.filter(name__in=lacking))
    return nodes


def _server_time(nodes: Iterable[Node]) -> datetime:
    """Ingest's clock for this batch: it stored it as every node's last_ingested_at."""
    stamps = [n.last_ingested_at for n in nodes if n.last_ingested_at is not None]
    return max(stamps) if stamps else timezone.now()


def _same_state(obs: PortObservation) -> bool:
    prev, cur = obs.previous, obs.current
    return prev is not None and (prev.state_id, prev.phys_state_id) == (cur.state_id, cur.phys_state_id)


def _per_snapshot(results: list[IngestResult]):
    """(result, state_polls by port id(), missed polls by row id(), alone) for each result, in order.

    `alone`: the only snapshot of its node in the batch, whose rows hold its own values:
    its state_polls are the rows' (an empty mapping), and a missing row's count is its own.
    """
    per_node = Counter(r.node for r in results)
    backfills = _backfills([r for r in results if per_node[r.node] > 1])
    for r in results:
        if per_node[r.node] > 1:
            yield r, *backfills[id(r)], False
        else:
            yield r, {}, {id(x): max(x.missed_polls, 1) for x in (*r.missing_devices, *r.missing_ports)}, True


def _backfills(results: list[IngestResult]) -> dict[int, tuple[dict[int, int], dict[int, int]]]:
    """Result id() -> (state_polls by port id(), missed polls by row id()), for nodes with several results.

    The rows hold the values after the batch's last snapshot of their node. For an
    earlier snapshot, state_polls is worked back from the last (counted forward within
    the batch where a state change lies between), and so is a missing count; where
    the row came back later in the batch it is counted forward from the batch's start
    (a lower bound only when it was already missing before the batch).
    """
    chains: dict[int, list[PortObservation]] = defaultdict(list)
    order: dict[str, int] = defaultdict(int)  # node -> its results so far
    missing: dict[int, tuple[object, str, list[int]]] = {}  # row id() -> (row, node, its positions missing)
    positions = []
    for r in results:
        k = order[r.node]
        order[r.node] += 1
        positions.append(k)
        for obs in r.observations:
            chains[id(obs.port)].append(obs)
        for row in (*r.missing_devices, *r.missing_ports):
            missing.setdefault(id(row), (row, r.node, []))[2].append(k)
    polls: dict[int, int] = {}  # id(observation) -> state_polls
    for chain in chains.values():
        last = chain[-1]
        polls[id(last)] = last.port.state_polls
        run = [1] * len(chain)
        for k in range(1, len(chain)):
            run[k] = run[k - 1] + 1 if _same_state(chain[k]) else 1
        for k in range(len(chain) - 2, -1, -1):
            later = polls[id(chain[k + 1])]
            polls[id(chain[k])] = later - 1 if _same_state(chain[k + 1]) and later > 1 else run[k]
    missed: dict[tuple[int, int], int] = {}  # (row id(), position) -> polls missing
    for key, (row, node, ks) in missing.items():
        start = 0
        for j, k in enumerate(ks):
            if j and ks[j - 1] != k - 1:
                start = j
            missed[key, k] = k - ks[start] + 1
        run_start = ks[start]
        if ks[-1] == order[node] - 1:  # still missing at the node's last snapshot: the row's count is exact
            for k in ks[start:]:
                missed[key, k] = max(row.missed_polls - (ks[-1] - k), k - run_start + 1)
    out = {}
    for r, k in zip(results, positions, strict=True):
        rows = (*r.missing_devices, *r.missing_ports)
        out[id(r)] = {id(o.port): polls[id(o)] for o in r.observations}, {id(x): missed[id(x), k] for x in rows}
    return out


# --- views and judgement ------------------------------------------------------------


def _view(port: Port, link: LinkState, node: str, ts: float, norms: context.Norms, pcie: dict, **changes) -> PortView:
    device = port.device
    return PortView(
        node=node,
        device=device.name,
        port=port.number,
        ts=ts,
        hca_type=device.hca_type,
        device_id=xmitwait.device_id(device.hca_type, device.board_id),
        state_id=link.state_id,
        state_name=link.state_name,
        phys_state_id=link.phys_state_id,
        phys_state_name=link.phys_state_name,
        link=context.rate(link.speed, link.lanes),
        link_layer=link.link_layer,
        ever_up=port.ever_up,
        policy=norms.policies.match(node, device.name, port.number),
        best_link=context.rate(port.best_speed, port.best_lanes),
        majority=norms.majorities.get(device.hca_type) if device.hca_type else None,
        recent=port.recent or (),
        pcie=pciehost.pcie_view(device, pcie),
        far_end=port.peer_label or None,
        capability=context.rate(port.capable_speed, port.capable_lanes),
        link_owner=port.link_owner,
        **changes,
    )


def _judge(
    result: IngestResult,
    node: Node,
    norms: context.Norms,
    state_polls: dict[int, int],
    missed: dict[int, int],
    alone: bool,
    out: Outcome,
) -> tuple[list[Finding], frozenset[str], list[tuple[Port, Expectation]], dict[str, Target]]:
    """One snapshot judged: its findings merged, the keys it could not judge, each port's expectation to
    store on its row, and the things judged (event targets). A quiet port of a node's only snapshot in
    the batch is judged without a view when it can be (memo.reuse); `out` counts the judgements reused."""
    name, ts, t = node.name, result.collected_at.timestamp(), norms.thresholds
    targets: dict[str, Target] = {name: (None, None)}
    findings: list[Finding] = []
    unknown: set[str] = set()
    judged = []
    pcie: dict[int, PcieView] = {}
    devices: dict[int, tuple] = {}  # id(device) -> memo.device_inputs, once a device at this poll
    gpus_known = node.gpus is not None
    for obs in result.observations:
        port = obs.port
        interval = obs.interval_s if obs.interval_s and obs.interval_s > 0 else 0.0
        raw = None
        if alone and port.id is not None:
            device = obs.device
            part = devices.get(id(device))
            if part is None:
                part = devices[id(device)] = memo.device_inputs(device, norms, gpus_known)
            raw = memo.raw_inputs(obs, name, norms, part)
        held = memo.reuse(obs, raw, ts, interval, t) if raw is not None else None
        if held is not None:
            out.reused += 1
            out.fast += 1
            j = held.judgement
            device = obs.device
            targets[held.target] = (device, port)
            targets.setdefault(held.device_target, (device, None))
        else:
            view = _view(
                port,
                obs.current,
                name,
                ts,
                norms,
                pcie,
                interval_s=interval,
                state_polls=state_polls.get(id(port), port.state_polls),
                deltas=obs.deltas,
                # Counters whose rate is unknown for the cap, not every capped file: a 32-bit counters/
                # file at all-ones says nothing when ingest read its 64-bit counters_ext/ copy.
                capped=frozenset(obs.capped),
            )
            j = _judge_port(view, port, t, out, raw)
            _target(targets, name, port)
        findings.extend(j.findings)
        unknown |= j.unknown
        if j.expectation is not None:
            judged.append((port, j.expectation))
    gone_devices = {id(d) for d in result.missing_devices}
    for port in result.missing_ports:
        device = port.device
        view = _view(
            port,
            LinkState.of(port),  # as last seen
            name,
            ts,
            norms,
            pcie,
            interval_s=0.0,
            deltas={},
            device_missing_polls=missed.get(id(device), 1) if id(device) in gone_devices else 0,
            port_missing_polls=missed.get(id(port), 1),
        )
        j = _judge_port(view, None, t, out)  # no expectation is worked out for what is not there
        findings.extend(j.findings)
        unknown |= j.unknown
        _target(targets, name, port)
    host = pciehost.judge(node, result, judged, norms.policies, pcie)  # the host's PCIe layout, once
    findings.extend(host.findings)
    unknown |= host.unknown
    targets.update(host.targets)
    findings.extend(result.extra_findings)  # a switch's: what only the fabric view finds (fabricweb.fabric.judge)
    merged = merge_findings(findings)
    return merged, frozenset(unknown - {f.key for f in merged}), judged, targets


def _target(targets: dict[str, Target], node: str, port: Port) -> None:
    device = port.device
    targets[port_target(node, device.name, port.number)] = (device, port)
    targets.setdefault(device_target(node, device.name), (device, None))


def _judge_port(view: PortView, port: Port | None, t: Thresholds, out: Outcome, raw: tuple | None = None) -> Judgement:
    """rules.judge_port, or the port's last judgement when it is quiet and nothing it depends on changed
    (counted in `out`)."""
    key = quiet.inputs(view, t) if port is not None and port.pk is not None else None
    if key is None:
        if port is not None:
            memo.drop(port.pk)
        return judge_port(view, t)
    held = memo.get(port.pk)
    if held is not None and held.inputs == key:
        out.reused += 1
        j = quiet.rejudge(view, t, held.judgement)
    else:
        j = judge_port(view, t)
    memo.keep(port.pk, raw, key, j, view)
    return j


def _operator_expect_up(exp: Expectation, cabling: context.Cabling, node: Node, port: Port) -> bool | None:
    """Port.expect_up: the policy's word, else True when the expected cabling names the port, else None (its
    history decides: fabricweb.inventory.portfacts' should be up)."""
    word = exp.expect_up_by_policy
    if word is not None:
        return word
    return True if cabling.names(node.name, node.guid, port.device.name, port.number) else None


def _set_expected(port: Port, exp: Expectation, expect_up: bool | None) -> bool:
    """Store what the port should run at, who says so and whether an operator says it should be up; True
    when that changed."""
    link = exp.link
    value = (link.speed, link.lanes, exp.source) if link is not None else (None, None, exp.source)
    if (port.expected_speed, port.expected_lanes, port.expected_source, port.expect_up) == (*value, expect_up):
        return False
    port.expected_speed, port.expected_lanes, port.expected_source = value
    port.expect_up = expect_up
    return True
