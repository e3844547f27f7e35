"""What link a port should run at, and who says so.

A host sees only its own end of a link, so the expectation has to come from
somewhere (docs/infiniband.md §2). In order:

1. An operator policy that matches the port. Policies are tried by `order`
   (lower first), then by how specific their patterns are (more literal
   characters first, so `cn042` beats `cn*`), then by name; the first match wins.
   A policy may leave speed, width or both blank: the blank part is learned as
   below (a policy with neither only says whether the port should be up).
2. Otherwise what both ends of its link support, when the fabric collector has seen the link
   (fabricweb.fabric.links; iblinkinfo's "Could be", UFM's non-optimal link): the link can train
   no higher, and should train no lower.
3. Otherwise the better (collectors.link.better_link) of
   - the best link this port has held while ACTIVE, and
   - the fabric norm: the link most nodes run ACTIVE ports of the same HCA model at,
     counted only when there are at least `Thresholds.fabric_min_ports` (default 4)
     votes and more than half of them agree: with fewer, one odd node would set the norm.
     Nodes vote, not ports: one vote per (node, HCA model, link), so a node reporting
     512 ports weighs what a node with one does. Stale nodes, vanished ports and nodes
     held out of the norm (fabricweb/telemetry/storage/normhold.py) do not vote (context.load_majorities).
   The fabric majority is what catches a port that has been slow since its first poll.

Accepting the current link as baseline (the operator action) stores an exact
policy for that one port — `baseline_policy()` — with order 0, so it beats any
broader policy, and the caller should reset the port's best-ever link to the
current one, so that deleting the policy later does not bring back the old best.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from collectors.link import SPEED_RANK, WIDTHS, Rate, better_link, make_rate
from fabricweb.thresholds import DEFAULT

DEFAULT_ORDER = 100
BASELINE_ORDER = 0


@dataclass(frozen=True, slots=True)
class LinkPolicy:
    """An operator's word on a set of ports: globs on node, device and port number."""

    name: str
    node: str = "*"
    device: str = "*"
    port: str = "*"
    speed: str | None = None  # `HDR`; None: learn it
    lanes: int | None = None  # 4; None: learn it
    expect_up: bool = True
    order: int = DEFAULT_ORDER
    # How a PCIe switch uplink shared by cards and GPUs is reported for ports it matches:
    # "warning" or "info"; None: it does not say (the next policy that does, else info).
    pcie_shared: str | None = None

    @property
    def expected(self) -> Rate | None:
        """The whole link when the policy names both speed and width."""
        if self.speed in SPEED_RANK and self.lanes in WIDTHS:
            return make_rate(self.speed, self.lanes)
        return None

    def matches(self, node: str, device: str, port: int) -> bool:
        # Host names are case-insensitive; device names are lower case anyway.
        return (
            fnmatchcase(node.lower(), self.node.lower())
            and fnmatchcase(device.lower(), self.device.lower())
            and fnmatchcase(str(port), self.port)
        )

    @property
    def specificity(self) -> int:
        return sum(_literal_chars(p) for p in (self.node, self.device, self.port))


def _literal_chars(pattern: str) -> int:
    return sum(1 for c in pattern if c not in "*?[]!")


def policy_sort_key(policy: LinkPolicy) -> tuple[int, int, str]:
    return (policy.order, -policy.specificity, policy.name)


def match_policy(policies: Iterable[LinkPolicy], node: str, device: str, port: int) -> LinkPolicy | None:
    """The policy that applies to this port (see the module docstring for the order), or None."""
    for policy in sorted(policies, key=policy_sort_key):
        if policy.matches(node, device, port):
            return policy
    return None


def baseline_policy(node: str, device: str, port: int, link: Rate) -> LinkPolicy:
    """What "accept current link as baseline" stores: this port, exactly, at its current link."""
    return LinkPolicy(
        name=baseline_name(node, device, port),
        node=literal_glob(node),
        device=literal_glob(device),
        port=str(port),
        speed=link.speed,
        lanes=link.lanes,
        expect_up=True,
        order=BASELINE_ORDER,
    )


def baseline_name(node: str, device: str, port: int) -> str:
    return f"baseline {node} {device}/{port}"


def literal_glob(text: str) -> str:
    # A literal name must not act as a glob ("[" is legal in some names).
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def usable(link: Rate | None) -> Rate | None:
    """`link` when its speed and width are ones we can rank, else None."""
    if link is None or link.speed not in SPEED_RANK or link.lanes not in WIDTHS:
        return None
    return link


def remember_best(best: Rate | None, link: Rate | None, active: bool) -> Rate | None:
    """The port's best-ever link after this poll; only an ACTIVE port's link teaches anything."""
    if not active:
        return usable(best)
    return better_link(usable(best), usable(link))


