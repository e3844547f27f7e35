"""What ingest judges ports against: thresholds, operator link policies, the fabric majority (one vote per
node, HCA model and link: `load_majorities`) and the ports the expected cabling names.

Policies, the majority and the expected cabling are read from the database at most every REFRESH_S seconds
(or one poll interval, when that is longer; measured on ingest's clock) per process,
not once per snapshot: a GROUP BY over every ACTIVE port of the fabric for each
node's snapshot would cost more than judging the snapshot. Both change slowly; the
price is that a new or edited policy, or a shift of the majority, reaches an ingest
worker up to REFRESH_S later. `forget()` drops the cache: saving or deleting a
LinkPolicy does it in the process that saved it (HealthConfig.ready).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from django.conf import settings
from django.db import connection
from django.db.models import Count

from collectors.facts import SWITCH_DEVICE
from collectors.link import Rate, make_rate
from fabricweb.inventory import portfacts
from fabricweb.inventory.models import Port
from fabricweb.thresholds import Thresholds

from .. import models
from ..rules.expectation import LinkPolicy, Majority, counted_majority, policy_sort_key, usable

REFRESH_S = 30.0


def thresholds() -> Thresholds:
    """FABRIC_THRESHOLDS over the defaults (checked at start-up by settings)."""
    return _thresholds(tuple(sorted(settings.FABRIC_THRESHOLDS.items())))


@lru_cache(maxsize=8)
def _thresholds(items: tuple) -> Thresholds:
    return Thresholds.from_mapping(dict(items))


def resolve_after() -> int:
    return int(settings.FABRIC_RESOLVE_AFTER)


@lru_cache(maxsize=256)
def rate(speed: str | None, lanes: int | None) -> Rate | None:
    """The link `lanes`X `speed`, or None when either is unknown or not an InfiniBand value."""
    if not speed or not lanes:
        return None
    try:
        return usable(make_rate(speed, lanes))
    except KeyError:
        return None


def as_policy(row: models.LinkPolicy) -> LinkPolicy:
    return LinkPolicy(
        name=row.name,
        node=row.node_glob,
        device=row.device_glob,
        port=row.port_glob,
        speed=row.speed or None,
        lanes=row.lanes,
        expect_up=row.expect_up,
        order=row.order,
        pcie_shared=row.pcie_shared or None,
    )


def _literal(pattern: str) -> str | None:
    """The one name a glob matches when it has no wildcards (`[*]` escapes count as literal), else None."""
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if c == "[" and i + 2 < len(pattern) and pattern[i + 2] == "]" and pattern[i + 1] not in "!]":
            out.append(pattern[i + 1])
            i += 3
        elif c in "*?[":
            return None
        else:
            out.append(c)
            i += 1
    return "".join(out)


@dataclass(frozen=True, slots=True)
class Policies:
    """Enabled policies, matched as expectation.match_policy does, without trying every glob per port.

    An accepted baseline is one exact policy per port, so a site may hold thousands;
    exact ones are looked up by name, and only the globs are tried in order.
    """

    globs: tuple[LinkPolicy, ...] = ()  # in match order
    exact: dict[tuple[str, str, str], LinkPolicy] = field(default_factory=dict)
    shared: tuple[LinkPolicy, ...] = ()  # those that say how a shared PCIe uplink is reported, in match order

    @classmethod
    def of(cls, policies: list[LinkPolicy]) -> Policies:
        globs, exact = [], {}
        for p in sorted(policies, key=policy_sort_key):
            names = (_literal(p.node), _literal(p.device), _literal(p.port))
            if None in names:
                globs.append(p)
            else:
                exact.setdefault((names[0].lower(), names[1].lower(), names[2]), p)  # the first in order wins
        shared = tuple(p for p in sorted(policies, key=policy_sort_key) if p.pcie_shared)
        return cls(tuple(globs), exact, shared)

    def match(self, node: str, device: str, port: int) -> LinkPolicy | None:
        best = self.exact.get((node.lower(), device.lower(), str(port)))
        for p in self.globs:
            if best is not None and policy_sort_key(best) < policy_sort_key(p):
                break
            if p.matches(node, device, port):
                return p
        return best

    def pcie_shared(self, node: str, device: str, port: int) -> str | None:
        """What the first policy in match order that says anything on it says of a shared PCIe uplink above
        this port ("warning", "info"), else None. Apart from `match`: a baseline for the port's link says nothing
        on it and must not hide a site's word."""
        return next((p.pcie_shared for p in self.shared if p.matches(node, device, port)), None)

    def __len__(self) -> int:
        return len(self.globs) + len(self.exact)


