"""A port's up, degraded, has a link, no subnet manager and should be up, its node's staleness and its
Status: each in SQL (Q and Case expressions to filter and count with) and in Python (for one port
object), the two agreeing on every kind of port (tests/test_portfacts.py). The one definition of up
for a port row: no other module states it again.

Staleness enters here through `node_stale_q` (SQL) and `node_is_stale` (one node), from Node.stale
(health.records.staleness: polls the node was sent and missed), and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import TYPE_CHECKING

from django.db.models import (
    BooleanField,
    Case,
    CharField,
    ExpressionWrapper,
    F,
    IntegerField,
    Q,
    Value,
    When,
)
from django.db.models.lookups import IsNull, LessThan

from collectors import facts
from collectors.facts import ARMED, DOWN, INIT, LINK_UP, UP_STATE_IDS
from collectors.link import SPEED_RANK, SPEEDS

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from ..models import Node, Port

SWITCH = "switch"  # Node.Kind.SWITCH (models imports this package: no import of models here)
ADAPTER = "adapter"  # Node.Kind.ADAPTER
# The nodes the fabric collector names and links to a FabricNode (fabric/nodes.py): only they can be unreachable.
SWEPT_KINDS = (SWITCH, ADAPTER)


# --- the state an operator sees -----------------------------------------------------------


class Status(StrEnum):
    """What an operator sees of a port, in the order worst first (`rank`)."""

    DOWN = "down"
    NO_SM = "no_subnet_manager"
    DEGRADED = "degraded"
    VANISHED = "vanished"
    UNKNOWN = "unknown"
    UP = "up"
    NOT_CONNECTED = "not_connected"

    @property
    def words(self) -> str:
        return _WORDS[self]

    @property
    def rank(self) -> int:
        return _RANK[self]

    @property
    def is_problem(self) -> bool:
        """Down, no subnet manager, degraded or vanished: something to look at (unknown is the node's)."""
        return self in _PROBLEMS


_WORDS = {
    Status.DOWN: "down",
    Status.NO_SM: "no subnet manager",
    Status.DEGRADED: "degraded",
    Status.VANISHED: "vanished",
    Status.UNKNOWN: "unknown",
    Status.UP: "up",
    Status.NOT_CONNECTED: "not connected",
}
WORST_FIRST: tuple[Status, ...] = tuple(Status)
_RANK = {s: i for i, s in enumerate(WORST_FIRST)}
_PROBLEMS = frozenset({Status.DOWN, Status.NO_SM, Status.DEGRADED, Status.VANISHED})
STATUSES: tuple[str, ...] = tuple(s.value for s in WORST_FIRST)  # the API's and the filters' words
# The statuses of a port that is up (Port.up), at its expected link or below it; unknown says nothing.
UP_STATUSES: tuple[str, ...] = (Status.DEGRADED.value, Status.UP.value)


# --- SQL: up and degraded (stored on the port row), the link, should be up --------------------

PRESENT = Q(vanished_at__isnull=True)
# As migration inventory/0005 stored it: the generated columns are rebuilt if this expression changes shape.
UP = Q(state_id__in=sorted(UP_STATE_IDS), vanished_at__isnull=True)


def _rank(field: str) -> Case:
    # Speed names sort by the table's order, not alphabetically; an unknown name ranks as NULL.
    return Case(*(When(**{field: s.name}, then=Value(i)) for i, s in enumerate(SPEEDS)), output_field=IntegerField())


def _flag(condition: Q) -> Case:
    # CASE, not the bare condition: a NULL state must read as False, not as unknown.
    return Case(When(condition, then=Value(True)), default=Value(False), output_field=BooleanField())


_SPEED, _EXPECTED_SPEED = _rank("speed"), _rank("expected_speed")
DEGRADED = (
    UP
    & Q(IsNull(_SPEED, False), IsNull(_EXPECTED_SPEED, False))
    & Q(lanes__isnull=False, expected_lanes__isnull=False)
    & (Q(LessThan(_SPEED, _EXPECTED_SPEED)) | Q(lanes__lt=F("expected_lanes")))
)
UP_FLAG, DEGRADED_FLAG = _flag(UP), _flag(DEGRADED)

# `~Q(state_id=DOWN)` is true for a NULL state too (Django negates with IS NOT NULL): an unreadable state
# with a physical link up is a link.
HAS_LINK = PRESENT & (Q(state_id__in=sorted(UP_STATE_IDS)) | (Q(phys_state_id=LINK_UP) & ~Q(state_id=DOWN)))
ETHERNET = Q(link_layer__iexact="ethernet")
# The link trained and no subnet manager activated the port (ibstat: `State: Initializing`, `Physical
# state: LinkUp`, `SM lid: 0`). Not on Ethernet, which has no subnet manager. An ACTIVE port was made
# ACTIVE by a subnet manager (only one sets PortState to ACTIVE), so an ACTIVE port is never "no subnet
# manager" here, whatever its SM LID (RoCE ports show SM LID 0 while ACTIVE).
NO_SM = PRESENT & Q(state_id__in=[INIT, ARMED]) & ~ETHERNET
SHOULD_BE_UP = Q(expect_up=True) | Q(expect_up__isnull=True, ever_up=True)


def has_link_flag() -> ExpressionWrapper:
    """HAS_LINK as a boolean column (annotate, values_list)."""
    return ExpressionWrapper(HAS_LINK, output_field=BooleanField())


SHOULD_BE_UP_FLAG = ExpressionWrapper(SHOULD_BE_UP, output_field=BooleanField())


# --- staleness: the one way in ----------------------------------------------------------------


def node_stale_q(prefix: str = "device__node__") -> Q:
    """Nodes that stopped reporting, as a condition on the rows `prefix` leads to a Node from ("" for Node
    rows). THE staleness input of every port fact: Node.stale, set by health.records.staleness once a node has
    missed the polls it was sent, cleared by its next stored snapshot. A switch is never stale (its
    sweeps say when it is no longer reached: `unreachable_q`)."""
    return ~Q(**{prefix + "kind": SWITCH}) & Q(**{prefix + "stale": True})


def node_is_stale(node: Node) -> bool:
    """`node_stale_q` for one node."""
    return node.kind != SWITCH and node.stale


def unreachable_q(prefix: str = "device__node__") -> Q:
    """Nodes the fabric sweeps no longer reach, switches and agentless adapters (their ports keep what they last
    said)."""
    return Q(**{prefix + "fabric_node__missing_since__isnull": False})


def unreachable(node: Node) -> bool:
    """`unreachable_q` for one node: a switch or agentless adapter whose fabric node the sweeps lost (a host's row
    is never linked to one: no query for it)."""
    if node.kind not in SWEPT_KINDS:
        return False
    try:
        fabric_node = node.fabric_node
    except node.__class__.fabric_node.RelatedObjectDoesNotExist:
        return False
    return fabric_node.missing_since is not None


def unknown_q(prefix: str = "device__node__") -> Q:
    """Ports whose state is unknown now: their node is stale, or the sweeps no longer reach it."""
    return node_stale_q(prefix) | unreachable_q(prefix)


def node_unknown(node: Node) -> bool:
    """`unknown_q` for one node: every port of it is `Status.UNKNOWN`."""
    return node_is_stale(node) or unreachable(node)


# --- SQL: the status --------------------------------------------------------------------------


def status_case() -> Case:
    """A port's Status as SQL (its value), for annotate(status=...) and filtering and counting on it."""
    return Case(
        When(unknown_q(), then=Value(Status.UNKNOWN.value)),
        When(vanished_at__isnull=False, then=Value(Status.VANISHED.value)),
        When(NO_SM, then=Value(Status.NO_SM.value)),
        When(degraded=True, then=Value(Status.DEGRADED.value)),
        When(up=True, then=Value(Status.UP.value)),
        When(SHOULD_BE_UP, then=Value(Status.DOWN.value)),
        default=Value(Status.NOT_CONNECTED.value),
        output_field=CharField(),
    )


def annotate(ports: QuerySet[Port]) -> QuerySet[Port]:
    """`ports` with `status` (a Status value) to filter, count and show; `up` and `degraded` are columns."""
    return ports.annotate(status=status_case())


def filtered(ports: QuerySet[Port], status: str | None = None, degraded: bool | None = None) -> QuerySet[Port]:
    """The API's and the pages' port filters, on ports with `status` (`annotate`): `state=<status>`, and
    `degraded=true|false` (the status degraded, or any other: a stale node's degraded port is unknown)."""
    if status is not None:
        ports = ports.filter(status=status)
    if degraded is not None:
        is_degraded_now = Q(status=Status.DEGRADED.value)
        ports = ports.filter(is_degraded_now if degraded else ~is_degraded_now)
    return ports


def status_counts(ports: QuerySet[Port], by: str | None = None) -> dict:
    """How many of `ports` have each status, and `total`: {status: n} (all of them), or per value of `by`
    (a field, e.g. "device__node_id") {value: {status: n}}, in one grouped query."""
    from django.db.models import Count

    rows = annotate(ports.order_by())
    counts = {"total": Count("id"), **{s: Count("id", filter=Q(status=s)) for s in STATUSES}}
    if by is None:
        return rows.aggregate(**counts)
    return {row.pop(by): row for row in rows.values(by).annotate(**counts)}


def tally(statuses: Iterable[str]) -> dict[str, int]:
    """{total, and each status: how many} of statuses in hand (ports already loaded)."""
    out = dict.fromkeys(STATUSES, 0)
    total = 0
    for s in statuses:
        out[s] += 1
        total += 1
    return {"total": total, **out}


# --- Python: the same facts for one port --------------------------------------------------------


def is_up(port: Port) -> bool:
    """UP for one port (equal to Port.up as the database computes it)."""
    return facts.is_up(port.state_id) and port.vanished_at is None


def is_degraded(port: Port) -> bool:
    """DEGRADED for one port (equal to Port.degraded)."""
    if not is_up(port):
        return False
    speed, expected = SPEED_RANK.get(port.speed), SPEED_RANK.get(port.expected_speed)
    if speed is None or expected is None or port.lanes is None or port.expected_lanes is None:
        return False
    return speed < expected or port.lanes < port.expected_lanes


def has_link(port: Port) -> bool:
    if port.vanished_at is not None:
        return False
    return facts.is_up(port.state_id) or (port.phys_state_id == LINK_UP and port.state_id != DOWN)


def no_subnet_manager(port: Port) -> bool:
    return port.vanished_at is None and port.state_id in (INIT, ARMED) and not facts.is_ethernet(port.link_layer)


def should_be_up(port: Port) -> bool:
    return port.expect_up if port.expect_up is not None else port.ever_up


def status(port: Port, unknown: bool) -> Status:
    """The port's Status; `unknown`: its node is stale or its switch unreached (`node_unknown`)."""
    if unknown:
        return Status.UNKNOWN
    if port.vanished_at is not None:
        return Status.VANISHED
    if no_subnet_manager(port):
        return Status.NO_SM
    if is_degraded(port):
        return Status.DEGRADED
    if is_up(port):
        return Status.UP
    return Status.DOWN if should_be_up(port) else Status.NOT_CONNECTED


def status_now(port: Port) -> Status:
    """`status` of a port whose device and node are loaded."""
    return status(port, node_unknown(port.device.node))
