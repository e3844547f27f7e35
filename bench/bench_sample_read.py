"""Reading raw samples back: one port's API samples pages and charts, and the 5-minute rollup of them.

    eval "$(scripts/test-services start)"     # PostgreSQL on 127.0.0.1:15432
    .venv/bin/python bench/bench_sample_read.py [--nodes 10] [--polls 2160] [--db postgres]

Ingests --polls simulated polls (10 s apart: 2160 = 6 h) of --nodes nodes x 4 ports into a
fresh database migrated by the project (collectors.sim, seed 1), then times, median of 5
after one warm-up, on the middle node's first port:

- the API samples endpoint (Django's test client, logged in): the last hour (360 samples, the
  default page) and all 6 hours in one page (limit 2160);
- the port chart's series (dashboard/series.py port_series) for its 6 h range (raw samples)
  and, after the rollups are computed, its 24 h range (5-minute rollups);
- rollup(): all the 5-minute and hourly buckets of the 6 hours, once (it writes them), and a
  digest of the rollups' values (sums, maxima, counts), which must be the same on every tree.

Only the project's public entry points are called, so the same script measures an older tree.
"""

from __future__ import annotations

import hashlib
import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta

# bench_ingest puts the repository on sys.path: fabricweb is imported after it, in the functions.
from bench_ingest import T0, _drop_postgres_database, _setup_django, generate, snapshot_args

RUNS = 5


def timed(fn, runs: int = RUNS) -> float:
    fn()
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        times.append((time.perf_counter() - began) * 1000)
    return statistics.median(times)


def measure(args) -> None:
    rounds, what = generate(args)
    os.environ.update(ALLOWED_HOSTS="testserver", LOG_LEVEL="WARNING")  # Django's test client
    with tempfile.TemporaryDirectory(prefix="bench-db-") as scratch:
        label = _setup_django(args.db, scratch)
        from django.contrib.auth import get_user_model
        from django.db.models import Count, Max, Sum
        from django.test import Client

        from fabricweb.dashboard import series
        from fabricweb.inventory.models import Port
        from fabricweb.telemetry.history.rollup import rollup
        from fabricweb.telemetry.ingest import ingest_batch
        from fabricweb.telemetry.models import PortRollup
        from fabricweb.telemetry.storage.columns import DELTA_COLUMNS

        try:
            for snaps in rounds:
                for i in range(0, len(snaps), 100):
                    ingest_batch(snaps[i : i + 100])
            start = datetime.fromtimestamp(T0, UTC)
            end = start + timedelta(seconds=10 * args.polls)
            hosts = sorted({s["host"] for s in rounds[0]})
            port = (
                Port.objects.select_related("device__node")
                .filter(device__node__name=hosts[len(hosts) // 2])
                .order_by("device__name", "number")
                .first()
            )
            user, _ = get_user_model().objects.get_or_create(username="bench")
            client = Client()
            client.force_login(user)
            url = f"/api/v1/ports/{port.device.node.name}/{port.device.name}/{port.number}/samples"

            def api(since: datetime, limit: int) -> None:
                query = {"since": since.isoformat(), "until": end.isoformat(), "limit": limit}
                response = client.get(url, query, secure=True)
                assert response.status_code == 200, response.content[:300]
                got = len(response.json()["samples"])
                assert got >= min(limit, (end - since).total_seconds() / 10) - 1, got

            print(f"{what}; {label}")
            print(f"API samples, last hour (360)  : {timed(lambda: api(end - timedelta(hours=1), 360)):8.1f} ms")
            print(f"API samples, 6 h in one page  : {timed(lambda: api(start, 2160)):8.1f} ms")
            six = series.RANGES["6h"]
            print(f"chart 6h (raw samples)        : {timed(lambda: series.port_series(port, six, end)):8.1f} ms")
            began = time.perf_counter()
            written = rollup(now=end + timedelta(hours=1))
            print(f"rollup of the {args.polls} polls     : {(time.perf_counter() - began) * 1000:8.1f} ms ({written})")
            # The same on every tree: the rollups' values did not change with the layout.
            totals = PortRollup.objects.aggregate(
                rows=Count("id"),
                samples=Sum("samples"),
                fastest=Max("max_xmit_bps"),
                **{c: Sum(c) for c in DELTA_COLUMNS},
            )
            digest = hashlib.sha256(repr(sorted(totals.items())).encode()).hexdigest()[:16]
            print(f"rollup values digest          : {digest} ({totals['rows']} rows, {totals['samples']} samples)")
            day = series.RANGES["24h"]
            print(f"chart 24h (5-minute rollups)  : {timed(lambda: series.port_series(port, day, end)):8.1f} ms")
        finally:
            if args.db == "postgres":
                _drop_postgres_database()


def main() -> int:
    parser = snapshot_args(__doc__)
    parser.set_defaults(nodes=10, polls=2160, db="postgres")
    args = parser.parse_args()
    if args.db == "both":
        sys.exit("--db: sqlite or postgres")
    measure(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
