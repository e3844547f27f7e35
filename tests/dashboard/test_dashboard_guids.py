"""Covers fabricweb/dashboard/templatetags/guids.py, collectors/facts.py, fabricweb/dashboard/views/node.py,
fabricweb/dashboard/views/port.py, fabricweb/dashboard/views/switchpages.py, fabricweb/dashboard/views/search.py,
fabricweb/dashboard/views/exports.py; through them fabricweb/dashboard/finder.py.

GUIDs in one form on every page, the search's answers and ports.csv: as ibstat and iblinkinfo print them, 0x and
16 lower-case hex digits, never sysfs' 0c42:a103:00a1:b2c1; a host port's page shows its port GUID."""

from __future__ import annotations

import csv
import io
import re

import pytest

from collectors.facts import guid_words, parse_guid
from fabricweb.inventory.models import Device, Node, Port
from tests.fabric.fabric_support import polled_worlds

IBSTAT_GUID = re.compile(r"^0x[0-9a-f]{16}$")
SYSFS_GUID = re.compile(r"[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4}:[0-9a-f]{4}", re.I)


def test_it_writes_a_guid_as_ibstat_does_whatever_form_it_came_in():
    assert guid_words("0c42:a103:00A1:b2c1") == "0x0c42a10300a1b2c1"
    assert guid_words("0X0C42A10300A1B2C1") == "0x0c42a10300a1b2c1"
    assert guid_words(None) is None
    assert guid_words("<b>not a guid</b>") == "<b>not a guid</b>"  # as it is: the page escapes it
    assert parse_guid("0C42A10300A1B2C1") == "0x0c42a10300a1b2c1"
    assert parse_guid("0x12") is None and parse_guid("cn001") is None


def test_it_shows_an_hcas_guids_in_ibstats_form_on_the_node_page(viewer, faulty):
    device = Device.objects.get(node__name="cn002", name="mlx4_0")
    assert ":" in device.node_guid  # stored as sysfs prints it
    html = viewer.text("/nodes/cn002/")
    assert f"<dt>node GUID</dt><dd>0x{device.node_guid.replace(':', '')}</dd>" in html
    assert f"<dt>system image GUID</dt><dd>0x{device.sys_image_guid.replace(':', '')}</dd>" in html
    assert not SYSFS_GUID.search(html)


def test_it_shows_a_host_ports_guid_on_its_page(viewer, faulty):
    port = Port.objects.get(device__node__name="cn002", device__name="mlx4_0", number=1)
    assert IBSTAT_GUID.match(port.port_guid)
    html = viewer.text("/ports/cn002/mlx4_0/1/")
    assert f'<dt>port GUID</dt><dd class="port-guid">{port.port_guid}</dd>' in html
    assert not SYSFS_GUID.search(html)


def test_it_writes_guids_in_one_form_in_the_search_and_ports_csv(viewer, faulty):
    html = viewer.text("/search/", {"q": "MT4099"})
    node_guid = Device.objects.get(node__name="cn002", name="mlx4_0").node_guid
    assert f"node GUID 0x{node_guid.replace(':', '')}" in html and not SYSFS_GUID.search(html)
    rows = list(csv.reader(io.StringIO(b"".join(viewer.get("/ports.csv").streaming_content).decode())))
    guids = [row[rows[0].index("port GUID")] for row in rows[1:]]
    assert guids and all(IBSTAT_GUID.match(g) for g in guids), guids


@pytest.fixture
def switches(each_db, tmp_path):
    return polled_worlds(tmp_path)(polls=1)


def test_it_writes_a_switchs_guids_in_ibstats_form(viewer, switches):
    leaf = Node.objects.get(name="leaf01")
    assert IBSTAT_GUID.match(leaf.guid)
    html = viewer.text("/switches/leaf01/")
    assert f'<dd class="guid">{leaf.guid}</dd>' in html and not SYSFS_GUID.search(html)
    html = viewer.text("/ports/leaf01/switch/1/")
    assert f"GUID {leaf.guid}</dd>" in html and '<dt>port GUID</dt><dd class="port-guid">' in html
    assert not SYSFS_GUID.search(html)
