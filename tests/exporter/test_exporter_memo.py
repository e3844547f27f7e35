"""Covers fabricweb/exporter/encoder.py, fabricweb/exporter/kepttext.py, fabricweb/exporter/grouped.py,
fabricweb/exporter/hostports.py, fabricweb/exporter/selection.py, fabricweb/exporter/views.py; through them
fabricweb/exporter/auth.py.

The health series kept across scrapes (fabricweb/exporter/grouped.py, encoder.py's kept lines)
never serve a stale line: a port whose link, state or expectation changed, a renamed node and a
re-flashed device show their new values in the next scrape, the same bytes as prometheus_client;
the memos stay bounded; and the fast rendering of counts is floatToGoString's."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.utils import floatToGoString

from fabricweb.exporter import encoder, grouped, hostports
from fabricweb.exporter.kepttext import KEPT
from fabricweb.exporter.selection import Selection
from fabricweb.inventory.models import Device, Node, Port
from tests.exporter.exporter_support import assert_scrapes_match, by_name, port, scrape, small_fabric


def test_a_port_whose_link_changes_between_scrapes_shows_the_new_values(client, each_db):
    small_fabric()
    first = scrape(client, set="health")
    cn000 = port("cn000", "mlx5_0", 1)
    assert by_name(first, "infiniband_port_degraded")[cn000] == 0
    assert by_name(scrape(client, set="detail"), "infiniband_port_lanes")[cn000] == 4

    # The link retrains at 1X QDR: same port, other values, so another key.
    Port.objects.filter(device__node__name="cn000", number=1).update(speed="QDR", lanes=1, rate_gbps=10.0)
    second = scrape(client, set="health")
    assert by_name(second, "infiniband_port_degraded")[cn000] == 1
    assert by_name(second, "infiniband_rate_bytes_per_second")[cn000] == 1.25e9
    detail = scrape(client, set="detail")
    assert by_name(detail, "infiniband_port_lanes")[cn000] == 1
    info = [labels for labels in by_name(detail, "infiniband_port_info") if ("port", "1") in labels]
    assert {dict(labels)["width"] for labels in info if ("node", "cn000") in labels} == {"1X"}
    # The other ports' lines, served from the memo, are unchanged.
    assert by_name(detail, "infiniband_port_lanes")[port("cn001", "mlx5_0", 1)] == 4
    assert_scrapes_match(Selection("health"))
    assert_scrapes_match(Selection("detail"))

    # It goes down: no longer up, not degraded, and its kept lines of before are not served.
    Port.objects.filter(device__node__name="cn000", number=1).update(state_id=1, phys_state_id=3)
    third = scrape(client, set="health")
    assert by_name(third, "infiniband_port_up")[cn000] == 0
    assert by_name(third, "infiniband_port_degraded")[cn000] == 0
    assert by_name(third, "infiniband_state_id")[cn000] == 1
    assert_scrapes_match()


def test_a_renamed_node_and_reflashed_firmware_show_in_the_next_scrape(client, each_db):
    small_fabric()
    scrape(client)
    Node.objects.filter(name="cn001").update(name="gpu001")
    Device.objects.filter(node__name="gpu000").update(fw_ver="x")  # no such node: nothing changes
    Device.objects.filter(node__name="cn000").update(fw_ver="28.39.1002", pci_current_width=8)
    text = scrape(client)
    assert port("gpu001", "mlx5_0", 2) in by_name(text, "infiniband_port_up")
    assert not any(("node", "cn001") in labels for labels in by_name(text, "infiniband_port_up"))
    firmware = {dict(labels)["node"]: dict(labels)["firmware_version"] for labels in by_name(text, "infiniband_info")}
    assert firmware == {"cn000": "28.39.1002", "gpu001": "20.31.1014"}
    width = by_name(scrape(client, set="pcie"), "infiniband_device_pcie_link_width_lanes")
    assert width[frozenset({"node": "cn000", "device": "mlx5_0"}.items())] == 8
    assert_scrapes_match()


def test_the_memos_stay_bounded_and_right_when_they_overflow(client, each_db, monkeypatch):
    monkeypatch.setattr(grouped, "MAX_MEMO_ROWS", 3)
    monkeypatch.setattr(encoder, "MAX_KEPT_ROWS", 3)
    monkeypatch.setattr(KEPT, "row_lines", {})  # not the earlier tests' families
    small_fabric(nodes=3)  # 6 ports, 3 devices: more rows than either memo keeps
    for speed, rate in (("HDR", 200.0), ("EDR", 100.0), ("FDR", 56.0), ("EDR", 100.0)):
        Port.objects.update(speed=speed, rate_gbps=rate)
        text = scrape(client, set="health")
        assert set(by_name(text, "infiniband_rate_bytes_per_second").values()) == {rate * 1e9 / 8}
        assert len(by_name(scrape(client, set="detail"), "infiniband_port_info")) == 6
        assert len(hostports.port_memo) <= 3
        assert len(hostports.port_detail_memo) <= 3
        assert len(hostports.device_memo) <= 3
        # The kept lines: at most one scrape's rows (6 ports) once past the bound.
        assert max(len(kept) for kept in KEPT.row_lines.values()) <= 6
        assert_scrapes_match(Selection("health"))


@pytest.mark.parametrize(
    "n", [0, 1, 9, 10, 999_999, 1_000_000, 1_000_001, 1_200_000, 9_999_999, 10**15, 2**53 - 2, 2**53 - 1]
)
def test_counts_render_as_float_to_go_string_does(n):
    assert encoder.go_int_texts([n]) == [floatToGoString(n)]


@given(st.lists(st.integers(min_value=0, max_value=encoder.EXACT_INTS - 1), max_size=50))
def test_any_counts_below_two_to_the_53_render_as_float_to_go_string_does(values):
    assert encoder.go_int_texts(values) == list(map(floatToGoString, values))


def test_text_and_openmetrics_scrapes_keep_one_copy_of_what_they_render_alike(client, each_db, monkeypatch):
    # A Prometheus (OpenMetrics) and a curl (text) scraping one web process: the health lines
    # and label texts both formats render alike are kept once, and each format's bytes stay its own.
    monkeypatch.setattr(KEPT, "row_lines", {})
    monkeypatch.setattr(KEPT, "label_texts", {})
    small_fabric()
    text = scrape(client)
    openmetrics = client.get("/metrics", HTTP_ACCEPT="application/openmetrics-text;version=1.0.0").getvalue().decode()
    assert openmetrics.endswith("# EOF\n") and not text.endswith("# EOF\n")
    assert by_name(openmetrics, "infiniband_port_up") == by_name(text, "infiniband_port_up")

    kept: dict[tuple, list[dict[int, str]]] = {}
    for (_, *family), lines in KEPT.row_lines.items():
        kept.setdefault(tuple(family), []).append(lines)
    port_up = next(lines for family, lines in kept.items() if family[0] == "infiniband_port_up")
    assert len(port_up) == 2 and len(port_up[0]) == 4  # two formats, four ports
    for lines in kept.values():
        assert len(lines) == 2
        first, second = lines
        assert first.keys() == second.keys()
        assert all(first[key] is second[key] for key in first)  # one string, not two equal ones

    cached = list(KEPT.label_texts.values())
    assert cached and all(sum(t is not None for t in texts) == 2 for texts in cached)  # both formats
    assert all(len({id(t) for t in texts if t is not None}) == 1 for texts in cached)  # one string
    # Only the label sets the counters share (a port's, a device's) are cached, not port_info's.
    assert all(len(key) <= 3 for key in KEPT.label_texts)
    assert_scrapes_match()
