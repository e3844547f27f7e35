"""Bring ports' state_polls and `recent` rings from their node's history checkpoint up to its last poll.

A node's history (state_polls, the ring) is written every readings.CHECKPOINT_S of its polls,
not at every one (a busy port's ring is ~5 kB of JSON). What each later poll did to them
follows from that poll's packed sample alone: its state (same as before: one more poll in
it; else the first), its interval and the deltas of the ring's counters. Ingest writes a
checkpoint whenever a poll's effect needs more than its sample, so that every poll replayed
here is one of those: a port's first poll or one after its readings were lost (no interval),
a capped counter (the ring keeps which ones as unknown; the sample does not say), the
node's clock going back (samples would not come back in the order they were applied).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from ..models import NodePoll
from . import ring
from .columns import DELTA_COUNTERS
from .packing import unpack

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
US = timedelta(microseconds=1)
_CHUNK = 2000  # node-poll rows fetched per query


def catch_up(by_port: dict[int, list], states: dict[int, list], checkpoints: dict[int, list]) -> None:
    """Replay the samples written after each node's checkpoint onto its ports' readings, in place.

    by_port: port id -> readings.FIELDS values (state_polls at 1, recent at 5); states: port id ->
    [state_id, phys_state_id] at the checkpoint; checkpoints: node id -> [checkpoint's latest poll,
    latest poll replayed] in epoch seconds (None: the history is current), the second updated here.
    """
    since = {node: at for node, (at, _) in checkpoints.items() if at is not None}
    if not since:
        return
    rows = (
        NodePoll.objects.filter(node_id__in=list(since), ts__gt=EPOCH + round(min(since.values()) * 1e6) * US)
        .order_by("node_id", "ts")
        .values_list("node_id", "ts", "ports")
    )
    for node_id, ts, packed in rows.iterator(chunk_size=_CHUNK):
        poll_ts = ts.timestamp()
        if poll_ts <= since[node_id]:
            continue
        newer = False
        for port_id, head, deltas in unpack(bytes(packed)):
            values, state = by_port.get(port_id), states.get(port_id)
            if values is None or state is None:  # not in the checkpoint: its first poll wrote a new one
                continue
            if values[0] is None or ts > values[0]:
                # Committed after the counters read with the checkpoint (readers take no lock): the
                # readings stay those of one poll, the one their counters are of.
                newer = True
                continue
            interval, state_id, phys_state_id = head[0], head[1], head[2]
            values[1] = values[1] + 1 if [state_id, phys_state_id] == state else 1
            state[:] = [state_id, phys_state_id]
            if interval is not None:
                named = dict(zip(DELTA_COUNTERS, deltas, strict=True))
                unknown = named if interval <= 0 else ()  # as ingest keeps a clock step: every counter unknown
                values[5] = ring.push(values[5], poll_ts, interval, ring.kept_deltas(named, unknown))
        if not newer:
            checkpoints[node_id][1] = poll_ts
