"""Every fact derived from a port's row, stated once: in SQL (Q and Case expressions to filter and count
with) and in Python (for one port object). The dashboard, the JSON API, /metrics and the alerts' payload
take them from here; tests/test_portfacts.py fails when another module states one again.

- **up**: ACTIVE or ACTIVE_DEFER (collectors.facts.is_up, the state alone) and still reported by its
  node. Kept on the port row by the database (Port.up, a stored generated column built from UP_FLAG).
- **degraded**: up, and trained below its expected link in speed or in width, judged separately as
  collectors.link.judge_link does; unknown on either side is not degraded (Port.degraded, DEGRADED_FLAG).
- **has a link**: still reported, and ACTIVE, or physically LinkUp and not DOWN (INIT and ARMED have
  a trained link the subnet manager has not activated). A DOWN/Polling port has none, whatever its
  `rate` file says: the kernel prints `10 Gb/sec (4X SDR)` for a port with no link.
- **the link** (`Link`): as operators name it, `4X EDR` on InfiniBand, `100GbE` on an Ethernet (RoCE)
  port (which the kernel reports in InfiniBand terms, 4X EDR); its Gb/s and bytes/s capacity. None
  without a link.
- **should be up**: an operator's word (Port.expect_up: a link policy's expect_up, or the expected
  cabling naming the port, written by the health engine) else its history (Port.ever_up), as the
  health rules decide whether a port that is down is an outage.
- **status**, what an operator sees, one of `Status`, worst first: down (no link, and it should be up),
  no subnet manager (the link trained, the port stays INIT or ARMED), degraded, vanished (gone from
  its node's snapshots), unknown (its node stopped reporting, or its switch is no longer reached:
  what it last said is not its state now), up, not connected (no link, and nothing says it should
  have one: a port never cabled is not an outage).
- a cable's state from its two ends (LINK_STATES, `link_states`) for /api/v1/links and /fabric/.

Staleness enters here through `node_stale_q` (SQL) and `node_is_stale` (one node), from Node.stale
(health.staleness: polls the node was sent and missed), and nowhere else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
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

from collectors import facts, pcie
from collectors.facts import ARMED, DOWN, INIT, LINK_UP, UP_STATE_IDS
from collectors.link import SPEED_BY_NAME, SPEED_RANK, SPEEDS, WIDTHS, format_gbps, make_rate

if TYPE_CHECKING:
    from django.db.models import QuerySet

    from .models import Device, Node, Port

SWITCH = "switch"  # Node.Kind.SWITCH (models imports this module: no import of models here)
BYTES_PER_GBIT = 1e9 / 8


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
    rows). THE staleness input of every port fact: Node.stale, set by health.staleness once a node has
    missed the polls it was sent, cleared by its next stored snapshot. A switch is never stale (its
    sweeps say when it is no longer reached: `unreachable_q`)."""
    return ~Q(**{prefix + "kind": SWITCH}) & Q(**{prefix + "stale": True})


def node_is_stale(node: Node) -> bool:
    """`node_stale_q` for one node."""
    return node.kind != SWITCH and node.stale


def unreachable_q(prefix: str = "device__node__") -> Q:
    """Switches the fabric sweeps no longer reach (their ports keep what they last said)."""
    return Q(**{prefix + "fabric_node__missing_since__isnull": False})


def switch_unreachable(node: Node) -> bool:
    if node.kind != SWITCH:
        return False
    try:
        fabric_node = node.fabric_node
    except node.__class__.fabric_node.RelatedObjectDoesNotExist:
        return False
    return fabric_node.missing_since is not None


def unknown_q(prefix: str = "device__node__") -> Q:
    """Ports whose state is unknown now: their node is stale, or their switch is not reached."""
    return node_stale_q(prefix) | unreachable_q(prefix)


def node_unknown(node: Node) -> bool:
    """`unknown_q` for one node: every port of it is `Status.UNKNOWN`."""
    return node_is_stale(node) or switch_unreachable(node)


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


def _ethernet(link_layer: str | None) -> bool:
    return isinstance(link_layer, str) and link_layer.lower() == "ethernet"


def no_subnet_manager(port: Port) -> bool:
    return port.vanished_at is None and port.state_id in (INIT, ARMED) and not _ethernet(port.link_layer)


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


# --- the link as it is named ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Link:
    """A link as operators name it: `4X EDR` (`100GbE` on Ethernet), its total Gb/s, lanes and speed."""

    gbps: float | None
    lanes: int | None
    speed: str | None
    name: str | None

    @property
    def bytes_per_second(self) -> float | None:
        return None if self.gbps is None else self.gbps * BYTES_PER_GBIT

    def as_dict(self) -> dict:
        """The API's form: gbps, lanes, speed, name, bytes_per_second."""
        return {
            "gbps": self.gbps,
            "lanes": self.lanes,
            "speed": self.speed,
            "name": self.name,
            "bytes_per_second": self.bytes_per_second,
        }

    def describe(self) -> str | None:
        """`100 Gb/s (4X EDR)`, or None without a total."""
        if self.gbps is None:
            return None
        return f"{format_gbps(self.gbps)} Gb/s ({self.name})" if self.name else f"{format_gbps(self.gbps)} Gb/s"


