"""Active series in a real Prometheus after scraping the bench fabric's default /metrics, against node_exporter's
infiniband collector for the same number of ports.

    .venv/bin/python bench/bench_series.py [--ports 20000] [--db sqlite|postgres]

Fills the tables as bench/bench_metrics.py does (8 ports a node, the counters and hw_counters of a simulated
ConnectX-6 port), serves them from a fresh gunicorn, and starts Debian's prometheus (admin API on, data in a
temporary directory) with two jobs: `fabricweb` (the default scrape, no `?set=`, as deploy/ runs it
without shards) and `node_exporter` (prometheus-node-exporter's infiniband collector alone, on the same
simulated host's sysfs tree). After --scrapes scrapes of each it prints the head's series from Prometheus's
own API (/api/v1/status/tsdb) and per job, then snapshots the head (POST /api/v1/admin/tsdb/snapshot) and
runs `promtool tsdb analyze` on the snapshot (its block is the head's series). node_exporter's figure is its
series per port on that tree times --ports: one node_exporter per host, as a site runs it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_metrics  # bench/ is not a package

from harness import free_port


def api(url: str, path: str, method: str = "GET", **params: str) -> dict:
    request = urllib.request.Request(f"{url}/api/v1/{path}?{urllib.parse.urlencode(params)}", method=method)
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())["data"]


def value(url: str, query: str) -> float:
    result = api(url, "query", query=query)["result"]
    return float(result[0]["value"][1]) if result else 0.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ports", type=int, default=20000)
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--scrapes", type=int, default=2, help="scrapes of each job before counting")
    args = parser.parse_args()
    for tool in ("prometheus", "promtool", "prometheus-node-exporter"):
        if not shutil.which(tool):
            sys.exit(f"{tool} is not installed (scripts/system-packages installs Debian's)")

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from django.conf import settings
    from django.test.utils import get_runner

    from collectors.sim import Fabric

    work = Path(tempfile.mkdtemp(prefix="bench-series-"))
    settings.DATABASES["default"]["TEST"]["NAME"] = str(work / "bench.sqlite3")
    runner = get_runner(settings)(verbosity=0)
    old = runner.setup_databases()
    processes: list = []
    try:
        database = bench_metrics.use_database(args.db)
        bench_metrics.fill(args.ports, bench_metrics.sample_port())
        bench_metrics.fresh()
        server = bench_metrics.Server(database)
        processes.append(server)
        Fabric.create(str(work / "sim"), 1).step(10.0)  # the host whose port bench_metrics copies
        ne_port = free_port()
        node_exporter = subprocess.Popen(
            ["prometheus-node-exporter", f"--path.sysfs={work / 'sim' / 'cn001'}", "--collector.disable-defaults",
             "--collector.infiniband", f"--web.listen-address=127.0.0.1:{ne_port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        processes.append(node_exporter)
        config = {
            "global": {"scrape_interval": "15s", "scrape_timeout": "14s"},
            "scrape_configs": [
                {"job_name": "fabricweb", "static_configs": [{"targets": [f"127.0.0.1:{server.port}"]}]},
                {"job_name": "node_exporter", "static_configs": [{"targets": [f"127.0.0.1:{ne_port}"]}]},
            ],
        }
        (work / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        url = f"http://127.0.0.1:{free_port()}"
        prometheus = subprocess.Popen(
            ["prometheus", f"--config.file={work / 'prometheus.yml'}", f"--storage.tsdb.path={work / 'data'}",
             f"--web.listen-address={url.removeprefix('http://')}", "--web.enable-admin-api", "--log.level=warn"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        processes.append(prometheus)
        deadline = time.monotonic() + 60 + 15 * args.scrapes * 2
        while True:  # each job scraped --scrapes times (a fabricweb scrape refreshes nothing: fresh() now and then)
            bench_metrics.fresh()
            try:
                done = min(
                    value(url, f'count_over_time(up{{job="{job}"}}[10m])') for job in ("fabricweb", "node_exporter")
                )
                if done >= args.scrapes and value(url, 'min(up{job=~"fabricweb|node_exporter"})') == 1:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                sys.exit("Prometheus did not scrape both jobs in time")
            time.sleep(2)
        head = api(url, "status/tsdb")["headStats"]
        ours = value(url, 'count({job="fabricweb"})')
        ne_series = value(url, 'count({job="node_exporter", __name__=~"node_infiniband_.*"})')
        ne_ports = value(url, "count(node_infiniband_state_id)")
        ne_bytes = value(url, 'scrape_samples_scraped{job="node_exporter"}')
        print(f"load average {'/'.join(f'{x:.2f}' for x in os.getloadavg())}; {args.ports} host ports, {args.db}")
        print(
            f"Prometheus head: {head['numSeries']} series ({head['chunkCount']} chunks), both jobs with up and scrape_*"
        )
        print(f"fabricweb default scrape: {ours:.0f} series, {ours / args.ports:.1f} per host port")
        print(
            f"node_exporter (infiniband collector, one simulated host of {ne_ports:.0f} ports): {ne_series:.0f} "
            f"series, {ne_series / ne_ports:.1f} per port -> {ne_series / ne_ports * args.ports:.0f} at {args.ports} "
            f"ports ({ne_bytes:.0f} samples a scrape)"
        )
        snapshot = api(url, "admin/tsdb/snapshot", method="POST")["name"]
        analyzed = subprocess.run(["promtool", "tsdb", "analyze", str(work / "data" / "snapshots" / snapshot)],
                                  capture_output=True, text=True)  # fmt: skip
        print("promtool tsdb analyze (the head's snapshot):")
        print("\n".join("  " + line for line in analyzed.stdout.splitlines()[:12]) or analyzed.stderr)
    finally:
        for process in reversed(processes):
            if isinstance(process, bench_metrics.Server):
                process.stop()
            else:
                process.terminate()
                process.wait(30)
        runner.teardown_databases(old)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
