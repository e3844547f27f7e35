"""Debian's prometheus-node-exporter beside our reader: the sysfs trees both read (NE_TREE, PROCFS_TREE), the
series node_exporter's infiniband collector exports and their names, one started on a tree and scraped
(`NodeExporter`), its samples parsed (`ne_samples`, `collector_success`). The parity tests of the reader
(tests/collectors) and of /metrics (tests/exporter) both use them."""

from __future__ import annotations

import subprocess
import tempfile
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from harness import free_port, listens, wait_for
from tests.collectors.sysfs_fixtures import FIXTURES

NE_TREE = FIXTURES / "node-exporter" / "sys"

PROCFS_TREE = FIXTURES / "procfs" / "sys"

# node_exporter metric -> (our per-port dict, sysfs file name). Our values are in the
# same base units as node_exporter's: data counters in bytes (x4), the rest raw.
PORT_COUNTERS: dict[str, tuple[str, str]] = {
    "node_infiniband_excessive_buffer_overrun_errors_total": ("counters", "excessive_buffer_overrun_errors"),
    "node_infiniband_link_downed_total": ("counters", "link_downed"),
    "node_infiniband_link_error_recovery_total": ("counters", "link_error_recovery"),
    "node_infiniband_local_link_integrity_errors_total": ("counters", "local_link_integrity_errors"),
    "node_infiniband_multicast_packets_received_total": ("counters", "multicast_rcv_packets"),
    "node_infiniband_multicast_packets_transmitted_total": ("counters", "multicast_xmit_packets"),
    "node_infiniband_port_constraint_errors_received_total": ("counters", "port_rcv_constraint_errors"),
    "node_infiniband_port_constraint_errors_transmitted_total": ("counters", "port_xmit_constraint_errors"),
    "node_infiniband_port_data_received_bytes_total": ("counters", "port_rcv_data"),
    "node_infiniband_port_data_transmitted_bytes_total": ("counters", "port_xmit_data"),
    "node_infiniband_port_discards_received_total": ("counters", "port_rcv_discards"),
    "node_infiniband_port_discards_transmitted_total": ("counters", "port_xmit_discards"),
    "node_infiniband_port_errors_received_total": ("counters", "port_rcv_errors"),
    "node_infiniband_port_packets_received_total": ("counters", "port_rcv_packets"),
    "node_infiniband_port_packets_transmitted_total": ("counters", "port_xmit_packets"),
    "node_infiniband_port_receive_remote_physical_errors_total": ("counters", "port_rcv_remote_physical_errors"),
    "node_infiniband_port_receive_switch_relay_errors_total": ("counters", "port_rcv_switch_relay_errors"),
    "node_infiniband_port_transmit_wait_total": ("counters", "port_xmit_wait"),
    "node_infiniband_symbol_error_total": ("counters", "symbol_error"),
    "node_infiniband_unicast_packets_received_total": ("counters", "unicast_rcv_packets"),
    "node_infiniband_unicast_packets_transmitted_total": ("counters", "unicast_xmit_packets"),
    "node_infiniband_vl15_dropped_total": ("counters", "VL15_dropped"),
    # Kernels before 4.5: the 64-bit counters in counters_ext/.
    "node_infiniband_legacy_data_received_bytes_total": ("counters_ext", "port_rcv_data_64"),
    "node_infiniband_legacy_data_transmitted_bytes_total": ("counters_ext", "port_xmit_data_64"),
    "node_infiniband_legacy_multicast_packets_received_total": ("counters_ext", "port_multicast_rcv_packets"),
    "node_infiniband_legacy_multicast_packets_transmitted_total": ("counters_ext", "port_multicast_xmit_packets"),
    "node_infiniband_legacy_packets_received_total": ("counters_ext", "port_rcv_packets_64"),
    "node_infiniband_legacy_packets_transmitted_total": ("counters_ext", "port_xmit_packets_64"),
    "node_infiniband_legacy_unicast_packets_received_total": ("counters_ext", "port_unicast_rcv_packets"),
    "node_infiniband_legacy_unicast_packets_transmitted_total": ("counters_ext", "port_unicast_xmit_packets"),
}

STATE = "node_infiniband_state_id"

PHYS_STATE = "node_infiniband_physical_state_id"

RATE = "node_infiniband_rate_bytes_per_second"

INFO = "node_infiniband_info"

KNOWN = {*PORT_COUNTERS, STATE, PHYS_STATE, RATE, INFO}

Key = tuple[str, str, str]  # metric, device, port


def _wait_listening(proc: subprocess.Popen, port: int, timeout: float = 10.0) -> bool:
    """Whether it came to listen on `port`; not if it exited first (most likely the port was taken meanwhile)."""
    try:
        return wait_for(f"node_exporter listening on {port}", lambda: listens(port), timeout, 0.02, watch=[proc])
    except AssertionError:
        return False


class NodeExporter:
    """Starts node_exporter with only the infiniband collector; the fixture kills every one started."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.procs: list[subprocess.Popen] = []

    def start(self, sysfs_root: Path) -> str:
        """Start one on `sysfs_root`, wait until it listens, return its /metrics URL."""
        log = b""
        for _ in range(3):  # the free port can be taken between probing and binding it
            port = free_port()
            # Its log goes to a file: a pipe nobody drains could fill and stall it.
            with tempfile.TemporaryFile() as err:
                proc = subprocess.Popen(
                    [
                        self.binary,
                        f"--path.sysfs={sysfs_root}",
                        "--collector.disable-defaults",
                        "--collector.infiniband",
                        f"--web.listen-address=127.0.0.1:{port}",
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=err,
                )
                self.procs.append(proc)
                if _wait_listening(proc, port):
                    return f"http://127.0.0.1:{port}/metrics"
                self.stop(proc)
                err.seek(0)
                log = err.read()
        pytest.fail(f"node_exporter did not start listening: {log.decode(errors='replace')[-2000:]}")

    def scrape(self, sysfs_root: Path) -> str:
        """One scrape of a fresh node_exporter on `sysfs_root`, stopped afterwards."""
        url = self.start(sysfs_root)
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                return resp.read().decode()
        finally:
            self.stop(self.procs[-1])

    @staticmethod
    def stop(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)

    def close(self) -> None:
        for proc in self.procs:
            self.stop(proc)


def ne_samples(text: str) -> tuple[dict[Key, float], dict[str, dict[str, str]]]:
    """node_infiniband_* values keyed by (metric, device, port), and info labels by device."""
    values: dict[Key, float] = {}
    info: dict[str, dict[str, str]] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if not s.name.startswith("node_infiniband_"):
                continue
            assert s.name in KNOWN, f"node_exporter reports {s.name}, unmapped here: extend PORT_COUNTERS"
            if s.name == INFO:
                info[s.labels["device"]] = {k: v for k, v in s.labels.items() if k != "device"}
                continue
            key = (s.name, s.labels["device"], s.labels["port"])
            assert key not in values, f"duplicate series {key}"
            values[key] = s.value
    return values, info


def collector_success(text: str) -> float | None:
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "node_scrape_collector_success" and s.labels.get("collector") == "infiniband":
                return s.value
    return None