def named_link(
    speed: str | None, lanes: int | None, gbps: float | None = None, link_layer: str | None = None
) -> Link | None:
    """A link given by its parts (an expected one, what both ends support, a sample's): None when nothing
    is known. Gb/s is derived when only speed and lanes are known."""
    if speed is None and lanes is None and gbps is None:
        return None
    known = speed in SPEED_BY_NAME and lanes in WIDTHS
    if gbps is None and known:
        gbps = make_rate(speed, lanes).gbps
    if _ethernet(link_layer):
        name = f"{format_gbps(gbps)}GbE" if gbps else None
    else:
        name = f"{lanes}X {speed}" if known else None
    return Link(gbps, lanes, speed, name)


def link(port: Port) -> Link | None:
    """The link the port has now, None when it has none (a DOWN/Polling port, a vanished one)."""
    if not has_link(port):
        return None
    return named_link(port.speed, port.lanes, port.rate_gbps, port.link_layer)


def sample_link(
    state_id: int | None, phys_state_id: int | None, speed: str | None, lanes: int | None, link_layer: str | None
) -> Link | None:
    """The link of one stored poll (a sample: no vanished time), None when the poll saw none."""
    if not (facts.is_up(state_id) or (phys_state_id == LINK_UP and state_id != DOWN)):
        return None
    return named_link(speed, lanes, None, link_layer)


def capacity_gbps(port: Port) -> float | None:
    found = link(port)
    return None if found is None else found.gbps


def capacity_bytes_per_second(port: Port) -> float | None:
    found = link(port)
    return None if found is None else found.bytes_per_second


def expected_link(port: Port) -> Link | None:
    return named_link(port.expected_speed, port.expected_lanes, None, port.link_layer)


# --- the HCA's PCIe link (a port's device) ------------------------------------------------------


def pcie_link(device: Device) -> dict | None:
    """The device's PCIe link as trained and as capable (`Gen4 x16`), usable Gb/s, trained low or not."""
    d = device
    if d.pci_address is None and d.pci_current_gts is None and d.pci_current_width is None:
        return None
    current, top = (d.pci_current_gts, d.pci_current_width), (d.pci_max_gts, d.pci_max_width)
    both_known = None not in current and None not in top
    return {
        "address": d.pci_address,
        "current_gts": d.pci_current_gts,
        "current_width": d.pci_current_width,
        "max_gts": d.pci_max_gts,
        "max_width": d.pci_max_width,
        "name": pcie.describe(*current) if None not in current else None,  # `Gen4 x16`
        "max_name": pcie.describe(*top) if None not in top else None,
        "usable_gbps": pcie.usable_gbps(*current),
        "trained_low": (current[0] < top[0] or current[1] < top[1]) if both_known else None,
        "numa_node": d.numa_node,
    }


# --- a cable's state, from its two ends ------------------------------------------------------------
#
# A link (fabricweb.fabric.models.Link) is a cable the fabric sweeps saw, with its two ends' inventory
# ports (`a`, `b`, when in the inventory); its state comes from their up and degraded flags above, so a
# link and its ends never disagree:
# - `down`: an end's port is down (the cable pulled, a switch without power, a port disabled);
# - `degraded`: both ends up, and an end trained below what it should run at;
# - `up`: both ends up at their expected link;
# - `unknown`: the last sweep did not see the link, yet both ends still name each other and no end is
#   down: the switch at one end does not answer management datagrams (mute), so nothing is known;
# - `gone`: the last sweep did not see it and an end now names another far end: recabled, history only.

LINK_STATES = ("down", "unknown", "degraded", "up", "gone")  # worst first
LINK_RANK = {state: i for i, state in enumerate(LINK_STATES)}
_LIVE = Q(gone_at__isnull=True)
_END_DOWN = Q(a__up=False) | Q(b__up=False)
_END_DEGRADED = Q(a__degraded=True) | Q(b__degraded=True)
# Both ends (those in the inventory) still name each other as their far end: the cable is still there.
_STILL_FACED = (Q(a__isnull=True) | Q(a__peer_label=F("b_label"))) & (Q(b__isnull=True) | Q(b__peer_label=F("a_label")))
LINK_STATE = Case(
    When(_LIVE & _END_DOWN, then=Value("down")),
    When(_LIVE & _END_DEGRADED, then=Value("degraded")),
    When(_LIVE, then=Value("up")),
    When(_STILL_FACED & _END_DOWN, then=Value("down")),
    When(_STILL_FACED, then=Value("unknown")),
    default=Value("gone"),
)


def link_states(links: QuerySet) -> QuerySet:
    """`links` with `state` (one of LINK_STATES) and `state_rank` (0 for down: worst first)."""
    ranked = Case(*(When(state=s, then=Value(i)) for s, i in LINK_RANK.items()), output_field=IntegerField())
    return links.annotate(state=LINK_STATE).annotate(state_rank=ranked)


def link_is_up(state: str) -> bool | None:
    """A link state's up: None when unknown."""
    return None if state == "unknown" else state in ("up", "degraded")
