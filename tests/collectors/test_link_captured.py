"""Covers collectors/link.py: the `rate` parser and link judgement on FDR10 and FDR rates captured from a cluster.

The capture (tests/fixtures/rate/xcat-test_hca_state.txt, its source in tests/fixtures/README.md) is xCAT's
`test_hca_state`, which prints each node's `ibstatus` rate line, the kernel's sysfs `rate` as it is. One node,
storage1, came up at 40 Gb/sec (4X FDR10) where every other node of the cluster runs 56 Gb/sec (4X FDR).
"""

from __future__ import annotations

import re
from pathlib import Path

from collectors.link import Rate, judge_link, parse_rate

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rate" / "xcat-test_hca_state.txt"


def rates() -> dict[str, Rate]:
    """Node group (xcoll's header) -> its mlx4_0 port 1 rate, through the sysfs `rate` parser."""
    out, group, lines = {}, None, [line.strip() for line in CAPTURE.read_text().splitlines()]
    for before, line, after in zip(lines, lines[1:], lines[2:], strict=False):
        if before.startswith("====") and after.startswith("===="):
            group = line
        found = re.match(r"^rate:\s+(.*)$", line)
        if found:
            out[group] = parse_rate(found.group(1))
    return out


def test_the_captured_rates_read_as_4x_fdr10_and_4x_fdr():
    assert rates() == {
        "storage1": Rate(40.0, 4, "FDR10"),
        "compute,storage2,storage3,storage4": Rate(56.0, 4, "FDR"),
    }
    assert rates()["storage1"].describe() == "40 Gb/s (4X FDR10)"


def test_the_node_at_fdr10_among_fdr_nodes_is_a_speed_downgrade():
    got = rates()
    finding = judge_link(got["storage1"], got["compute,storage2,storage3,storage4"])
    assert finding is not None and finding.kind == "speed"
    assert finding.message == (
        "trained at 40 Gb/s (4X FDR10), expected 56 Gb/s (4X FDR): speed downgrade (FDR10 where FDR expected)"
    )
    assert judge_link(got["compute,storage2,storage3,storage4"], got["storage1"]) is None
