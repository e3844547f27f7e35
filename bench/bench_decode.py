"""What reading a snapshot message costs the consumer, step by step, old way against new, in turns.

    .venv/bin/python bench/bench_decode.py [--nodes 8] [--rounds 200]

Bodies are Celery protocol 2 JSON of simulated 2 x 2-port snapshots (bench_ingest's
simulator), in kombu's Redis envelope (headers, properties, and the body as it is, as
agents send it: names.PLAIN_BODIES; in base64, as older agents did, with --base64) as the
consumer takes them. Steps: the envelope (json.loads against redisread's orjson read),
the body (kombu's Message.decode, with a fresh Message each time since a Message caches
what it decoded, against decode_body) and the validation (the worded checks alone against
parse_snapshot with its quick path). Then the agents' wire form (collectors/wire.py, devices as last sent,
as 29 polls in 30 are): a signed snapshot's text (json.loads against jsonread.json_text_loads), and the
typing of a wire snapshot, its JSON read each time (messages.from_wire then parse_snapshot, against
quickwire.parse_wire). Each pair runs alternately, three times; the figures are µs per message and per
port-sample.
"""

from __future__ import annotations

import argparse
import base64
import json
import os
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_ingest import from_simulator

EMBED = {"callbacks": None, "errbacks": None, "chain": None, "chord": None}


def kombu_envelope(body: bytes, in_base64: bool = False) -> bytes:
    """The message as kombu's Redis transport stores it (a Celery send_task's headers and properties)."""
    tag = str(uuid.uuid4())
    headers = {"lang": "py", "task": "fabricweb.telemetry.tasks.ingest_snapshot", "id": tag, "shadow": None}
    headers |= {"eta": None, "expires": None, "group": None, "group_index": None, "retries": 0}
    headers |= {"timelimit": [None, None], "root_id": tag, "parent_id": None, "argsrepr": "...", "origin": "gen1@cn001"}
    properties = {"correlation_id": tag, "reply_to": str(uuid.uuid4()), "delivery_mode": 2, "priority": 0}
    encoding = "base64" if in_base64 else None
    properties |= {"delivery_info": {"exchange": "", "routing_key": "snapshots"}, "body_encoding": encoding}
    properties["delivery_tag"] = str(uuid.uuid4())
    return json.dumps(
        {
            "body": base64.b64encode(body).decode() if in_base64 else body.decode(),
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": headers,
            "properties": properties,
        }
    ).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--base64", action="store_true", help="bodies in base64, as agents sent them before")
    args = parser.parse_args()
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")
    import django

    django.setup()
    import orjson
    from django.utils import timezone
    from kombu.message import Message

    from collectors import wire
    from fabricweb.telemetry.intake.envelopes import envelope
    from fabricweb.telemetry.intake.jsonread import json_text_loads
    from fabricweb.telemetry.intake.messages import decode_body, from_wire
    from fabricweb.telemetry.validation.quickwire import parse_wire
    from fabricweb.telemetry.validation.schema import parse_snapshot, parse_worded

    first, snapshots = from_simulator(args.nodes, 2, 2, 2)
    encoder = wire.Encoder("bench")
    for s in first:
        encoder.encode(s)  # the full poll: the next leaves out what it sent
    texts = [json.dumps(encoder.encode(s), separators=(",", ":")) for s in snapshots]  # as nodeauth signs it
    wire_bodies = [t.encode() for t in texts]
    bodies = [json.dumps([[s], {}, EMBED]).encode() for s in snapshots]
    raws = [kombu_envelope(b, args.base64) for b in bodies]
    ports = sum(len(d["ports"]) for s in snapshots for d in s["devices"]) / len(snapshots)
    now = timezone.now()
    for s in snapshots:
        parse_worded(s, now)  # the counter names seen once, as after a node's first poll
    assert all(parse_wire(orjson.loads(b), now) is not None for b in wire_bodies)  # the quick path takes them

    def fresh(body: bytes) -> Message:
        return Message(
            body=body, content_type="application/json", content_encoding="utf-8", accept=["application/json"]
        )

    print(
        f"{len(bodies)} messages of {ports:.0f} ports: body {sum(map(len, bodies)) / len(bodies):.0f} B, "
        f"envelope {sum(map(len, raws)) / len(raws):.0f} B"
    )
    steps = (
        ("envelope", raws, (("json.loads", json.loads), ("redisread orjson", envelope))),
        (
            "body",
            bodies,
            (("kombu Message.decode", lambda b: fresh(b).decode()), ("decode_body", lambda b: decode_body(fresh(b)))),
        ),
        ("validate", snapshots, (("worded checks", parse_worded), ("parse_snapshot", parse_snapshot))),
        ("signed", texts, (("json.loads", json.loads), ("json_text_loads", json_text_loads))),
        (
            "wire",
            wire_bodies,
            (
                ("from_wire + parse", lambda b: parse_snapshot(from_wire(orjson.loads(b)), now)),
                ("parse_wire", lambda b: parse_wire(orjson.loads(b), now)),
            ),
        ),
    )
    for step, items, pair in steps:
        runs: dict[str, list[float]] = {name: [] for name, _ in pair}
        for _ in range(3):
            for name, func in pair:
                start = time.perf_counter()
                if step == "validate":
                    for _ in range(args.rounds):
                        for item in items:
                            func(item, now)
                else:
                    for _ in range(args.rounds):
                        for item in items:
                            func(item)
                runs[name].append((time.perf_counter() - start) / (args.rounds * len(items)) * 1e6)
        for name, us in runs.items():
            each = " / ".join(f"{u:.1f}" for u in us)
            per_port = " / ".join(f"{u / ports:.1f}" for u in us)
            print(f"{step:9s} {name:22s} µs per message: {each:22s} per port-sample: {per_port}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
