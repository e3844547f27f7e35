"""The port's panel on the shipped Grafana dashboard (deploy/grafana/), when FABRIC_GRAFANA_URL says where
Grafana is: a NOC coming from Grafana opens the same port there in one click.

The dashboard's uid and the port panel's id are deploy/grafana/dashboard.py's (tests/dashboard check that
the shipped JSON has them); its variables node, device and port are the exporter's labels.
"""

from __future__ import annotations

from urllib.parse import urlencode

DASHBOARD_UID = "fabricweb-infiniband"
PORT_PANEL = 301  # "Throughput against capacity", the port drill-down's first panel


def port_panel_url(base: str | None, node: str, device: str, port: int) -> str | None:
    """`https://grafana/d/fabricweb-infiniband/?var-node=cn001&var-device=mlx5_0&var-port=1&viewPanel=301`;
    None without a Grafana address. Names are quoted: a node's name is untrusted text."""
    if not base:
        return None
    query = urlencode({"var-node": node, "var-device": device, "var-port": str(port), "viewPanel": PORT_PANEL})
    return f"{base.rstrip('/')}/d/{DASHBOARD_UID}/?{query}"
