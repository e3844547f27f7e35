"""Schema-2 snapshots of the DGX A100 tree (tests/pcie_trees.py), read by the node reader as an agent sends them."""

from __future__ import annotations

import json
import os
from datetime import datetime

from collectors import read_host, to_dict
from tests.fixture_trees import T0
from tests.pcie_trees import dgx_a100

UPLINK = "0000:01:00.0"  # the top switch of GPU0, GPU1, mlx5_0 and mlx5_1 (first quadrant)


class Dgx:
    """A DGX A100 sysfs tree under `root`; `read()` is the JSON snapshot a node would send of it."""

    def __init__(self, root: str, host: str = "dgx01") -> None:
        self.root, self.host = root, host
        self.layout = dgx_a100(root)

    def read(self, at: datetime = T0) -> dict:
        snap = read_host(self.root, host=self.host, use_verbs=False, now=at.timestamp())
        return json.loads(json.dumps(to_dict(snap)))  # as it arrives: through JSON

    def retrain(self, width: int) -> None:
        """The first quadrant's switch uplink trains at `width` lanes (it supports x16)."""
        with open(os.path.join(self.layout["quadrants"][0]["uplink"], "current_link_width"), "w") as f:
            f.write(f"{width}\n")


def device(snap: dict, name: str) -> dict:
    return next(d for d in snap["devices"] if d["name"] == name)


def hop(path: dict, address: str = UPLINK) -> dict:
    return next(h for h in path["hops"] if h["address"] == address)
