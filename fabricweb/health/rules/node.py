"""A whole node: one that sent no snapshot for polls (stale), and one whose clock is off (skew)."""

from __future__ import annotations

import math

from fabricweb.thresholds import DEFAULT, Thresholds

from .common import INFO, WARNING, Judgement, fmt_s, positive
from .findings import Finding, Kind, node_key


def judge_node(
    node: str,
    missed_polls: int,
    interval_s: float | None = None,
    t: Thresholds = DEFAULT,
    *,
    collector: bool = False,
    refused: str = "",
) -> Judgement:
    """A node (or, `collector`, a fabric collector) that has sent no snapshot for `missed_polls` polls; `refused`:
    why its snapshots are refused over its budget (Node.refused_reason), when they are: then it is not down."""
    if not isinstance(missed_polls, int) or missed_polls < t.stale_after_polls:
        return Judgement([], frozenset())
    ago = f" (~{fmt_s(missed_polls * interval_s)})" if positive(interval_s) else ""
    if collector:
        message = (
            f"{node}: no fabric sweep for {missed_polls} polls{ago}: the fabric collector or its host is down, "
            "and the switches are not being read"
        )
    elif refused:
        message = f"{node}: no snapshot stored for {missed_polls} polls{ago}: its snapshots are refused ({refused})"
    else:
        message = f"{node}: no snapshot for {missed_polls} polls{ago}: the node or its fabricweb worker is down"
    return Judgement(
        [Finding(Kind.STALE, WARNING, node_key(Kind.STALE, node), message, {"missed_polls": missed_polls})], frozenset()
    )


def judge_clock(node: str, skew_s: float, t: Thresholds = DEFAULT) -> list[Finding]:
    """A node whose snapshot is dated `skew_s` seconds after (negative: before) it arrived here.

    Ahead can only be the node's clock; behind is its clock or a backlog before ingest. In whole
    minutes, so a steady skew is one unchanging event, not an update every poll.
    """
    if not math.isfinite(skew_s) or abs(skew_s) < t.clock_skew_s:
        return []
    minutes = max(1, round(abs(skew_s) / 60))
    if skew_s > 0:
        message = f"{node}: clock ~{minutes} min ahead of this server's (snapshots dated after they arrive): check NTP"
    else:
        message = (
            f"{node}: snapshots arrive ~{minutes} min after they are read: "
            "the node's clock is behind (check NTP) or ingest is backlogged"
        )
    key = node_key(Kind.CLOCK_SKEW, node)
    return [Finding(Kind.CLOCK_SKEW, INFO, key, message, {"skew_minutes": minutes if skew_s > 0 else -minutes})]
