"""What decoding a snapshot message's body costs the consumer: kombu's decode against decode_body.

    .venv/bin/python bench/bench_decode.py [--nodes 8] [--rounds 200]

Bodies are Celery protocol 2 JSON of simulated 2 x 2-port snapshots (bench_ingest's
simulator); every decode gets a fresh kombu Message (a Message caches what it decoded).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest import from_simulator

EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    from kombu.message import Message

    from fabricweb.telemetry.consumer import decode_body

    bodies = [json.dumps([[s], {}, EMBED]).encode() for s in from_simulator(args.nodes, 2, 2, 2)[1]]

    def fresh(body: bytes) -> Message:
        return Message(
            body=body, content_type="application/json", content_encoding="utf-8", accept=["application/json"]
        )

    print(f"{len(bodies)} bodies, {sum(map(len, bodies)) / len(bodies):.0f} B on average")
    for name, decode in (
        ("kombu Message.decode", lambda b: fresh(b).decode()),
        ("decode_body", lambda b: decode_body(fresh(b))),
    ):
        runs = []
        for _ in range(3):
            start = time.perf_counter()
            for _ in range(args.rounds):
                for body in bodies:
                    decode(body)
            runs.append((time.perf_counter() - start) / (args.rounds * len(bodies)) * 1e6)
        print(f"{name:22s} µs per message: " + " / ".join(f"{r:.1f}" for r in runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
