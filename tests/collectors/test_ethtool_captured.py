"""Covers collectors/ethtool.py: the ethtool statistics reader on an `ethtool -S` captured from a real mlx5 port.

The capture (tests/fixtures/ethtool/mlx5-connectx6dx-xdp-5.15.txt, its source in tests/fixtures/README.md) is
a ConnectX-6 Dx at 100G on Linux 5.15, posted to the bpf list with the zero counters left out. Its port ran
link-wide (global) pause, not PFC, so it carries no per-priority pause counters and no pause-storm counters:
the reader gives what the port printed and nothing for what it did not.
"""

from __future__ import annotations

from pathlib import Path

from collectors import ethtool, roce

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "ethtool" / "mlx5-connectx6dx-xdp-5.15.txt"
WANTED = frozenset(roce.ETHTOOL_NAMES)


def test_a_captured_mlx5_ethtool_s_gives_the_lossless_statistics_it_printed():
    stats = ethtool.parse_recorded(CAPTURE.read_text(), WANTED)
    assert stats == {"tx_pause_ctrl_phy": 5745055, "rx_discards_phy": 58591428329}


def test_every_line_of_the_capture_reads_as_a_64_bit_count():
    text = CAPTURE.read_text()
    names = [line.split(":")[0].strip() for line in text.splitlines()[1:]]
    stats = ethtool.parse_recorded(text, frozenset(names))
    assert len(stats) == len(names) == 101  # no name twice, none dropped
    assert stats["rx_bytes_phy"] == 6211329423080  # above 2**32: read as the u64 the kernel gives
    assert stats["tx_global_pause"] == 5745042 and stats["tx_global_pause_duration"] == 771103810
    assert stats["rx_prio0_discards"] == 58591314012
    assert not any(name.startswith(("rx_prio3_pause", "tx_pause_storm")) for name in stats)
