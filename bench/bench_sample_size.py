"""Bytes per raw port-sample on PostgreSQL, indexes included, and what a packed layout would take.

    eval "$(scripts/test-services start)"     # PostgreSQL on 127.0.0.1:15432
    .venv/bin/python bench/bench_sample_size.py [--nodes 100] [--polls 31] [--hcas 2] [--ports 2]

Ingests --polls simulated polls of --nodes nodes (collectors.sim, seed 1, 10 s apart) into a
fresh database migrated by the project, then sums pg_total_relation_size (heap, TOAST and
indexes) over every table of telemetry_portsample's partition tree (the table itself when it
is not partitioned: the same script measures an older tree) and divides by the samples.

It then builds, in the same database, a *candidate* layout from the very same samples (not
used by the project): one row per node and poll, its ports' samples packed in one bytea
(port id, interval in ms, link, flags, unknown-delta bitmap, then each known delta as a
varint), with a (node, ts) B-tree and a BRIN on ts, and measures it the same way.
"""

from __future__ import annotations

import sys
import tempfile
from collections import defaultdict

# bench_ingest puts the repository on sys.path: fabricweb is imported after it, in the functions.
from bench_ingest import _drop_postgres_database, _setup_django, generate, snapshot_args

SPEEDS = {None: 0, "SDR": 1, "DDR": 2, "QDR": 3, "FDR10": 4, "FDR": 5, "EDR": 6, "HDR": 7, "NDR": 8, "XDR": 9}


def varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def pack_port(row: tuple) -> bytes:
    port_id, interval_s, state, phys, speed, lanes, reset, capped, *deltas = row
    unknown = sum(1 << i for i, d in enumerate(deltas) if d is None)
    flags = reset | capped << 1 | (interval_s is None) << 2
    link = (state or 0) | (phys or 0) << 3 | SPEEDS.get(speed, 15) << 6 | (lanes or 0) << 10
    head = varint(port_id) + varint(max(0, round((interval_s or 0) * 1000))) + link.to_bytes(2, "little")
    return head + bytes([flags]) + unknown.to_bytes(3, "little") + b"".join(varint(d) for d in deltas if d is not None)


def total_bytes(cursor, table: str) -> tuple[int, int]:
    """(all bytes, heap bytes) over the partition tree of `table`."""
    cursor.execute(
        "SELECT sum(pg_total_relation_size(relid)), sum(pg_relation_size(relid)) FROM pg_partition_tree(%s)", [table]
    )
    total, heap = cursor.fetchone()
    if total is None:  # not partitioned: no tree
        cursor.execute("SELECT pg_total_relation_size(%s), pg_relation_size(%s)", [table, table])
        total, heap = cursor.fetchone()
    return total, heap


def measure(args) -> None:
    rounds, what = generate(args)
    with tempfile.TemporaryDirectory(prefix="bench-db-") as scratch:
        label = _setup_django("postgres", scratch)
        from django.db import connection

        from fabricweb.telemetry.ingest import ingest_batch

        try:
            for snaps in rounds:
                for i in range(0, len(snaps), 100):
                    ingest_batch(snaps[i : i + 100])
            with connection.cursor() as cursor:
                cursor.execute("VACUUM ANALYZE")
                cursor.execute("SELECT count(*) FROM telemetry_portsample")
                samples = cursor.fetchone()[0]
                total, heap = total_bytes(cursor, "telemetry_portsample")
                print(f"{what}; {label}")
                print(
                    f"project layout : {samples} samples, {total / samples:6.1f} B per sample "
                    f"(heap {heap / samples:.1f}, indexes {(total - heap) / samples:.1f}); "
                    f"goal 100 B: {total / samples / 100:.2f}x"
                )
                packed_candidate(cursor, samples)
        finally:
            _drop_postgres_database()


def packed_candidate(cursor, samples: int) -> None:
    from fabricweb.telemetry.columns import DELTA_COLUMNS

    names = ["port_id", "interval_s", "state_id", "phys_state_id", "speed", "lanes", "reset", "capped", *DELTA_COLUMNS]
    cursor.execute(
        f"SELECT d.node_id, s.ts, {', '.join('s.' + n for n in names)} FROM telemetry_portsample s "
        "JOIN inventory_port p ON p.id = s.port_id JOIN inventory_device d ON d.id = p.device_id ORDER BY s.ts"
    )
    per_poll: dict[tuple, bytearray] = defaultdict(bytearray)
    for node_id, ts, *rest in cursor.fetchall():
        per_poll[(node_id, ts)] += pack_port(tuple(rest))
    cursor.execute("CREATE TABLE candidate_node_poll (node_id integer NOT NULL, ts timestamptz NOT NULL, ports bytea)")
    with cursor.copy("COPY candidate_node_poll (node_id, ts, ports) FROM STDIN") as copy:
        for (node_id, ts), packed in per_poll.items():
            copy.write_row((node_id, ts, bytes(packed)))
    cursor.execute("CREATE INDEX ON candidate_node_poll (node_id, ts)")
    cursor.execute("CREATE INDEX ON candidate_node_poll USING brin (ts)")
    cursor.execute("VACUUM ANALYZE candidate_node_poll")
    total, heap = total_bytes(cursor, "candidate_node_poll")
    print(
        f"packed candidate: {len(per_poll)} node-polls, {total / samples:6.1f} B per sample "
        f"(heap {heap / samples:.1f}, indexes {(total - heap) / samples:.1f}); goal 100 B: {total / samples / 100:.2f}x"
    )


def main() -> int:
    parser = snapshot_args(__doc__)
    parser.set_defaults(nodes=100, polls=31)
    args = parser.parse_args()
    measure(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
