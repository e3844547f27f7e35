"""Covers collectors/link.py, fabricweb/health/records/context.py, fabricweb/health/rules/expectation.py,
fabricweb/health/rules/findings.py, fabricweb/health/rules/, fabricweb/health/rules/pciepath.py,
fabricweb/health/rules/view.py, fabricweb/dashboard/marks.py.

The PCIe path above a card and the host's PCIe layout, judged on trees laid out as real machines
and read back as the node agent sends them."""

from __future__ import annotations

import pytest

from collectors.link import make_rate
from fabricweb.health.records.context import Policies
from fabricweb.health.rules import judge_port
from fabricweb.health.rules.expectation import LinkPolicy
from fabricweb.health.rules.findings import Kind, Severity
from fabricweb.health.rules.pciepath import gpu_view, hops_of, judge_host, known_numa, neighbours_of
from fabricweb.health.rules.view import CardView, HostView, PcieView
from tests.health.health_factory import EDR, HDR, port_view
from tests.pcie_dgx_h100 import dgx_h100
from tests.pcie_layouts import GEN4, GEN5, hgx, misbuilt, snapshot, sockets
from tests.pcie_trees import dgx_a100

NDR = make_rate("NDR", 4)


def device(snap: dict, name: str) -> dict:
    return next(d for d in snap["devices"] if d["name"] == name)


def port_of(snap: dict, name: str = "mlx5_0", link=HDR, **pci):
    """The device's port as the engine views it: its own link, and the bridges above it."""
    d = device(snap, name)
    own = {**d["pci"], **pci}
    path = hops_of(d.get("pcie_path"), True)
    pcie = PcieView(own["current_gts"], own["current_width"], own["max_gts"], own["max_width"], path)
    return port_view(node=snap["host"], device=name, link=link, best_link=link, pcie=pcie)


def host_of(snap: dict, gbps: float = 200.0, warning: bool = False, **numa) -> HostView:
    """The host as the engine views it: every card's ports at `gbps`, NUMA nodes as read unless given."""
    cards = []
    for d in snap["devices"]:
        gpus, rdma = neighbours_of(d.get("pcie_path"))
        node = numa.get(d["name"], known_numa(d["pci"]["numa_node"]))
        path = hops_of(d.get("pcie_path"), True)
        cards.append(CardView(d["name"], node, True, gbps, path, gpus, rdma, warning))
    return HostView(snap["host"], tuple(cards), tuple(gpu_view(g) for g in snap.get("gpus", [])))


def path_findings(snap: dict, link=HDR):
    return [f for d in snap["devices"] for f in judge_port(port_of(snap, d["name"], link)).findings]


def test_a_dgx_a100_with_every_link_at_full_width_opens_nothing(tmp_path):
    dgx_a100(str(tmp_path / "sys"))
    snap = snapshot(str(tmp_path / "sys"), "dgx01")
    assert len(snap["gpus"]) == 8
    assert path_findings(snap, HDR) == []  # its ConnectX-6 ports are 4X HDR
    assert judge_host(host_of(snap, 200.0)) == ([], set())


def test_an_uplink_at_x8_under_an_ndr_port_is_one_warning_with_its_figures(tmp_path):
    root = str(tmp_path / "sys")
    misbuilt(root, gpus=0, gen=GEN5, speed=GEN4, width=8)  # a Gen5 path whose switch uplink trained Gen4 x8
    snap = snapshot(root, "cn042")
    j = judge_port(port_of(snap, "mlx5_0", NDR))
    assert [(f.kind, f.severity) for f in j.findings] == [(Kind.PCIE_PATH, Severity.WARNING)]
    f = j.findings[0]
    assert f.key == "pcie_path:cn042/mlx5_0"
    assert f.message == (
        "cn042 mlx5_0: PCIe switch uplink 0000:41:00.0 trained Gen4 x8 (~126 Gb/s), limits a 400 Gb/s (4X NDR) "
        "port; the link supports Gen5 x16 (reseat the switch or riser and check the slot's link settings in the BIOS)"
    )
    assert f.details == {
        "hop": "0000:41:00.0",
        "hop_kind": "PCIe switch uplink",
        "pcie": "Gen4 x8",
        "pcie_gbps": 126.0,
        "port_gbps": 400.0,
        "trained_low": True,
        "bottleneck": True,
    }
    assert judge_host(host_of(snap, 400.0)) == ([], set())


