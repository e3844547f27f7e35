"""Covers collectors/link.py.

The rate parser and the history-free link judgement, table-tested."""

from __future__ import annotations

import itertools

import pytest

from collectors.link import (
    SPEED_RANK,
    SPEEDS,
    WIDTHS,
    Rate,
    RateError,
    better_link,
    judge_link,
    make_rate,
    parse_rate,
)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2.5 Gb/sec (1X SDR)", Rate(2.5, 1, "SDR")),
        ("10 Gb/sec (4X)", Rate(10.0, 4, "SDR")),
        ("10 Gb/sec (4X SDR)", Rate(10.0, 4, "SDR")),
        ("20 Gb/sec (4X DDR)", Rate(20.0, 4, "DDR")),
        ("40 Gb/sec (4X QDR)", Rate(40.0, 4, "QDR")),
        ("40 Gb/sec (4X FDR10)", Rate(40.0, 4, "FDR10")),
        ("56 Gb/sec (4X FDR)", Rate(56.0, 4, "FDR")),
        ("14 Gb/sec (1X FDR)", Rate(14.0, 1, "FDR")),
        ("100 Gb/sec (4X EDR)", Rate(100.0, 4, "EDR")),
        ("25 Gb/sec (1X EDR)", Rate(25.0, 1, "EDR")),
        ("300 Gb/sec (12X EDR)", Rate(300.0, 12, "EDR")),
        ("200 Gb/sec (4X HDR)", Rate(200.0, 4, "HDR")),
        ("100 Gb/sec (2X HDR)", Rate(100.0, 2, "HDR")),
        ("400 Gb/sec (4X NDR)", Rate(400.0, 4, "NDR")),
        ("800 Gb/sec (4X XDR)", Rate(800.0, 4, "XDR")),
        ("400 Gb/sec (8X HDR)", Rate(400.0, 8, "HDR")),
        ("0 GB/sec", Rate(0.0, None, None)),
        ("100 Gb/sec (4X EDR)\n", Rate(100.0, 4, "EDR")),
    ],
)
def test_it_parses_kernel_rate_strings(text, expected):
    assert parse_rate(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "unrecognised"),
        ("fast", "unrecognised"),
        ("100 Gb/sec (4X WARP)", "unknown speed"),
        ("100 Gb/sec (3X EDR)", "not an InfiniBand width"),
        ("40 Gb/sec (4X EDR)", "is 100 Gb/s, not 40"),
        ("100 Gb/sec", "gives no width"),
        ("-40 Gb/sec (4X QDR)", "unrecognised"),
        ("40 Mb/sec (4X QDR)", "unrecognised"),
    ],
)
def test_it_rejects_odd_rate_strings_with_a_reason(text, why):
    with pytest.raises(RateError, match=why):
        parse_rate(text)


def test_rates_carry_bytes_per_second_like_node_exporter():
    assert parse_rate("40 Gb/sec (4X QDR)").bytes_per_second == 5e9
    assert parse_rate("10 Gb/sec (4X)").bytes_per_second == 1.25e9


def test_every_speed_and_width_round_trips_through_the_kernel_format():
    for speed, lanes in itertools.product(SPEEDS, WIDTHS):
        rate = make_rate(speed.name, lanes)
        text = f"{rate.describe().split(' (')[0].replace('Gb/s', 'Gb/sec')} ({lanes}X {speed.name})"
        assert parse_rate(text) == rate


PAIRS = list(itertools.product(SPEEDS, WIDTHS))


@pytest.mark.parametrize(("actual_speed", "actual_lanes"), PAIRS, ids=lambda v: getattr(v, "name", str(v)))
@pytest.mark.parametrize("expected", [("EDR", 4), ("HDR", 4), ("QDR", 4), ("NDR", 2), ("FDR10", 12)])
def test_it_judges_speed_and_width_separately(actual_speed, actual_lanes, expected):
    actual = make_rate(actual_speed.name, actual_lanes)
    want = make_rate(*expected)
    finding = judge_link(actual, want)
    slow = SPEED_RANK[actual_speed.name] < SPEED_RANK[expected[0]]
    narrow = actual_lanes < expected[1]
    if not (slow or narrow):
        assert finding is None
        return
    assert finding is not None
    assert (finding.speed_downgrade, finding.width_downgrade) == (slow, narrow)
    assert finding.message.startswith(f"trained at {actual.describe()}, expected {want.describe()}: ")
    if slow and narrow:
        assert "speed and width downgrade" in finding.message
        assert finding.kind == "speed+width"
    elif slow:
        assert "speed downgrade" in finding.message
        assert f"{actual_speed.name} where {expected[0]} expected" in finding.message
    else:
        assert "width downgrade" in finding.message
        assert f"{actual_lanes}X where {expected[1]}X expected" in finding.message


def test_it_flags_a_100g_port_that_came_up_at_40g():
    finding = judge_link(parse_rate("40 Gb/sec (4X QDR)"), parse_rate("100 Gb/sec (4X EDR)"))
    assert finding.message == (
        "trained at 40 Gb/s (4X QDR), expected 100 Gb/s (4X EDR): speed downgrade (QDR where EDR expected)"
    )


def test_it_flags_width_downgrade():
    finding = judge_link(parse_rate("25 Gb/sec (1X EDR)"), parse_rate("100 Gb/sec (4X EDR)"))
    assert finding.message == (
        "trained at 25 Gb/s (1X EDR), expected 100 Gb/s (4X EDR): width downgrade (1X where 4X expected)"
    )


def test_it_tells_qdr_from_fdr10_at_the_same_total():
    finding = judge_link(parse_rate("40 Gb/sec (4X QDR)"), parse_rate("40 Gb/sec (4X FDR10)"))
    assert finding is not None and finding.kind == "speed"
    assert judge_link(parse_rate("40 Gb/sec (4X FDR10)"), parse_rate("40 Gb/sec (4X QDR)")) is None


def test_a_port_with_no_link_is_not_judged_here():
    assert judge_link(parse_rate("0 GB/sec"), make_rate("EDR", 4)) is None


def test_better_link_takes_the_faster_speed_and_wider_width():
    assert better_link(make_rate("HDR", 1), make_rate("EDR", 4)) == make_rate("HDR", 4)
    assert better_link(None, make_rate("EDR", 4)) == make_rate("EDR", 4)
    assert better_link(parse_rate("0 GB/sec"), None) is None


def test_an_ethernet_link_is_judged_in_ethernet_words():
    found = judge_link(make_rate("QDR", 4), make_rate("EDR", 4), ethernet=True)
    assert found.message == "100GbE trained at 40GbE: speed downgrade (10 Gb/s lanes where 25 Gb/s expected)"
    narrow = judge_link(make_rate("EDR", 1), make_rate("EDR", 4), ethernet=True)
    assert narrow.message == "100GbE trained at 25GbE: width downgrade (1 lane where 4 expected)"
    assert (narrow.kind, make_rate("EDR", 4).named(True), make_rate("EDR", 4).named()) == ("width", "100GbE", "4X EDR")