@dataclass(frozen=True, slots=True)
class Majority:
    """The link most votes (one per node, HCA model and link) for one HCA model's ACTIVE ports are for."""

    hca_type: str
    link: Rate
    count: int  # votes for `link`: nodes with a port of this model at it
    total: int  # votes for any known link

    def counts(self, min_votes: int) -> bool:
        return self.total >= min_votes and self.count * 2 > self.total


def fabric_majority(votes: Iterable[tuple[str | None, Rate | None]]) -> dict[str, Majority]:
    """Per HCA model, the most common link among (hca_type, link) votes of ACTIVE InfiniBand ports.

    Leave RoCE ports out: they run at their Ethernet switch's speed (the rules
    ignore the majority for them anyway).

    Votes without a model or a full link are left out. A tie goes to the slower
    link: an expectation set too high cries wolf on every other port.
    """
    return counted_majority((hca_type, link, 1) for hca_type, link in votes)


def node_majority(ports: Iterable[tuple[str, str | None, Rate | None]]) -> dict[str, Majority]:
    """`fabric_majority` of (node, hca_type, link) ports, each node voting once per HCA model and link."""
    votes = {
        (node, hca_type, (link.speed, link.lanes)): (hca_type, link) for node, hca_type, link in ports if usable(link)
    }
    return fabric_majority(votes.values())


def counted_majority(groups: Iterable[tuple[str | None, Rate | None, int]]) -> dict[str, Majority]:
    """`fabric_majority` of (hca_type, link, number of votes) groups, as a GROUP BY query returns them."""
    by_model: dict[str, Counter[tuple[str, int]]] = defaultdict(Counter)
    for hca_type, link, count in groups:
        link = usable(link)
        if hca_type and link is not None and isinstance(count, int) and count > 0:
            by_model[hca_type][(link.speed, link.lanes)] += count
    result = {}
    for model, counts in by_model.items():
        (speed, lanes), count = max(counts.items(), key=lambda kv: (kv[1], -SPEED_RANK[kv[0][0]], -kv[0][1]))
        result[model] = Majority(model, make_rate(speed, lanes), count, sum(counts.values()))
    return result


@dataclass(frozen=True, slots=True)
class Expectation:
    """The link a port should run at and, in words, who said so."""

    link: Rate | None
    source: str  # "policy 'cn-hdr'", "learned from this port's history", ...
    origin: str  # "policy", "link" (both ends support), "history", "fabric", "history+fabric" or "none"
    policy: LinkPolicy | None = None

    @property
    def expect_up_by_policy(self) -> bool | None:
        return None if self.policy is None else self.policy.expect_up


HISTORY = "learned from this port's history"


def link_source(capability: Rate) -> str:
    return f"both ends support {capability.link_name}"


def fabric_source(majority: Majority) -> str:
    return (
        f"most {majority.hca_type} nodes in the fabric run {majority.link.link_name} "
        f"({majority.count} of {majority.total} node votes)"
    )


def expected_link(
    policy: LinkPolicy | None,
    best: Rate | None,
    majority: Majority | None,
    min_ports: int = DEFAULT.fabric_min_ports,  # votes, despite the threshold's name
    capability: Rate | None = None,
) -> Expectation:
    """The expectation for one port; see the module docstring for the rules."""
    if policy is not None and policy.expected is not None:
        return Expectation(policy.expected, f"policy {policy.name!r}", "policy", policy)
    capability = usable(capability)
    if capability is not None:
        learned = Expectation(capability, link_source(capability), "link", policy)
    else:
        learned = _learned(best, majority, min_ports, policy)
    if policy is None or learned.link is None:
        return learned
    # A policy that names only the speed or only the width overrides that part of what was learned.
    speed = policy.speed if policy.speed in SPEED_RANK else None
    lanes = policy.lanes if policy.lanes in WIDTHS else None
    if speed is None and lanes is None:
        return learned
    link = make_rate(speed or learned.link.speed, lanes or learned.link.lanes)
    pinned = speed or f"{lanes}X"
    return Expectation(link, f"policy {policy.name!r} ({pinned}), the rest {learned.source}", "policy", policy)


def _learned(best: Rate | None, majority: Majority | None, min_ports: int, policy: LinkPolicy | None) -> Expectation:
    best = usable(best)
    fabric = majority if majority is not None and majority.counts(min_ports) else None
    fabric_link = fabric.link if fabric is not None else None
    link = better_link(best, fabric_link)
    if link is None:
        return Expectation(None, "nothing known yet", "none", policy)
    if fabric is None or _same(link, best):
        return Expectation(link, HISTORY, "history", policy)
    if best is None or _same(link, fabric_link):
        return Expectation(link, fabric_source(fabric), "fabric", policy)
    return Expectation(link, f"{HISTORY} ({best.link_name}) and {fabric_source(fabric)}", "history+fabric", policy)


def _same(a: Rate | None, b: Rate | None) -> bool:
    return a is not None and b is not None and (a.speed, a.lanes) == (b.speed, b.lanes)
