"""Up and degraded read from the port row vs evaluated per row: what the stored columns save.

    eval "$(scripts/test-services start)"     # for --db postgres
    .venv/bin/python bench/bench_linkstate.py [--db sqlite|postgres] [--ports 20000] [--runs 15]

Port.up and Port.degraded are generated columns built from fabricweb/inventory/linkstate.py's
expressions. This times, in one process and alternately (so the load of a shared machine
falls on both alike), two reads as they were before (the same expressions as CASEs in the
SELECT, evaluated for every row) and as they are (the columns): the overview's port query
(fabricweb/dashboard/fabric.py) and the health scrape's port read (fabricweb/exporter/tables.py).
The fabric is bench_metrics.py's (8 ports a node, filled with bulk_create).
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

    from fabricweb.exporter import tables
    from fabricweb.inventory import linkstate
    from fabricweb.inventory.models import Port

    bench_metrics.fill(args.ports, bench_metrics.sample_port())
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE")

    def cases(ports):  # as linkstate.annotate was: the expressions evaluated in the SELECT
        return ports.annotate(api_up=linkstate.UP_FLAG, api_degraded=linkstate.DEGRADED_FLAG)

    def overview(annotate) -> list:
        return list(annotate(Port.objects.all()).order_by().values_list(*OVERVIEW))

    def health(annotate) -> list:
        kept, tables.annotate = tables.annotate, annotate
        try:
            return list(tables.ports(None, False))
        finally:
            tables.annotate = kept

    print(f"{args.db}, {args.ports} ports, {args.runs} runs each, alternately (load {os.getloadavg()[0]:.1f})")
    for name, read in (("overview port query", overview), ("health scrape port read", health)):
        assert sorted(read(cases)) == sorted(read(linkstate.annotate)), name  # the same answers
        times: dict[str, list[float]] = {"CASEs per row": [], "stored columns": []}
        for _ in range(args.runs):
            for label, annotate in (("CASEs per row", cases), ("stored columns", linkstate.annotate)):
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
