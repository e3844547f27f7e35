"""Up and degraded read from the port row vs evaluated per row: what the stored columns save.

    eval "$(scripts/test-services start)"     # for --db postgres
    .venv/bin/python bench/bench_linkstate.py [--db sqlite|postgres] [--ports 20000] [--runs 15]

Port.up and Port.degraded are generated columns built from fabricweb.inventory.portfacts'
expressions (UP_FLAG, DEGRADED_FLAG). This times, in one process and alternately (so the load of a
shared machine falls on both alike), the overview's port columns read as they were before (the same
expressions as CASEs in the SELECT, evaluated for every row) and as they are (the columns). The health
scrape (fabricweb/exporter/tables.py) reads the columns in the database's JSON of each port, and is
not timed here. The fabric is bench_metrics.py's (8 ports a node, filled with bulk_create).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
# The overview's columns (fabric.fabric_view).
OVERVIEW = (
    "pk", "device__node__name", "device__name", "number", "api_up", "api_degraded", "speed", "lanes",
    "device__hca_type", "link_layer",
)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="postgres")
    parser.add_argument("--ports", type=int, default=20000)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.db import connections
    from django.test.utils import get_runner

    if args.db == "postgres" and "postgres" not in settings.DATABASES:
        sys.exit('TEST_POSTGRES_URL is not set: run `eval "$(scripts/test-services start)"` first')
    runner = get_runner(settings)(verbosity=0)
    old = runner.setup_databases()
    try:
        if args.db == "postgres":
            connections["default"] = connections["postgres"]
        run(args)
    finally:
        runner.teardown_databases(old)


def run(args: argparse.Namespace) -> None:
    import bench_metrics
    from django.db import connection
    from django.db.models import F

    from fabricweb.inventory import portfacts
    from fabricweb.inventory.models import Port

    bench_metrics.fill(args.ports, bench_metrics.sample_port())
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")

    def cases(ports):  # the expressions evaluated in the SELECT
        return ports.annotate(api_up=portfacts.UP_FLAG, api_degraded=portfacts.DEGRADED_FLAG)

    def columns(ports):  # the stored columns
        return ports.annotate(api_up=F("up"), api_degraded=F("degraded"))

    def overview(annotate) -> list:
        return list(annotate(Port.objects.all()).order_by().values_list(*OVERVIEW))

    print(f"{args.db}, {args.ports} ports, {args.runs} runs each, alternately (load {os.getloadavg()[0]:.1f})")
    for name, read in (("overview port query", overview),):
        assert sorted(read(cases)) == sorted(read(columns)), name  # the same answers
        times: dict[str, list[float]] = {"CASEs per row": [], "stored columns": []}
        for _ in range(args.runs):
            for label, annotate in (("CASEs per row", cases), ("stored columns", columns)):
                started = time.perf_counter()
                read(annotate)
                times[label].append((time.perf_counter() - started) * 1000)
        print(
            f"  {name:24}"
            + "  ".join(
                f"{label}: median {statistics.median(t):4.0f} ms (min {min(t):4.0f}, max {max(t):4.0f})"
                for label, t in times.items()
            ),
            f"(load {os.getloadavg()[0]:.1f})",
            flush=True,
        )


if __name__ == "__main__":
    main()
