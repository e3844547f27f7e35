"""What `make demo` runs, read from the Makefile, so that the tests check the demo as it is."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from collectors.sim.faults import LAYOUT_KINDS

ROOT = Path(__file__).resolve().parents[1]


def make_variable(name: str) -> str:
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    match = re.search(rf"^{name} \?= (.*)$", text, re.MULTILINE)
    assert match, f"{name} is not in the Makefile"
    return match.group(1)


def demo_layout() -> tuple[str, ...]:
    """The demo's layout faults (NODE:dgx, NODE:misbuilt): the simulator builds them with the fabric."""
    return tuple(f for f in shlex.split(make_variable("DEMO_FAULTS")) if f.split(":")[1] in LAYOUT_KINDS)
