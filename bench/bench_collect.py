"""Collect one node's tree: our in-process reader against node_exporter's infiniband collector.

    .venv/bin/python bench/bench_collect.py [--iterations 3000] [--scrapes 500] [--profile]

The tree is one node of 2 HCAs x 2 ports with hw_counters, built in a temp dir from the
real procfs fixture (mlx5_0 port 1's files copied to mlx5_0 ports 1,2 and mlx5_1 ports
1,2). Ours: read_host(root, use_verbs=False), and separately read_host + to_dict +
json.dumps (what a node worker does per poll), timed in-process after a warm-up; and read_host
as the agent polls (its devices kept between polls, collectors/keptdevices.py), with their files held
open (collectors/heldfiles.py) and, alternated in halves in the same process, opened at each poll.
node_exporter: one long-running process on the same tree (only the infiniband collector),
scraped over loopback; each scrape reports the collector's own time in
node_scrape_collector_duration_seconds{collector="infiniband"}, which excludes HTTP and
text encoding, as our timing excludes sending the snapshot.

node_exporter 1.5.0 reads neither hw_counters nor link_layer, so the same is measured
again on the tree without hw_counters: nearly the same files for both readers.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import platform
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from collectors import heldfiles, read_host, to_dict  # noqa: E402
from collectors.keptdevices import KeptDevices  # noqa: E402
from harness import free_port, listens, wait_for  # noqa: E402


def fixtures() -> Path:
    return REPO / "tests" / "fixtures"  # the real sysfs trees the tests read


def build_tree(dest: Path, hw_counters: bool = True) -> tuple[Path, int]:
    """One node: mlx5_0 and mlx5_1, ports 1 and 2, all from procfs' mlx5_0. Returns (root, files read)."""
    src = fixtures() / "procfs" / "sys" / "class" / "infiniband" / "mlx5_0"
    root = dest / "sys"
    for dev in ("mlx5_0", "mlx5_1"):
        d = root / "class" / "infiniband" / dev
        d.mkdir(parents=True)
        for f in src.iterdir():
            if f.is_file():
                shutil.copyfile(f, d / f.name)
        for port in ("1", "2"):
            shutil.copytree(src / "ports" / "1", d / "ports" / port, copy_function=shutil.copyfile)
            if not hw_counters:
                shutil.rmtree(d / "ports" / port / "hw_counters")
    for dirpath, _, _ in os.walk(root):  # copytree keeps the fixture's read-only mode
        os.chmod(dirpath, 0o755)
    # Every file but hw_counters/lifespan (a cache setting, not read) is read once per poll.
    files = sum(1 for p in root.rglob("*") if p.is_file() and p.name != "lifespan")
    return root, files


