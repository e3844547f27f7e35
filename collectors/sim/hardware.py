"""What the simulated HCAs are: models, counter files and their widths.

Values follow what the kernel drivers print (mlx4, mlx5) and the real trees in
tests/fixtures; see docs/infiniband.md §1-3.
"""

from __future__ import annotations

from dataclasses import dataclass

from .. import counters as pma
from ..link import SPEED_BY_NAME, format_gbps


@dataclass(frozen=True, slots=True)
class HcaModel:
    kind: str  # key in MODELS, also the node kind
    title: str
    driver: str  # device name prefix: mlx5_0, mlx4_0
    hca_type: str
    pci_device: str  # PCI device id, the PCI function's `device` file
    board_id: str
    fw_ver: str
    hw_rev: str
    speed: str  # native link speed; ConnectX-3 nodes pick QDR or FDR10 per node
    lanes: int
    link_layer: str
    cap_mask: int
    pcie_gts: float
    pcie_width: int
    old_pma: bool  # 32-bit data/packet counters in counters/, 64-bit copies in counters_ext/
    hw_counters: bool
    default_ports: int
    default_hcas: int


MODELS: dict[str, HcaModel] = {
    m.kind: m
    for m in (
        HcaModel(
            "cx6", "ConnectX-6", "mlx5", "MT4123", "0x101b", "MT_0000000223", "20.39.2048", "0",
            "HDR", 4, "InfiniBand", 0xA651E848, 16.0, 16, False, True, 1, 2,
        ),
        HcaModel(
            "cx7", "ConnectX-7", "mlx5", "MT4129", "0x1021", "MT_0000000838", "28.39.2048", "0",
            "NDR", 4, "InfiniBand", 0xA651E848, 32.0, 16, False, True, 1, 2,
        ),
        HcaModel(
            "cx3", "ConnectX-3", "mlx4", "MT4099", "0x1003", "MT_1090120019", "2.42.5000", "1",
            "QDR", 4, "InfiniBand", 0x02514868, 8.0, 8, True, False, 2, 1,
        ),
        # A RoCE NIC: mlx5 reports a 100GbE link as 4X EDR in `rate`.
        HcaModel(
            "roce", "ConnectX-6 Dx (RoCE)", "mlx5", "MT4125", "0x101d", "MT_0000000359", "22.39.2048", "0",
            "EDR", 4, "Ethernet", 0x04010000, 16.0, 16, False, True, 1, 2,
        ),
    )
}  # fmt: skip

PCI_VENDOR = "0x15b3"  # Mellanox

# counters/ as the kernel lists it for a PMA with extended counters (the mlx5 fixture).
PMA_COUNTERS: tuple[str, ...] = tuple(pma.PMA_WIDTH_BITS)
EXTENDED_ONLY = ("unicast_xmit_packets", "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets")
COUNTERS: tuple[str, ...] = PMA_COUNTERS + EXTENDED_ONLY
# Extended PMAs widen only these to 64 bits; the rest keep their PortCounters width.
WIDE_ON_EXTENDED = frozenset({"port_xmit_data", "port_rcv_data", "port_xmit_packets", "port_rcv_packets"})

# Legacy counters_ext/ (kernels before 4.5): file name -> the counter it mirrors at 64 bits.
COUNTERS_EXT: dict[str, str] = {
    "port_xmit_data_64": "port_xmit_data",
    "port_rcv_data_64": "port_rcv_data",
    "port_xmit_packets_64": "port_xmit_packets",
    "port_rcv_packets_64": "port_rcv_packets",
    "port_unicast_xmit_packets": "unicast_xmit_packets",
    "port_unicast_rcv_packets": "unicast_rcv_packets",
    "port_multicast_xmit_packets": "multicast_xmit_packets",
    "port_multicast_rcv_packets": "multicast_rcv_packets",
}

# mlx5 per-port hw_counters (the names in the procfs fixture), plus the RoCE congestion ones.
HW_COUNTERS: tuple[str, ...] = (
    "duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "out_of_buffer", "out_of_sequence",
    "packet_seq_err", "req_cqe_error", "req_cqe_flush_error", "req_remote_access_errors",
    "req_remote_invalid_request", "resp_cqe_error", "resp_cqe_flush_error", "resp_local_length_error",
    "resp_remote_access_errors", "rnr_nak_retry_err", "roce_adp_retrans", "roce_adp_retrans_to",
    "roce_slow_restart", "roce_slow_restart_cnps", "roce_slow_restart_trans", "rx_atomic_requests",
    "rx_dct_connect", "rx_read_requests", "rx_write_requests",
)  # fmt: skip
ROCE_HW_COUNTERS: tuple[str, ...] = ("np_cnp_sent", "np_ecn_marked_roce_packets", "rp_cnp_handled", "rp_cnp_ignored")
HW_LIFESPAN_MS = "10"

# What a port with no link prints: ConnectX reports 4X SDR (ibstat's "Rate: 10").
NO_LINK_RATE = "10 Gb/sec (4X SDR)"

# PCIe: GT/s per generation, and usable Gb/s per lane after line encoding.
PCIE_GTS = {1: 2.5, 2: 5.0, 3: 8.0, 4: 16.0, 5: 32.0, 6: 64.0}
PCIE_WIDTHS = (1, 2, 4, 8, 16, 32)


def pcie_usable_gbps(gts: float, width: int) -> float:
    per_lane = gts * 0.8 if gts < 8 else gts * 128 / 130  # 8b/10b up to Gen2, 128b/130b after
    return per_lane * width


def pcie_speed_text(gts: float) -> str:
    return f"{gts:.1f} GT/s PCIe"


def counter_bits(model: HcaModel, name: str) -> int:
    if not model.old_pma and name in WIDE_ON_EXTENDED:
        return 64
    return pma.width_bits(name)


def rate_text(speed: str, lanes: int) -> str:
    """The kernel's `rate`: per-lane Gb/s × lanes, one decimal only when needed."""
    return f"{format_gbps(SPEED_BY_NAME[speed].lane_gbps * lanes)} Gb/sec ({lanes}X {speed})"


def rate_gbps(speed: str, lanes: int) -> float:
    return SPEED_BY_NAME[speed].lane_gbps * lanes