def test_every_card_below_a_dgx_quadrants_narrow_uplink_says_so_for_itself(tmp_path):
    dgx_a100(str(tmp_path / "sys"), width=8)  # the first quadrant's root port and switch uplink train at x8
    snap = snapshot(str(tmp_path / "sys"), "cn042")
    found = {f.key: f.message for f in path_findings(snap, HDR)}
    assert set(found) == {"pcie_path:cn042/mlx5_0", "pcie_path:cn042/mlx5_1"}
    assert found["pcie_path:cn042/mlx5_1"].startswith(
        "cn042 mlx5_1: PCIe switch uplink 0000:01:00.0 trained Gen4 x8 (~126 Gb/s), limits a 200 Gb/s (4X HDR) port"
    )


def test_a_hop_trained_low_that_still_carries_the_port_is_info(tmp_path):
    dgx_a100(str(tmp_path / "sys"), width=8)
    snap = snapshot(str(tmp_path / "sys"), "cn042")
    j = judge_port(port_of(snap, "mlx5_0", EDR))  # 100 Gb/s fits in ~126 Gb/s
    assert [(f.kind, f.severity) for f in j.findings] == [(Kind.PCIE_PATH, Severity.INFO)]
    assert "PCIe switch uplink 0000:01:00.0 trained at Gen4 x8, it supports Gen4 x16" in j.findings[0].message


def test_the_cards_own_link_at_x8_is_said_once_by_the_pcie_rule_not_again_by_the_path(tmp_path):
    root = str(tmp_path / "sys")
    misbuilt(root)
    snap = snapshot(root)
    hops = device(snap, "mlx5_0")["pcie_path"]["hops"]
    hops[0].update(current_width=8)  # the downstream port above the card reports the card's own link
    j = judge_port(port_of(snap, "mlx5_0", HDR, current_width=8))
    assert [f.kind for f in j.findings] == [Kind.PCIE]


def test_a_switch_that_only_has_x8_under_an_x16_root_port_is_at_its_maximum(tmp_path):
    root = str(tmp_path / "sys")
    misbuilt(root)
    snap = snapshot(root)
    rp, usp = device(snap, "mlx5_0")["pcie_path"]["hops"][-1], device(snap, "mlx5_0")["pcie_path"]["hops"][-2]
    rp.update(current_width=8)  # x16 capable, partnered with a switch that can do x8 at most
    usp.update(current_width=8, max_width=8)
    j = judge_port(port_of(snap, "mlx5_0", HDR))
    assert [(f.kind, f.severity) for f in j.findings] == [(Kind.PCIE_PATH, Severity.INFO)]
    assert j.findings[0].message == (
        "cn017 mlx5_0: PCIe switch uplink 0000:41:00.0 trained Gen4 x8 (~126 Gb/s), limits a 200 Gb/s (4X HDR) port "
        "(the path is at its PCIe maximum: a faster slot would carry the port)"
    )


def test_a_card_whose_agent_sends_no_pcie_tree_holds_its_path_finding():
    j = judge_port(port_view(pcie=PcieView(16.0, 16, 16.0, 16, None)))
    assert "pcie_path:cn042/mlx5_0" in j.unknown
    assert "pcie_path:cn042/mlx5_0" not in judge_port(port_view(pcie=PcieView(16.0, 16, 16.0, 16, ()))).unknown


def test_it_says_nothing_of_gpus_below_an_uplink_that_carries_the_cards_port(tmp_path):
    root = str(tmp_path / "sys")
    misbuilt(root)  # a 200 Gb/s card and two GPUs behind a Gen4 x16 uplink (~252 Gb/s), every link at its best
    assert judge_host(host_of(snapshot(root), 200.0)) == ([], set())


