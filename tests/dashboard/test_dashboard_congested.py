"""Covers fabricweb/dashboard/views/switchpages.py, fabricweb/fabric/congested.py.

The fabric page's most congested links: the share of link time each port lost in its last poll, most
first, named by both ends of its link, in its device's unit, and "root unknown" where no forwarding tables are
stored."""

from __future__ import annotations

import re

import pytest

from fabricweb.inventory.models import Port
from tests.fabric.fabric_support import FabricWorld

SWITCH_IB_2 = 0xCF08


@pytest.fixture
def world(tmp_path, each_db):
    return FabricWorld(tmp_path / "sim", nodes=6, switch_ports=12)


def test_the_fabric_page_lists_the_most_congested_links_with_both_ends(viewer, world):
    world.builder.nodes["leaf02"].device_id = SWITCH_IB_2
    world.poll()
    world.builder.add("leaf01", 7, "port_xmit_wait", 1_875_000_000)  # x 8 B of 12X QDR's 1.5e11 B in 10 s: 10%
    world.builder.add("leaf02", 8, "port_xmit_wait", 78_125_000)  # x 32 B x 12 lanes = 3e10 B: 20%
    world.poll()
    html = viewer.get("/fabric/").content.decode()
    section = html[html.index('id="live-congested"') :]
    section = section[section.index("<tbody>") : section.index("</section>")]
    rows = [re.sub(r"<[^>]+>|\s+", " ", row).split() for row in re.findall(r"<tr>(.*?)</tr>", section, re.S)]
    assert [" ".join(r) for r in rows[:2]] == [
        f"20.0% leaf02 port 8 {world_far(world, 'leaf02', 8)} root unknown 32 bytes per lane per count on Switch-IB 2",
        f"10.0% leaf01 port 7 {world_far(world, 'leaf01', 7)} root unknown 8 bytes per count on Quantum",
    ]


def world_far(world: FabricWorld, switch: str, number: int) -> str:
    """The far end of switch[number] in words, as the fabric view names it: `spine01 port 3`."""
    return Port.objects.get(device__node__name=switch, number=number).peer_label
