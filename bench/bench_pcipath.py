"""What the PCIe path costs a poll: read_host on a DGX A100 tree, with and without it.

    .venv/bin/python bench/bench_pcipath.py [--iterations 1000] [--collectors DIR]

The tree is tests/pcie_trees.py's DGX A100 (12 RDMA devices, 8 GPUs, 4 switch quadrants), each
device with one port and no counters, so the PCI reads are a large share of the poll: the worst
case for the path. `--collectors DIR` times the collectors package found in DIR instead of this
checkout's (an older checkout: the poll before the path existed). The first read after the tree
is built scans its shape; the timed reads after the warm-up re-read only each hop's link.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--iterations", type=int, default=1000)
    ap.add_argument("--collectors", default=str(REPO), help="directory that holds the collectors package to time")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from tests.pcie_trees import dgx_a100  # the tree builder comes from this checkout

    sys.path.insert(0, args.collectors)
    for name in [m for m in sys.modules if m == "collectors" or m.startswith("collectors.")]:
        del sys.modules[name]
    from collectors import read_host, to_dict

    with tempfile.TemporaryDirectory(prefix="bench-pcipath-") as tmp:
        root = os.path.join(tmp, "sys")
        dgx_a100(root)
        t = time.perf_counter()
        first = read_host(root, host="bench", use_verbs=False)
        scan = time.perf_counter() - t
        assert not first.errors and len(first.devices) == 12, "the bench tree must read clean"
        for _ in range(min(100, args.iterations)):
            read_host(root, host="bench", use_verbs=False)
        samples = []
        for _ in range(args.iterations):
            t = time.perf_counter()
            read_host(root, host="bench", use_verbs=False)
            samples.append(time.perf_counter() - t)
        size = len(json.dumps(to_dict(first)))
    s = sorted(samples)
    us = [x * 1e6 for x in (s[0], statistics.median(s), s[-1])]
    print(f"collectors from {args.collectors}")
    print(f"first read (scans the tree's shape): {scan * 1e3:.1f} ms")
    print(f"read_host, {args.iterations} runs: min {us[0]:,.0f} µs, median {us[1]:,.0f} µs, max {us[2]:,.0f} µs")
    print(f"snapshot JSON: {size:,} bytes; load {os.getloadavg()[0]:.2f}; ")
    print(f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