def test_it_opens_nothing_on_an_hgx_server_with_two_gpus_and_a_400g_card_below_each_gen5_uplink(tmp_path):
    root = str(tmp_path / "sys")
    layout = hgx(root)
    snap = snapshot(root, "hgx01")
    assert [len(s["gpus"]) for s in layout["switches"]] == [2, 2, 2, 2] and len(snap["gpus"]) == 8
    # Before the shared-hops model every switch said "together they can move ~1,408 Gb/s" through ~504 Gb/s: GPU-to-card
    # traffic below a switch never crosses its uplink.
    assert judge_host(host_of(snap, 400.0)) == ([], set())
    assert path_findings(snap, NDR) == []


def test_it_opens_nothing_on_the_published_dgx_h100(tmp_path):
    dgx_h100(str(tmp_path / "sys"))
    snap = snapshot(str(tmp_path / "sys"), "dgx01")
    assert len(snap["gpus"]) == 8  # the BMC's VGA is none of them
    assert judge_host(host_of(snap, 400.0)) == ([], set())
    assert path_findings(snap, NDR) == []


def test_it_names_the_card_and_the_gpu_behind_an_uplink_narrower_than_the_port(tmp_path):
    root = str(tmp_path / "sys")
    misbuilt(root, gpus=1, gen=GEN5, speed=GEN4, max_speed=GEN4)  # a Gen5 card below a switch that has only Gen4
    findings, unknown = judge_host(host_of(snapshot(root), 400.0))
    assert unknown == set()
    assert [(f.kind, f.severity, f.key) for f in findings] == [
        (Kind.PCIE_SHARED, Severity.INFO, "pcie_shared:cn017/0000:41:00.0")
    ]
    assert findings[0].message == (
        "cn017: mlx5_0 (400 Gb/s) and GPU 0000:44:00.0 share a PCIe switch uplink 0000:41:00.0 trained Gen4 x16 "
        "(~252 Gb/s), narrower than the port of mlx5_0: the GPU's traffic to host memory crosses it beside the "
        "card's; their traffic to each other turns below it (GPUDirect RDMA)"
    )
    assert findings[0].details == {
        "hop": "0000:41:00.0",
        "hop_kind": "PCIe switch uplink",
        "pcie": "Gen4 x16",
        "pcie_gbps": 252.1,
        "devices": ["mlx5_0"],
        "gpus": ["0000:44:00.0"],
        "port_gbps": 400.0,
        "narrower_than_port": True,
        "trained_low": False,
    }
    raised, _ = judge_host(host_of(snapshot(root), 400.0, warning=True))
    assert [f.severity for f in raised] == [Severity.WARNING]


@pytest.mark.parametrize(
    ("gbps", "why"),
    [
        (400.0, "narrower than the port of mlx5_0 and below the Gen5 x16 it supports"),
        (200.0, "below the Gen5 x16 it supports"),  # it still carries 200 Gb/s: the lanes lost are said
    ],
)
def test_it_names_the_gpus_sharing_an_hgx_uplink_trained_at_x8(tmp_path, gbps, why):
    root = str(tmp_path / "sys")
    first = hgx(root, width=8)["switches"][0]  # the first switch's uplink (root port and upstream port) at x8
    findings, unknown = judge_host(host_of(snapshot(root), gbps))
    assert unknown == set()
    assert [(f.kind, f.key) for f in findings] == [(Kind.PCIE_SHARED, f"pcie_shared:cn017/{first['uplink']}")]
    assert findings[0].message == (
        f"cn017: mlx5_0 ({gbps:.0f} Gb/s) and GPU 0000:13:00.0, 0000:14:00.0 share a PCIe switch uplink "
        f"0000:11:00.0 trained Gen5 x8 (~252 Gb/s), {why}: the GPUs' traffic to host memory crosses it beside the "
        "card's; their traffic to each other turns below it (GPUDirect RDMA)"
    )
    assert findings[0].details["gpus"] == first["gpus"] and findings[0].details["devices"] == ["mlx5_0"]


def test_it_names_every_gpu_and_card_below_a_dgx_a100_quadrants_uplink_trained_at_x8(tmp_path):
    dgx_a100(str(tmp_path / "sys"), width=8)
    findings, _ = judge_host(host_of(snapshot(str(tmp_path / "sys"), "dgx01"), 200.0))
    assert [(f.key, f.details["devices"], f.details["gpus"]) for f in findings] == [
        ("pcie_shared:dgx01/0000:01:00.0", ["mlx5_0", "mlx5_1"], ["0000:07:00.0", "0000:0f:00.0"])
    ]


