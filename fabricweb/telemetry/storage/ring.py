"""The `recent` ring on each Port: the last hour of error-counter deltas, for the health rules.

Each entry is `[ts, interval, deltas]` (ts: end of the poll in epoch seconds; interval:
seconds it covers; deltas: counter file name -> delta), in time order; the poll just
ingested is the last entry (unless the node's clock stepped back), and rules that take
"this poll" apart skip the entry whose ts is the poll's own (fabricweb.health.rules.window does).

To keep the row small, `deltas` holds only counters that moved (non-zero) or whose
delta is unknown for a reason the rules must hear (None: capped, clock step); a counter
left out had a delta of 0, or the port does not report it at all (null or absent in
Port.counters: no PMA, an unreadable file), which the rules can tell from the row.
Clean polls before the last one are merged into one entry covering them all, so a
healthy port's ring is two short entries, yet the intervals still add up to the time
observed: rates and shares over a window stay exact.

On a busy port port_xmit_wait moves at every poll, so no poll is clean and the ring would
keep one entry per poll (~360 an hour, 15-20 kB of JSON rewritten at every poll). Polls
older than FINE_S in which nothing but port_xmit_wait moved ("quiet": no error counter, no
unknown) are therefore merged into entries of up to COARSE_S seconds, their waits summed.
The last FINE_S (longer than the 1- and 5-minute windows the rules read) stay one entry per
poll, and errors and unknowns are never merged: only the hour window's oldest, partly
covered entry of port_xmit_wait is shared out over a minute instead of one poll.

A ring in time order is held as columns (inventory/ringcolumns.py's Ring); push keeps it so with
the same steps on the columns (`_push_columns`). Any other ring stays a list.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Mapping
from operator import itemgetter

from collectors.facts import XMIT_WAIT
from fabricweb.inventory.ringcolumns import WAIT_MAX, Ring, plain

from .columns import RING_COUNTERS

WINDOW_S = 3600.0
FINE_S = 600.0  # polls this recent stay whole
COARSE_S = 60.0  # longest merged entry of quiet polls
_RING = frozenset(RING_COUNTERS)
_TS = itemgetter(0)


def kept_deltas(deltas: Mapping[str, int | None], unknown: Iterable[str] = ()) -> dict[str, int | None]:
    """What an entry keeps of a poll's deltas: the ring's counters that moved, and `unknown` ones as None."""
    moved = {c: value for c in RING_COUNTERS if (value := deltas.get(c))}
    if not unknown:
        return moved
    kept: dict[str, int | None] = {c: None for c in unknown if c in _RING}
    kept.update(moved)
    return kept


def push(ring: list | Ring, ts: float, interval: float, deltas: dict, window: float = WINDOW_S) -> list | Ring:
    """The ring with this poll appended, clean polls merged, and entries that ended before the window dropped.

    The ring is kept in time order, so each entry is coarsened once, at the first poll that
    finds it older than FINE_S, and a poll touches the ring's two ends only, not the ~110
    entries a busy port holds after an hour. A poll dated before the ring's last entry (the
    node's clock stepped back) goes through the whole ring and sorts it again.
    """
    if type(ring) is Ring and ring.times and type(ts) is float and ts > ring.times[-1] and plain(interval, deltas):
        return _push_columns(ring, ts, interval, deltas, window)
    if not ring or ts <= ring[-1][0]:
        return _held(_push_anywhen(ring, ts, interval, deltas, window))
    first = bisect_right(ring, ts - window, key=_TS)
    out = ring[first:]
    _merge_clean_tail(out, window)
    before, newly = ts - FINE_S, ring[-1][0] - FINE_S  # entries up to `newly` were coarsened before
    out.append([ts, interval, deltas])
    end = bisect_right(out, before, key=_TS)
    start = bisect_right(out, newly, 0, end, key=_TS)
    if start < end:
        # From the last entry coarsened before (it may take in the first of these) to the last one old enough.
        head = max(start - 1, 0)
        out[head:end] = _coarsen(out[head:end], before)
    return _held(out)


def _held(ring: list) -> Ring | list:
    """The ring as a Ring when it can be one (a list only while it holds an odd entry: a clock step's, a
    hand-edited row's)."""
    return Ring.of(ring) or ring


def _push_anywhen(ring: list, ts: float, interval: float, deltas: dict, window: float) -> list:
    out = [e for e in ring if e[0] > ts - window]
    _merge_clean_tail(out, window)
    out.append([ts, interval, deltas])
    out = _coarsen(out, ts - FINE_S)
    out.sort(key=_TS)  # (stable: entries of one time keep their order)
    return out


def _merge_clean_tail(ring: list, window: float) -> None:
    """Merge the last two entries when both are clean polls (no counter moved)."""
    if len(ring) >= 2 and not ring[-1][2] and not ring[-2][2] and ring[-1][1] > 0 and ring[-2][1] > 0:
        run, last = ring[-2], ring[-1]
        ring[-2:] = [[last[0], min(run[1] + last[1], window), {}]]


def _quiet(entry: list) -> bool:
    """A poll in which no counter but port_xmit_wait moved and none was unknown, over a known interval."""
    deltas, interval = entry[2], entry[1]
    if not (type(interval) in (int, float) and 0 < interval <= COARSE_S):
        return False
    return not deltas or (len(deltas) == 1 and type(deltas.get(XMIT_WAIT)) is int and 0 < deltas[XMIT_WAIT] <= WAIT_MAX)


def _coarsen(ring: list, before: float) -> list:
    """Merge consecutive quiet entries that ended by `before` into entries of at most COARSE_S seconds."""
    if len(ring) < 2 or not ring[1][0] <= before:
        return ring
    out = [ring[0]]
    for entry in ring[1:]:
        last = out[-1]
        if (
            entry[0] <= before
            and _quiet(entry)
            and _quiet(last)
            and last[1] + entry[1] <= COARSE_S
            and (last[2] or entry[2])  # runs of clean polls are merged by push already
            and (wait := last[2].get(XMIT_WAIT, 0) + entry[2].get(XMIT_WAIT, 0)) <= WAIT_MAX
        ):
            out[-1] = [entry[0], last[1] + entry[1], {XMIT_WAIT: wait} if wait else {}]
        else:
            out.append(entry)
    return out


def _push_columns(ring: Ring, ts: float, interval: float, deltas: dict, window: float) -> Ring:
    """push() of a poll after a Ring's last entry: the same steps on its columns, into a new Ring (copying
    the columns costs less than a list of ~110 entries did; the one given is left as it was)."""
    newly, oldest = ring.times[-1] - FINE_S, ts - window
    first = 0 if ring.times[0] > oldest else bisect_right(ring.times, oldest)
    out = Ring.__new__(Ring)  # (its columns are these copies)
    times, intervals, waits = out.times, out.intervals, out.waits = (
        ring.times[first:],
        ring.intervals[first:],
        ring.waits[first:],
    )
    out.others = ({t: moved for t, moved in ring.others.items() if t > oldest} or None) if ring.others else None
    if len(times) >= 2 and not waits[-1] and not waits[-2] and intervals[-1] > 0 and intervals[-2] > 0:
        times[-2], intervals[-2] = times[-1], min(intervals[-2] + intervals[-1], window)  # _merge_clean_tail
        del times[-1], intervals[-1], waits[-1]
    out.add(ts, interval, deltas)
    before = ts - FINE_S
    end = bisect_right(times, before)
    start = bisect_right(times, newly, 0, end)
    if start < end:
        _coarsen_columns(out, max(start - 1, 0), end)
    return out


def _coarsen_columns(ring: Ring, head: int, end: int) -> None:
    """_coarsen of a Ring's entries head..end-1 (all ended by its `before`), in place."""
    times, intervals, waits = ring.times, ring.intervals, ring.waits
    at = head  # the last entry kept
    for k in range(head + 1, end):
        interval, wait, last_interval, last_wait = intervals[k], waits[k], intervals[at], waits[at]
        if (
            wait >= 0  # both _quiet: not OTHER, over a known interval up to COARSE_S
            and 0 < interval <= COARSE_S
            and last_wait >= 0
            and 0 < last_interval <= COARSE_S
            and last_interval + interval <= COARSE_S
            and (last_wait or wait)
            and last_wait + wait <= WAIT_MAX
        ):
            times[at], intervals[at], waits[at] = times[k], last_interval + interval, last_wait + wait
        else:
            at += 1
            times[at], intervals[at], waits[at] = times[k], interval, wait
    if at + 1 < end:
        del times[at + 1 : end], intervals[at + 1 : end], waits[at + 1 : end]
