"""`make demo`'s faults, as its Makefile names them, each show their problem on the fabric the demo runs."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from health_db_fabric import SimFabric, open_events

from fabricweb.health import policyfile

ROOT = Path(__file__).resolve().parents[2]


def make_variable(name: str) -> str:
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    match = re.search(rf"^{name} \?= (.*)$", text, re.MULTILINE)
    assert match, f"{name} is not in the Makefile"
    return match.group(1)


def test_every_demo_fault_opens_its_problem_in_the_first_polls(each_db, sim_dir):
    faults = tuple(shlex.split(make_variable("DEMO_FAULTS")))
    nodes = int(make_variable("SIM_NODES"))
    policyfile.store(policyfile.parse((ROOT / "scripts/demo-policies.yaml").read_text()))
    fabric = SimFabric(sim_dir, nodes=nodes, seed=0, faults=faults)  # runfabric's simulator: seed 0
    fabric.polls(4, batch=True)

    events = open_events()
    messages = {key: event.message for key, event in events.items()}
    # The issue's own example: a 100 Gb/s port that came up at 40 Gb/s.
    assert messages["degraded:cn033/mlx5_0/1"].startswith(
        "cn033 mlx5_0/1: trained at 40 Gb/s (4X QDR), expected 100 Gb/s (4X EDR): speed downgrade"
    )
    assert messages["degraded:cn002/mlx5_0/1"].startswith(
        "cn002 mlx5_0/1: trained at 40 Gb/s (4X QDR), expected 200 Gb/s (4X HDR)"
    )
    assert messages["degraded:cn003/mlx5_1/1"].startswith(
        "cn003 mlx5_1/1: trained at 50 Gb/s (1X HDR), expected 200 Gb/s (4X HDR)"
    )
    # Each fault's problem, and nothing on the other 57 nodes.
    assert set(events) == {
        "degraded:cn002/mlx5_0/1",
        "degraded:cn033/mlx5_0/1",
        "degraded:cn003/mlx5_1/1",
        "down:cn005/mlx5_0/1",
        "down:cn006/mlx5_0/1",  # a flapping link is down for part of its cycle
        "flapping:cn006/mlx5_0/1",
        "symbol_errors:cn008/mlx5_1/1",
        "pcie:cn009/mlx5_0",
        "pcie:cn009/mlx5_1",
    }