def test_a_shared_uplink_whose_link_is_unknown_is_held_not_cleared(tmp_path):
    root = str(tmp_path / "sys")
    misbuilt(root)
    snap = snapshot(root)
    device(snap, "mlx5_0")["pcie_path"]["hops"][-2].update(current_gts=None)
    assert judge_host(host_of(snap)) == ([], {"pcie_shared:cn017/0000:41:00.0"})


def test_a_gpu_on_socket_1_with_both_ib_cards_on_socket_0_is_flagged(tmp_path):
    root = str(tmp_path / "sys")
    sockets(root, {"mlx5_0": 0, "mlx5_1": 0}, {"0000:c1:00.0": 1})
    findings, _ = judge_host(host_of(snapshot(root)))
    assert [(f.kind, f.severity, f.key) for f in findings] == [
        (Kind.GPU_AFFINITY, Severity.INFO, "gpu_affinity:cn017/0000:c1:00.0")
    ]
    assert findings[0].message.startswith(
        "cn017: GPU 0000:c1:00.0 (NUMA node 1) reaches its nearest IB card mlx5_0 only across the CPU sockets "
        "(SYS); no IB card sits on NUMA node 1"
    )


@pytest.mark.parametrize(
    "cards",
    [{"mlx5_0": 0, "mlx5_1": 1}, {"mlx5_0": 0}],
    ids=["a card on the gpu's socket", "one ib card: no other layout"],
)
def test_a_gpu_is_not_flagged_when_no_better_layout_is_possible_or_one_is_in_place(tmp_path, cards):
    root = str(tmp_path / "sys")
    sockets(root, cards, {"0000:c1:00.0": 1})
    assert judge_host(host_of(snapshot(root))) == ([], set())


def test_a_card_without_a_numa_node_on_a_two_socket_host_is_flagged(tmp_path):
    root = str(tmp_path / "sys")
    sockets(root, {"mlx5_0": -1, "mlx5_1": 0}, {"0000:c1:00.0": 1})
    snap = snapshot(root)
    assert device(snap, "mlx5_0")["pci"]["numa_node"] is None  # the kernel's -1, as the agent sends it
    findings = [f for f in judge_host(host_of(snap))[0] if f.kind is Kind.PCIE_NUMA]
    assert [(f.severity, f.key) for f in findings] == [(Severity.INFO, "pcie_numa:cn017/mlx5_0")]
    assert findings[0].message == (
        "cn017 mlx5_0: NUMA node unknown (-1) on a multi-socket host (NUMA nodes 0, 1): no CPU or GPU affinity "
        "can be judged for it, and its memory and interrupts may land on the far socket; check the BIOS/ACPI "
        "SRAT (NUMA) settings"
    )


def test_a_card_without_a_numa_node_on_a_single_socket_host_says_nothing(tmp_path):
    root = str(tmp_path / "sys")
    sockets(root, {"mlx5_0": -1, "mlx5_1": 0}, {"0000:21:00.0": 0}, cpus={0: "0-63", -1: "0-63"})
    assert judge_host(host_of(snapshot(root))) == ([], set())


def test_the_first_policy_that_says_how_a_shared_uplink_is_reported_decides():
    site = LinkPolicy("gpu-nodes", node="cn*", pcie_shared="warning")
    quiet = LinkPolicy("lab", node="cn017", order=50, pcie_shared="info")
    baseline = LinkPolicy("baseline cn018 mlx5_0/1", node="cn018", device="mlx5_0", port="1", order=0)
    policies = Policies.of([site, quiet, baseline])
    assert policies.pcie_shared("cn017", "mlx5_0", 1) == "info"
    assert policies.pcie_shared("cn018", "mlx5_0", 1) == "warning"  # a baseline says nothing on it
    assert policies.pcie_shared("gpu01", "mlx5_0", 1) is None
    assert policies.match("cn018", "mlx5_0", 1) is baseline


def test_the_fabric_grid_says_a_slow_pcie_path_in_words():
    from fabricweb.dashboard.marks import kind_words

    assert kind_words({"pcie_path"}) == "a PCIe hop above the card too slow or trained low"
