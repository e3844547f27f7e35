"""The `recent` ring on each Port: the last hour of error-counter deltas, for the health rules.

Each entry is `[ts, interval, deltas]` (ts: end of the poll in epoch seconds; interval:
seconds it covers; deltas: counter file name -> delta), oldest first, and the last
entry is the poll just ingested, so rules that take "this poll" apart can skip the
entry whose ts is the poll's own (fabricweb.health.window does).

To keep the row small, `deltas` holds only counters that moved (non-zero) or whose
delta is unknown for a reason the rules must hear (None: capped, clock step); a counter
left out had a delta of 0, or the port does not report it at all (null or absent in
Port.counters: no PMA, an unreadable file), which the rules can tell from the row.
Clean polls before the last one are merged into one entry covering them all, so a
healthy port's ring is two short entries, yet the intervals still add up to the time
observed: rates and shares over a window stay exact.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from .columns import RING_COUNTERS

WINDOW_S = 3600.0
_RING = frozenset(RING_COUNTERS)


def kept_deltas(deltas: Mapping[str, int | None], unknown: Iterable[str] = ()) -> dict[str, int | None]:
    """What an entry keeps of a poll's deltas: the ring's counters that moved, and `unknown` ones as None."""
    kept: dict[str, int | None] = {c: None for c in unknown if c in _RING}
    kept.update((c, deltas[c]) for c in RING_COUNTERS if deltas.get(c))
    return kept


def push(ring: list, ts: float, interval: float, deltas: dict, window: float = WINDOW_S) -> list:
    """The ring with this poll appended, clean polls merged, and entries that ended before the window dropped."""
    out = [e for e in ring if e[0] > ts - window]
    if len(out) >= 2 and not out[-1][2] and not out[-2][2] and out[-1][1] > 0 and out[-2][1] > 0:
        run, last = out[-2], out[-1]
        out[-2:] = [[last[0], min(run[1] + last[1], window), {}]]
    out.append([ts, interval, deltas])
    return out
