"""The recording rules: rates over the raw counters, computed once per evaluation for the Grafana dashboard
and the alerts."""

from __future__ import annotations

from .model import Group, Record, block

RECORDING = (
    Group(
        "fabricweb-recording",
        (
            Record("infiniband:port_data_received_bytes:rate1m", "rate(infiniband_port_data_received_bytes_total[1m])"),
            Record(
                "infiniband:port_data_transmitted_bytes:rate1m",
                "rate(infiniband_port_data_transmitted_bytes_total[1m])",
            ),
            Record(
                "infiniband:port_utilisation:ratio1m",
                block(
                    "max by (node, device, port) (",
                    '  {__name__=~"infiniband:port_data_(received|transmitted)_bytes:rate1m"}',
                    ")",
                    "/ on (node, device, port) (infiniband_rate_bytes_per_second > 0)",
                ),
                ("Share of the link's capacity in use, the busier direction (0-1).",),
            ),
            Record(
                "infiniband:port_xmit_wait:ratio1m",
                "avg_over_time(infiniband_port_congestion_ratio[1m])",
                comment=(
                    "Share of the link's time lost waiting for credits, as fabricweb turns port_xmit_wait into it",
                    "per poll (bytes per count by the device's id: docs/infiniband.md section 3b).",
                ),
            ),
            Record("infiniband:symbol_error:rate1m", "rate(infiniband_symbol_error_total[1m])"),
            Record("infiniband:port_errors_received:rate1m", "rate(infiniband_port_errors_received_total[1m])"),
            Record("infiniband:ports_up:count", "count by (node) (infiniband_port_up == 1)"),
            Record("infiniband:ports_degraded:count", "count by (node) (infiniband_port_degraded == 1)"),
            Record(
                "infiniband:switch_port_data_received_bytes:rate1m",
                "rate(infiniband_switch_port_receive_data_bytes_total[1m])",
                ("Switch ports (infiniband_switch_port_*, labels guid, port, switch).",),
            ),
            Record(
                "infiniband:switch_port_data_transmitted_bytes:rate1m",
                "rate(infiniband_switch_port_transmit_data_bytes_total[1m])",
            ),
            Record(
                "infiniband:switch_port_utilisation:ratio1m",
                block(
                    "max by (guid, port, switch) (",
                    '  {__name__=~"infiniband:switch_port_data_(received|transmitted)_bytes:rate1m"}',
                    ")",
                    "/ on (guid, port, switch) (infiniband_switch_port_rate_bytes_per_second > 0)",
                ),
            ),
            Record("infiniband:switch_port_symbol_error:rate1m", "rate(infiniband_switch_port_symbol_error_total[1m])"),
            Record(
                "infiniband:switch_port_errors_received:rate1m",
                "rate(infiniband_switch_port_receive_errors_total[1m])",
            ),
            Record(
                "infiniband:switch_port_xmit_wait:ratio1m",
                "avg_over_time(infiniband_switch_port_congestion_ratio[1m])",
            ),
        ),
    ),
)
