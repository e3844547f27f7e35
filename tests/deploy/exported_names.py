"""What /metrics can export, as the shipped dashboard and rules must name it: every sample name and its label
names, from the default scrape (no `?set=`: the shipped rules and panels need no opt-in set) of a simulated
fabric with hosts, switches and the faults that make the conditional families appear (capped counters, open
events on hosts and switches, a switch port congested, a link down, a host's link and an uplink degraded, a
switch unreachable), and the recording rules' names with the labels of what they are made of."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import yaml
from prometheus_client.parser import text_string_to_metric_families

TESTS = Path(__file__).resolve().parents[1]
RECORDING = TESTS.parent / "deploy" / "prometheus" / "rules" / "fabricweb-recording.yml"
NAME = re.compile(r"\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?")


def exported() -> dict[str, set[str]]:
    """sample name -> its label names, from a simulated fabric with switches (needs the database): the
    default scrape's, what the shipped rules and dashboard may read (the other sets are opt-in)."""
    from prometheus_client.exposition import choose_encoder

    from fabricweb.exporter.brokerseries import broker_memory
    from fabricweb.exporter.collector import FabricCollector
    from fabricweb.exporter.encoder import encode_chunks
    from fabricweb.exporter.selection import Selection
    from tests.fabric.fabric_support import FabricWorld

    with tempfile.TemporaryDirectory(prefix="exported-") as out:
        world = FabricWorld(
            out,
            nodes=6,
            start_faults=("cn003/mlx5_0/1:speed=DDR",),
            faults=("cn002/mlx4_0/1:saturate", "cn005/mlx5_0/1:symbol-errors=600/min", "cn004:pcie=GEN3x8"),
        )
        world.polls(2)
        world.builder.down("leaf01", 7)
        world.builder.link("leaf01", 8, "spine01", 2, lanes=4, speed="QDR")  # an uplink at 4X of 12X: degraded
        world.builder.mute("leaf02")
        world.poll()
        world.builder.add("leaf01", 9, "port_xmit_wait", 10**8)  # a congested uplink, at the last poll
        world.poll()
        names: dict[str, set[str]] = {}
        for series in ("all",):
            families = FabricCollector(Selection(series), world.now).families()
            broker_memory(families)  # as the view adds them
            text = b"".join(encode_chunks(families, choose_encoder("")[0])).decode()
            for family in text_string_to_metric_families(text):
                for sample in family.samples:
                    names.setdefault(sample.name, set()).update(sample.labels)
    return names


def recorded(names: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each recording rule's name -> the labels of the series its expression is made of."""
    out: dict[str, set[str]] = {}
    for group in yaml.safe_load(RECORDING.read_text())["groups"]:
        for rule in group["rules"]:
            labels: set[str] = set()
            for name, _ in selectors(rule["expr"]):
                labels |= names.get(name, set()) | out.get(name, set())
            out[rule["record"]] = labels
    return out


def selectors(expr: str) -> list[tuple[str, set[str]]]:
    """(metric name, label names it is matched on) of each metric an expression reads."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # no names inside strings
    expr = re.sub(r"\[[^\]]*\]", "", expr)  # ranges
    found = []
    for name, matchers in NAME.findall(expr):
        if not (name.startswith(("infiniband", "fabricweb")) or name == "up"):
            continue
        found.append((name, set(re.findall(r"(\w+)\s*[=!~]", matchers or ""))))
    return found


def grouping_labels(expr: str) -> set[str]:
    """Label names an expression groups or matches by: by (...), on (...), group_left (...), without (...)."""
    out = set()
    for names in re.findall(r"\b(?:by|on|group_left|group_right|without|ignoring)\s*\(([^)]*)\)", expr):
        out |= {n.strip() for n in names.split(",") if n.strip()}
    return out
