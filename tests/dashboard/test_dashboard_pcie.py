"""Covers collectors/pcitopo.py, fabricweb/dashboard/views/node.py, fabricweb/dashboard/views/events.py,
fabricweb/api/views/nodes.py.

The node page's PCIe section: each card's path hop by hop and the GPU x card matrix in
nvidia-smi topo words, on both databases, read from rows ingest stored (tests/pcie_nodes.py)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from django.utils import timezone

from collectors import read_host, to_dict
from collectors.pcitopo import matrix
from collectors.sim import Fabric
from fabricweb.health.models import Event
from fabricweb.inventory.models import Device, Node
from fabricweb.telemetry.ingest import ingest_snapshot
from tests.api.api_support import snapshot
from tests.demo_support import demo_layout, make_variable
from tests.pcie_dgx_h100 import DGX_H100_GPUS, DGX_H100_MATRIX, DGX_H100_NICS, dgx_h100
from tests.pcie_nodes import GPU_ADDRESSES, GPU_NUMA, MLX5_0_HOPS, store_dgx
from tests.pcie_trees import DGX_A100_MATRIX, DGX_A100_NICS, dgx_a100


class _Tables(HTMLParser):
    """The text of each cell of each <table class="topo">, row by row, and each <ol class="pcie-path">'s items."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self.paths: list[list[str]] = []
        self._cell: list[str] | None = None
        self._in = None

    def handle_starttag(self, tag, attrs):
        cls = dict(attrs).get("class") or ""
        if tag == "table" and "topo" in cls.split():
            self.tables.append([])
            self._in = "table"
        elif tag == "ol" and "pcie-path" in cls.split():
            self.paths.append([])
            self._in = "ol"
        elif self._in == "table" and tag == "tr":
            self.tables[-1].append([])
        elif (self._in == "table" and tag in ("td", "th")) or (self._in == "ol" and tag == "li"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("table", "ol"):
            self._in = None
        elif self._cell is not None and tag in ("td", "th", "li"):
            text = " ".join("".join(self._cell).split())
            (self.tables[-1][-1] if self._in == "table" else self.paths[-1]).append(text)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _read(html: str) -> _Tables:
    parsed = _Tables()
    parsed.feed(html)
    return parsed


def _path_of(html: str, device: str) -> list[str]:
    """The hop list under the card's `PCIe path of <device>` heading."""
    section = html.split(f"<h3>PCIe path of {device}</h3>", 1)[1].split("</ol>", 1)[0] + "</ol>"
    return _read(section).paths[0]


def test_the_dgx_node_shows_every_cards_path_and_the_published_gpu_matrix_cell_for_cell(viewer, tmp_path):
    store_dgx(tmp_path)
    html = viewer.text("/nodes/dgx01/")
    page = _read(html)
    # 8 compute HCAs behind the PCIe switches and the 4 functions of the 2 storage cards: every card a path.
    assert re.findall(r"<h3>PCIe path of (mlx5_\d+)</h3>", html) == sorted(DGX_A100_NICS)
    assert len(page.paths) == 12
    assert _path_of(html, "mlx5_0") == [
        *(f"{address} {name} Gen4 x16 (~252 Gb/s)" for address, name in MLX5_0_HOPS),
        "pci0000:00 host bridge (the CPU)",
    ]
    assert _path_of(html, "mlx5_4") == [
        "0000:61:00.0 mlx5_4 Gen4 x16 (~252 Gb/s)",
        "0000:60:03.1 root port Gen4 x16 (~252 Gb/s)",
        "pci0000:60 host bridge (the CPU)",
    ]
    assert "The path carries ~252 Gb/s: no hop narrows it." in html
    assert (
        "Sharing hops of this path: GPU <code>0000:07:00.0</code> below PCIe switch uplink <code>0000:01:00.0</code>"
    ) in html
    [matrix] = page.tables
    header, rows = matrix[0], matrix[1:]
    assert header == ["GPU", "NUMA node", "PCIe", *DGX_A100_NICS, "nearest"]
    assert [r[0] for r in rows] == [f"GPU{i} {a}" for i, a in enumerate(GPU_ADDRESSES)]
    assert [r[1] for r in rows] == [str(n) for n in GPU_NUMA]
    assert {r[2] for r in rows} == {"Gen4 x16"}
    assert [r[3:-1] for r in rows] == DGX_A100_MATRIX
    assert [r[-1] for r in rows] == ["mlx5_0 (PXB)"] * 2 + ["mlx5_2 (PXB)"] * 2 + ["mlx5_6 (PXB)"] * 2 + [
        "mlx5_8 (PXB)"
    ] * 2
    for word in ("PIX", "PXB", "PHB", "NODE", "SYS"):
        assert f"<dt>{word}</dt>" in html  # the legend


def test_a_switch_uplink_trained_x8_of_x16_shows_both_figures_and_is_the_narrowest_hop(viewer, tmp_path):
    store_dgx(tmp_path, width=8)
    device = Device.objects.get(node__name="dgx01", name="mlx5_0")
    Event.objects.create(
        node=device.node,
        device=device,
        kind="pcie_path",
        severity="warning",
        key="dgx01/mlx5_0:pcie_path",
        message="dgx01 mlx5_0: PCIe switch uplink 0000:01:00.0 trained Gen4 x8 (~126 Gb/s), limits a 200 Gb/s port",
        opened_at=timezone.now(),
        updated_at=timezone.now(),
    )
    html = viewer.text("/nodes/dgx01/")
    hops = _path_of(html, "mlx5_0")
    assert hops[4] == (
        "0000:01:00.0 PCIe switch uplink Gen4 x8 (~126 Gb/s) "
        "trained low trained Gen4 x8, supports Gen4 x16 narrowest hop"
    )
    # The root port is the other end of the same link: trained low too, but the uplink is the nearer.
    assert hops[5] == "0000:00:01.1 root port Gen4 x8 (~126 Gb/s) trained low trained Gen4 x8, supports Gen4 x16"
    assert hops[:4] == [f"{a} {n} Gen4 x16 (~252 Gb/s)" for a, n in MLX5_0_HOPS[:4]]
    assert "The path carries ~126 Gb/s, set by its narrowest hop 0000:01:00.0." in html
    section = html.split("<h3>PCIe path of mlx5_0</h3>", 1)[1].split("<h2>", 1)[0]
    assert "limits a 200 Gb/s port" in section  # the open finding, in the card's own section
    assert '<a href="/events/?node=dgx01&amp;kind=pcie_path">pcie_path events</a>' in section
    # The other quadrants' cards are untouched.
    assert "narrowest hop" not in _path_of(html, "mlx5_2")[-2]
    assert "trained low" not in " ".join(_path_of(html, "mlx5_2"))


def test_strings_the_node_sent_are_shown_as_text(viewer, tmp_path):
    snap = store_dgx(tmp_path)
    path = next(d["pcie_path"] for d in snap["devices"] if d["name"] == "mlx5_0")
    path["hops"][0]["address"] = "<script>alert('hop')</script>"
    path["host_bridge"] = '"><img src=x onerror=alert(1)>'
    path["neighbours"][2]["name"] = "<b onmouseover=alert(2)>mlx5_1</b>"
    Device.objects.filter(node__name="dgx01", name="mlx5_0").update(pcie_path=path)
    gpus = snap["gpus"]
    gpus[0]["address"] = "<svg onload=alert(3)>"
    gpus[0]["nics"]["<i>mlx5_x</i>"] = "<u>PIX</u>"
    Node.objects.filter(name="dgx01").update(gpus=gpus)
    html = viewer.text("/nodes/dgx01/")
    for raw in ("<script>alert(", "<img src=x", "<b onmouseover", "<svg onload", "<i>mlx5_x", "<u>PIX"):
        assert raw not in html, raw
    assert "&lt;script&gt;alert(&#x27;hop&#x27;)&lt;/script&gt;" in html
    assert "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;b onmouseover=alert(2)&gt;mlx5_1&lt;/b&gt;" in html
    assert "GPU0 <code>&lt;svg onload=alert(3)&gt;</code>" in html
    header = _read(html).tables[0][0]
    assert header[-2] == "<i>mlx5_x</i>"  # a column named as sent, its cell unknown: not a topo word
    assert _read(html).tables[0][1][-2] == "unknown"


def _schema_1(host: str) -> None:
    """A node whose agent sends schema 1: no PCIe tree (Node.gpus and every Device.pcie_path null)."""
    snap = snapshot(host=host)
    snap["schema"] = 1
    ingest_snapshot(snap)
    Node.objects.filter(name=host).update(gpus=None)
    Device.objects.filter(node__name=host).update(pcie_path=None)


def test_a_node_whose_agent_sends_no_pcie_tree_says_unknown_not_an_empty_table(viewer):
    _schema_1("cn001")
    html = viewer.text("/nodes/cn001/")
    said = "unknown: this node&#x27;s agent sends no PCIe tree (schema 1)"
    devices = Device.objects.filter(node__name="cn001").count()
    assert devices >= 2 and html.count(f'<p class="muted pcie-unknown">{said}</p>') == devices
    assert f"GPUs and their distance to the cards: {said}" in html
    assert 'class="topo"' not in html and "No GPUs on this node" not in html
    assert '<ol class="pcie-path">' not in html  # no hop list at all


def test_a_node_with_a_tree_and_no_gpus_says_so_and_a_card_on_its_root_complex_has_no_bridge(viewer):
    _schema_1("cn001")
    Node.objects.filter(name="cn001").update(gpus=[])  # schema 2: the tree read, no GPU in it
    html = viewer.text("/nodes/cn001/")
    assert "No GPUs on this node." in html and 'class="topo"' not in html
    assert "no bridge above the card&#x27;s PCI function: its own link is the whole path" in html


def test_the_page_and_the_api_show_the_same_path_of_every_card(viewer, tmp_path):
    store_dgx(tmp_path, width=8)
    html = viewer.text("/nodes/dgx01/")
    body = viewer.get("/api/v1/nodes/dgx01").json()  # the same session reads the API
    for device in body["devices"]:
        path = device["pcie_path"]
        said = []
        for h in path["hops"]:
            text = f"{h['address']} {h['name']} {h['link']} (~{round(h['usable_gbps'])} Gb/s)"
            text += f" trained low {h['note']}" if h["note"] else ""
            said.append(text + (" narrowest hop" if h["narrowest"] else ""))
        said.append(f"{path['host_bridge']} host bridge (the CPU)")
        assert _path_of(html, device["name"]) == said, device["name"]
    rows = _read(html).tables[0][1:]
    assert [r[3:-1] for r in rows] == [[g["nics"][n] for n in DGX_A100_NICS] for g in body["gpus"]]


def test_a_schema_2_snapshot_stored_by_ingest_shows_as_the_rows_written_directly(viewer, tmp_path):
    store_dgx(tmp_path, "dgx01", width=8)
    root = str(tmp_path / "dgx02")
    dgx_a100(root, width=8)
    ingest_snapshot(to_dict(read_host(root, host="dgx02", use_verbs=False)))  # the real ingest, whole
    direct, ingested = viewer.text("/nodes/dgx01/"), viewer.text("/nodes/dgx02/")
    for name in DGX_A100_NICS:
        assert _path_of(ingested, name) == _path_of(direct, name), name
    assert _read(ingested).tables == _read(direct).tables
    # The health rules judged the stored path: their finding is in the card's own section, linking to its events.
    section = ingested.split("<h3>PCIe path of mlx5_0</h3>", 1)[1].split("<h2>", 1)[0]
    assert "dgx02 mlx5_0: PCIe switch uplink 0000:01:00.0 trained Gen4 x8 (~126 Gb/s)" in section
    assert '<a href="/events/?node=dgx02&amp;kind=pcie_path">pcie_path events</a>' in section


def _topo_rows(html: str) -> tuple[list[str], list[list[str]]]:
    """The matrix's card columns and each GPU row's relations."""
    [table] = _read(html).tables
    return table[0][3:-1], [r[3:-1] for r in table[1:]]


def test_it_shows_the_published_dgx_h100_matrix_row_for_row_on_its_node_page(viewer, tmp_path):
    root = str(tmp_path / "h100")
    dgx_h100(root)  # with its BMC's VGA, which is no GPU, and a cascade of switches above each GPU
    ingest_snapshot(to_dict(read_host(root, host="dgx-h100", use_verbs=False)))
    html = viewer.text("/nodes/dgx-h100/")
    cards, rows = _topo_rows(html)
    assert cards == DGX_H100_NICS and rows == DGX_H100_MATRIX
    assert [r[0] for r in _read(html).tables[0][1:]] == [f"GPU{i} {a}" for i, a in enumerate(DGX_H100_GPUS)]


def test_it_shows_the_demos_gpu_server_with_its_matrix_on_its_node_page(viewer, tmp_path):
    (spec,) = demo_layout()  # make demo's NODE:dgx
    node = spec.split(":")[0]
    fabric = Fabric.create(str(tmp_path / "sim"), int(make_variable("SIM_NODES")), layout_faults=(spec,))
    fabric.step(10)
    snap = read_host(str(tmp_path / "sim" / node), host=node, use_verbs=False)
    ingest_snapshot(to_dict(snap))
    html = viewer.text(f"/nodes/{node}/")
    cards, rows = _topo_rows(html)
    names, published = matrix(snap.gpus)
    assert len(rows) == 8 and len(cards) == 8
    assert (cards, rows) == (names, published)  # as the agent read it, nvidia-smi's words
    assert {cell for row in rows for cell in row} == {"PIX", "NODE", "SYS"}  # 2 GPUs and 2 cards a switch