def load_policies() -> Policies:
    return Policies.of([as_policy(row) for row in models.LinkPolicy.objects.filter(enabled=True)])


def load_majorities() -> dict[str, Majority]:
    """The fabric norm per HCA model: one GROUP BY over ACTIVE InfiniBand ports still present, of nodes whose
    state is known and not held out of the norm (telemetry.storage.normhold), counting nodes, not ports: (HCA
    model, speed, width) -> nodes with such a port. One vote per node, HCA model and link, however many ports it has."""
    groups = (
        Port.objects.filter(
            up=True,  # fabricweb.inventory.portfacts' up, kept on the row: vanished ports are not
            device__vanished_at__isnull=True,
            device__node__norm_hold_since__isnull=True,
            speed__isnull=False,
            lanes__isnull=False,
        )
        .exclude(link_layer__iexact="ethernet")  # RoCE runs at its switch's speed; NULL (unknown) stays in
        .exclude(portfacts.unknown_q())  # a stale node, an unreached switch: what they last said is not now
        .values_list("device__hca_type", "speed", "lanes")
        .annotate(n=Count("device__node", distinct=True))
        .order_by()  # no default ordering: it would join into the GROUP BY
    )
    return counted_majority((hca, rate(speed, lanes), n) for hca, speed, lanes, n in groups)


@dataclass(frozen=True, slots=True)
class Cabling:
    """The ports the expected cabling (manage.py import_topology) names, as (node, device, port): a host
    port by node and device name, a switch port by the switch's name or node GUID with device ""."""

    ends: frozenset[tuple[str, str, int]] = frozenset()

    def names(self, node: str, guid: str | None, device: str, port: int) -> bool:
        if not self.ends:
            return False
        if device == SWITCH_DEVICE:
            return (node, "", port) in self.ends or (guid is not None and (guid.lower(), "", port) in self.ends)
        return (node, device, port) in self.ends


@dataclass(slots=True)
class CablingSource:
    """Where the expected cabling's ends are read from: handed over by the fabric app as it starts
    (fabricweb.fabric.apps, ExpectedLink.ends), since the fabric app builds on health, not the other way.
    None (no fabric app): no port is named by an expected cable."""

    ends: Callable[[], Iterable[tuple[str, str, int]]] | None = None


CABLING = CablingSource()


def load_cabling() -> Cabling:
    if CABLING.ends is None:
        return Cabling()
    ends = {(node.lower() if node.startswith("0x") else node, device, port) for node, device, port in CABLING.ends()}
    return Cabling(frozenset(ends))


@dataclass(frozen=True, slots=True)
class Norms:
    thresholds: Thresholds
    resolve_after: int
    policies: Policies
    majorities: dict[str, Majority]
    cabling: Cabling = Cabling()


class _Cache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.forget()

    def forget(self) -> None:
        self.db: tuple | None = None
        self.at: datetime | None = None
        self.policies: Policies | None = None
        self.majorities: dict[str, Majority] = {}
        self.cabling = Cabling()

    def get(self, now: datetime) -> tuple[Policies, dict[str, Majority], Cabling]:
        db = (connection.vendor, str(connection.settings_dict.get("NAME")))
        ttl = max(REFRESH_S, float(settings.FABRIC_POLL_INTERVAL))
        with self.lock:
            fresh = (
                self.policies is not None
                and self.db == db
                and self.at is not None
                and 0 <= (now - self.at).total_seconds() < ttl
            )
            if not fresh:
                policies, majorities = load_policies(), load_majorities()
                # Unchanged, the same objects: the engine's memo of quiet ports compares them by identity first.
                if policies != self.policies or self.db != db:
                    self.policies = policies
                if majorities != self.majorities or self.db != db:
                    self.majorities = majorities
                self.cabling = load_cabling()
                self.db, self.at = db, now
            return self.policies, self.majorities, self.cabling


NORMS = _Cache()


def norms(now: datetime) -> Norms:
    policies, majorities, cabling = NORMS.get(now)
    return Norms(thresholds(), resolve_after(), policies, majorities, cabling)


def forget(*args, **kwargs) -> None:
    """Read policies, the fabric majority and the expected cabling afresh at the next batch (in this process); a
    signal receiver too."""
    NORMS.forget()