def summary(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {"min": s[0], "median": statistics.median(s), "p90": s[int(0.9 * (len(s) - 1))], "max": s[-1], "n": len(s)}


def time_ours(root: Path, iterations: int, serialise: bool, kept: KeptDevices | None = None) -> dict[str, float]:
    """`kept`: read as the agent polls, its devices kept between reads (collectors/keptdevices.py) and their files
    held open (collectors/heldfiles.py, as many as heldfiles.HELD_LIMIT lets it)."""
    r = str(root)

    def once() -> None:
        snap = read_host(r, host="bench", use_verbs=False, kept=kept)
        if serialise:
            json.dumps(to_dict(snap))

    for _ in range(min(200, iterations)):  # warm the page cache and the interpreter
        once()
    samples = []
    clock = time.perf_counter
    for _ in range(iterations):
        t = clock()
        once()
        samples.append(clock() - t)
    return summary(samples)


def node_exporter_binary() -> str | None:
    return shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")


def node_exporter_version(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=False)
    return (out.stdout or out.stderr).splitlines()[0].strip()


def time_node_exporter(binary: str, root: Path, scrapes: int) -> dict[str, float]:
    port = free_port()
    proc = subprocess.Popen(
        [
            binary,
            f"--path.sysfs={root}",
            "--collector.disable-defaults",
            "--collector.infiniband",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for("node_exporter listening", lambda: listens(port), 10, 0.02, watch=[proc])
        url = f"http://127.0.0.1:{port}/metrics"
        key = 'node_scrape_collector_duration_seconds{collector="infiniband"} '
        samples = []
        series = 0
        for i in range(scrapes + 20):
            with urllib.request.urlopen(url, timeout=10) as resp:
                body = resp.read().decode()
            if 'node_scrape_collector_success{collector="infiniband"} 1' not in body:
                raise SystemExit("node_exporter's infiniband collector failed on the bench tree")
            if i < 20:  # warm-up, as for ours
                continue
            line = next(x for x in body.splitlines() if x.startswith(key))
            samples.append(float(line[len(key) :]))
            series = sum(1 for x in body.splitlines() if x.startswith("node_infiniband_"))
        out = summary(samples)
        out["series"] = series
        return out
    finally:
        proc.kill()
        proc.wait()


def profile(root: Path, n: int = 2000) -> None:
    r = str(root)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(n):
        read_host(r, host="bench", use_verbs=False)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(15)


def us(seconds: float) -> str:
    return f"{seconds * 1e6:,.0f} µs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=3000, help="timed reads of ours per tree (default 3000)")
    ap.add_argument("--scrapes", type=int, default=500, help="timed scrapes of node_exporter per tree (default 500)")
    ap.add_argument("--profile", action="store_true", help="print a cProfile of read_host and exit")
    args = ap.parse_args()

    binary = node_exporter_binary()
    print(f"machine: {os.cpu_count()} CPUs, {platform.machine()}, {platform.system()} {platform.release()}")
    print(f"python: {platform.python_version()}")
    print(f"node_exporter: {node_exporter_version(binary) if binary else 'not installed'}")
    for hw in (True, False):
        with tempfile.TemporaryDirectory(prefix="bench-collect-") as tmp:
            root, files = build_tree(Path(tmp), hw_counters=hw)
            if args.profile:
                profile(root)
                return 0
            snap = read_host(str(root), host="bench", use_verbs=False)
            ports = sum(len(d.ports) for d in snap.devices)
            assert not snap.errors and ports == 4, "the bench tree must read clean"

            read = time_ours(root, args.iterations, serialise=False)
            full = time_ours(root, args.iterations, serialise=True)
            # The agent's polls: its devices kept, with their files held open, then opened at each poll (none held:
            # as before heldfiles.py), alternated in halves so that both see the same machine.
            polls: dict[str, list[dict]] = {"held": [], "opened": []}
            for _ in range(2):
                for way, limit in (("held", heldfiles.HELD_LIMIT), ("opened", 0)):
                    held_limit, heldfiles.HELD_LIMIT = heldfiles.HELD_LIMIT, limit
                    try:
                        polls[way].append(time_ours(root, args.iterations // 2, False, KeptDevices()))
                    finally:
                        heldfiles.HELD_LIMIT = held_limit
            kept = {way: _merged(halves) for way, halves in polls.items()}
            ne = time_node_exporter(binary, root, args.scrapes) if binary else None

            print()
            print(f"tree: 2 HCAs x 2 ports, {'with' if hw else 'without'} hw_counters; ours reads {files} files")
            print(f"  {'':38} {'median':>10} {'p90':>10}")
            print(f"  {'ours: read_host':38} {us(read['median']):>10} {us(read['p90']):>10}   ({read['n']} runs)")
            print(f"  {'ours: read_host + to_dict + json':38} {us(full['median']):>10} {us(full['p90']):>10}")
            print(f"  {'ours: per file (read_host)':38} {read['median'] / files * 1e6:>7.1f} µs")
            for way, words in (("held", "ours: agent's poll, files held"), ("opened", "ours: agent's poll, opened")):
                k = kept[way]
                print(
                    f"  {words:38} {us(k['median']):>10} {us(k['p90']):>10}   (min {us(k['min'])}, max {us(k['max'])})"
                )
            print(f"  {'  held / opened (medians)':38} {kept['held']['median'] / kept['opened']['median']:.2f}x")
            if ne:
                print(
                    f"  {'node_exporter: infiniband collector':38} {us(ne['median']):>10} {us(ne['p90']):>10}"
                    f"   ({ne['n']} scrapes, {ne['series']} series)"
                )
                print(
                    f"  ratio ours/node_exporter (medians): read_host {read['median'] / ne['median']:.2f}, "
                    f"read_host + to_dict + json {full['median'] / ne['median']:.2f}, "
                    f"the agent's poll {kept['held']['median'] / ne['median']:.2f} "
                    f"({kept['opened']['median'] / ne['median']:.2f} with its files opened each poll)"
                )
            print(f"  load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}; peak RSS {peak_rss_mb():.1f} MB")
    return 0


def _merged(halves: list[dict]) -> dict[str, float]:
    """One summary of runs alternated in halves: the medians' median, the extremes of both."""
    return {
        "min": min(h["min"] for h in halves),
        "median": statistics.median(h["median"] for h in halves),
        "p90": max(h["p90"] for h in halves),
        "max": max(h["max"] for h in halves),
        "n": sum(h["n"] for h in halves),
    }


def peak_rss_mb() -> float:
    """This process's VmHWM, from /proc."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


if __name__ == "__main__":
    raise SystemExit(main())
