"""The fabricweb Grafana dashboard, built with Grafana's typed builders (grafana-foundation-sdk).

A field or option Grafana does not know is an AttributeError here, not a silently ignored
key in hand-written JSON. The JSON sites import is generated from this file:

    .venv/bin/python deploy/grafana/dashboard.py      # writes deploy/grafana/dashboards/fabricweb.json

and tests/deploy/test_grafana_dashboard.py fails when the two differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

from grafana_foundation_sdk.builders.common import ReduceDataOptions, VizLegendOptions, VizTooltipOptions
from grafana_foundation_sdk.builders.dashboard import Dashboard, DatasourceVariable, QueryVariable, Row
from grafana_foundation_sdk.builders.prometheus import Dataquery
from grafana_foundation_sdk.builders.stat import Panel as Stat
from grafana_foundation_sdk.builders.table import Panel as Table
from grafana_foundation_sdk.builders.timeseries import Panel as Timeseries
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.common import LegendDisplayMode, LegendPlacement, SortOrder, TooltipDisplayMode
from grafana_foundation_sdk.models.dashboard import DataSourceRef, VariableRefresh, VariableSort
from grafana_foundation_sdk.models.prometheus import PromQueryFormat

OUT = Path(__file__).parent / "dashboards" / "fabricweb.json"
UID = "fabricweb-infiniband"
PORT_PANEL = 301  # the port drill-down's throughput panel; fabricweb/dashboard/grafana.py names it too
DATASOURCE = DataSourceRef(type_val="prometheus", uid="${datasource}")
PORT = 'node=~"$node", device=~"$device", port=~"$port"'
NODE = 'node=~"$node"'
PORT_LEGEND = "{{node}} {{device}}/{{port}}"
SWITCH = 'switch=~"$switch"'
SWITCH_PORT_LEGEND = "{{switch}} port {{port}}"


def query(expr: str, legend: str = "", ref: str = "A") -> Dataquery:
    q = Dataquery().expr(expr).ref_id(ref).datasource(DATASOURCE)
    return q.legend_format(legend) if legend else q


def stat(title: str, expr: str, unit: str = "none", description: str = "") -> Stat:
    return (
        Stat().title(title).description(description).unit(unit).height(4).span(4).datasource(DATASOURCE)
        .reduce_options(ReduceDataOptions().calcs(["lastNotNull"]).values(False))
        .with_target(query(expr))
    )  # fmt: skip


def timeseries(title: str, unit: str, *targets: tuple[str, str], span: int = 12, description: str = "") -> Timeseries:
    panel = (
        Timeseries().title(title).description(description).unit(unit).height(8).span(span).datasource(DATASOURCE)
        .legend(VizLegendOptions().display_mode(LegendDisplayMode.LIST).placement(LegendPlacement.BOTTOM).show_legend(True))
        .tooltip(VizTooltipOptions().mode(TooltipDisplayMode.MULTI).sort(SortOrder.DESCENDING))
        .line_width(1).fill_opacity(10)
    )  # fmt: skip
    for i, (expr, legend) in enumerate(targets):
        panel = panel.with_target(query(expr, legend, ref=chr(ord("A") + i)))
    return panel


def table(title: str, expr: str, description: str) -> Table:
    return (
        Table().title(title).show_header(True).description(description).height(8).span(12).datasource(DATASOURCE)
        .with_target(query(expr).instant().format(PromQueryFormat.TABLE))
    )  # fmt: skip


def variable(name: str, label: str, expr: str) -> QueryVariable:
    return (
        QueryVariable(name).label(label).datasource(DATASOURCE).query(expr)
        .refresh(VariableRefresh.ON_TIME_RANGE_CHANGED).sort(VariableSort.ALPHABETICAL_ASC)
        .multi(True).include_all(True).all_value(".*")
    )  # fmt: skip


def build() -> Dashboard:
    port = PORT_LEGEND
    return (
        Dashboard("InfiniBand fabric (fabricweb)")
        .uid(UID)
        .tags(["infiniband", "fabricweb"])
        .description("Links, throughput, errors and congestion of every InfiniBand port fabricweb monitors.")
        .refresh("30s")
        .time("now-3h", "now")
        .with_variable(DatasourceVariable("datasource").label("Data source").type("prometheus"))
        # infiniband_port_expected_up: every host port has one in the default set, a stale node's included.
        .with_variable(variable("node", "Node", "label_values(infiniband_port_expected_up, node)"))
        .with_variable(variable("device", "Device", 'label_values(infiniband_port_expected_up{node=~"$node"}, device)'))
        .with_variable(
            variable(
                "port", "Port", 'label_values(infiniband_port_expected_up{node=~"$node", device=~"$device"}, port)'
            )
        )
        .with_variable(variable("switch", "Switch", "label_values(infiniband_switch_info, switch)"))
        # -- the whole fabric ---------------------------------------------------------------
        .with_row(Row("Fabric overview").id(100))
        .with_panel(
            stat(
                "Ports up",
                "sum(infiniband_port_up)",
                description="ACTIVE and reported by their node (a stale node's ports have no sample: unknown)",
            )
        )
        .with_panel(
            stat(
                "Ports down",
                "count((infiniband_port_up == 0) and on (node, device, port) (infiniband_port_expected_up == 1))"
                " or vector(0)",
                description="Not ACTIVE, or gone, and expected up (a policy, the expected cabling, or it has been up):"
                " a port never connected is not down",
            )
        )
        .with_panel(
            stat("Ports degraded", "sum(infiniband_port_degraded)", description="Up, below the expected speed or width")
        )
        .with_panel(stat("Nodes stale", "sum(1 - infiniband_node_up)", description="No snapshot stored recently"))
        .with_panel(stat("Critical events open", 'sum(infiniband_events_open{severity="critical"})'))
        .with_panel(stat("Warning events open", 'sum(infiniband_events_open{severity="warning"})'))
        .with_panel(
            timeseries(
                "Fabric throughput",
                "Bps",
                ("sum(infiniband:port_data_received_bytes:rate1m)", "received"),
                ("sum(infiniband:port_data_transmitted_bytes:rate1m)", "transmitted"),
            )
        )
        .with_panel(
            timeseries(
                "Busiest ports (share of link capacity)",
                "percentunit",
                ("topk(10, infiniband:port_utilisation:ratio1m)", port),
            )
        )
        .with_panel(
            Table()
            .title("Ports not at their expected link")
            .show_header(True)
            .description(
                "Trained below the expected speed or width: actual and expected link, why expected, and the far "
                "end of the cable where the fabric view knows it"
            )
            .height(8)
            .span(24)
            .datasource(DATASOURCE)
            .with_target(
                query(
                    "(infiniband_port_degraded == 1) * on (node, device, port) group_left "
                    "(speed, width, expected_speed, expected_width, expected_source, peer) "
                    "infiniband_port_degraded_info"
                )
                .instant()
                .format(PromQueryFormat.TABLE)
            )
        )
        .with_panel(
            timeseries(
                "Symbol errors (top 10 ports)",
                "short",
                ("topk(10, infiniband:symbol_error:rate1m) * 3600", port),
                description="symbol errors/h; above 120/h the bit error rate is worse than 1e-12",
            )
        )
        .with_panel(
            timeseries(
                "Congestion (top 10 ports)",
                "percentunit",
                ("topk(10, infiniband:port_xmit_wait:ratio1m)", port),
                description="Share of the link's time lost waiting for credits (infiniband_port_congestion_ratio)",
            )
        )
        # -- the switches (the fabric collector's sweeps) ---------------------------------------
        .with_row(Row("Switches").id(400))
        .with_panel(
            stat(
                "Switches unreachable",
                "sum(1 - infiniband_switch_up)",
                description="Not reached by the last full fabric sweep: their ports keep their last values",
            )
        )
        .with_panel(
            stat(
                "Switch links down",
                "count(infiniband_link_up == 0) or vector(0)",
                description="Inter-switch links and links to agentless adapters that were up and are down "
                "(a host's own link counts in Ports down)",
            )
        )
        .with_panel(
            stat(
                "Switch links degraded",
                "count(infiniband_link_degraded == 1) or vector(0)",
                description="Inter-switch links and links to agentless adapters, up and trained below what both "
                "ends support (a host's own link counts in Ports degraded)",
            )
        )
        .with_panel(stat("Switch ports up", "sum(infiniband_switch_port_up)", description="ACTIVE switch ports"))
        .with_panel(
            stat(
                "Fabric collectors sweeping",
                "sum(infiniband_fabric_collector_up)",
                description="Fabric collectors whose sweeps arrive (one leads, a second stands by)",
            )
        )
        .with_panel(
            stat(
                "Critical switch events open",
                'sum(infiniband_switch_events_open{severity="critical"}) or vector(0)',
            )
        )
        .with_panel(
            timeseries(
                "Switch-port throughput (busiest 10)",
                "Bps",
                (
                    f"topk(10, infiniband:switch_port_data_transmitted_bytes:rate1m{{{SWITCH}}})",
                    f"{SWITCH_PORT_LEGEND} sent",
                ),
                (
                    f"topk(10, infiniband:switch_port_data_received_bytes:rate1m{{{SWITCH}}})",
                    f"{SWITCH_PORT_LEGEND} received",
                ),
            )
        )
        .with_panel(
            timeseries(
                "Busiest switch ports (share of link capacity)",
                "percentunit",
                (f"topk(10, infiniband:switch_port_utilisation:ratio1m{{{SWITCH}}})", SWITCH_PORT_LEGEND),
            )
        )
        .with_panel(
            timeseries(
                "Switch-port errors (top 10)",
                "short",
                (
                    f"topk(10, infiniband:switch_port_symbol_error:rate1m{{{SWITCH}}}) * 3600",
                    f"{SWITCH_PORT_LEGEND} symbol errors/h",
                ),
                (
                    f"topk(10, infiniband:switch_port_errors_received:rate1m{{{SWITCH}}}) * 3600",
                    f"{SWITCH_PORT_LEGEND} receive errors/h",
                ),
                (
                    f"topk(10, rate(infiniband_switch_port_link_downed_total{{{SWITCH}}}[$__rate_interval])) * 3600",
                    f"{SWITCH_PORT_LEGEND} link downs/h",
                ),
                description="Counter rates per hour, the unit of the health thresholds (symbol errors: 120/h)",
            )
        )
        .with_panel(
            timeseries(
                "Switch ports down",
                "short",
                (f"count by (switch) (infiniband_switch_port_up{{{SWITCH}}} == 0)", "{{switch}} ports down"),
                description="Every switch port not ACTIVE, unused ones included; cables that were up are in "
                "Switch links down",
            )
        )
        .with_panel(
            table(
                "Switch links down (both ends)",
                "infiniband_link_up == 0",
                "Inter-switch and adapter links that were up and are down: end (the port that speaks for the "
                "link) and peer",
            )
        )
        .with_panel(
            table(
                "Links below what both ends support",
                "(infiniband_link_degraded == 1) * on (end, peer) group_left "
                "(speed, width, capable_speed, capable_width) infiniband_link_degraded_info",
                "Inter-switch and adapter links trained below what both ends support: both ends, the link as "
                "trained and what both ends support (a host's own link is in Ports not at their expected link)",
            )
        )
        .with_panel(
            table(
                "Switches unreachable",
                "(infiniband_switch_up == 0) * on (guid, switch) group_left (description, lid) infiniband_switch_info",
                "Not reached by the last full fabric sweep; the open unreachable event says mute or cut off",
            )
        )
        # -- one node ------------------------------------------------------------------------
        .with_row(Row("Node").id(200))
        .with_panel(
            timeseries(
                "Throughput per port",
                "Bps",
                (f"infiniband:port_data_received_bytes:rate1m{{{NODE}}}", f"{port} received"),
                (f"infiniband:port_data_transmitted_bytes:rate1m{{{NODE}}}", f"{port} transmitted"),
            )
        )
        .with_panel(
            timeseries(
                "PCIe bandwidth against port rate",
                "Bps",
                (f"infiniband_device_pcie_bandwidth_bytes_per_second{{{NODE}}}", "{{node}} {{device}} PCIe"),
                (f"max by (node, device) (infiniband_rate_bytes_per_second{{{NODE}}})", "{{node}} {{device}} port"),
            )
        )
        .with_panel(
            timeseries(
                "PCIe path: narrowest hop against port rate",
                "Gbits",
                (f"infiniband_pcie_path_usable_gbps{{{NODE}}}", "{{node}} {{device}} narrowest PCIe hop"),
                (
                    f"max by (node, device) (infiniband_rate_bytes_per_second{{{NODE}}}) * 8 / 1e9",
                    "{{node}} {{device}} port",
                ),
                description="Usable Gb/s of the narrowest link from the card up to its root port (a PCIe switch "
                "uplink or the card's own link), against its fastest port's rate",
            )
        )
        .with_panel(
            timeseries(
                "Ports up and degraded",
                "short",
                (f"sum by (node) (infiniband_port_up{{{NODE}}})", "{{node}} up"),
                (f"sum by (node) (infiniband_port_degraded{{{NODE}}})", "{{node}} degraded"),
            )
        )
        .with_panel(
            timeseries(
                "Open events",
                "short",
                (
                    f"sum by (node, kind, severity) (infiniband_events_open{{{NODE}}})",
                    "{{node}} {{kind}} ({{severity}})",
                ),
            )
        )
        # -- one port ------------------------------------------------------------------------
        .with_row(Row("Port drill-down").id(300))
        .with_panel(
            timeseries(
                "Throughput against capacity",
                "Bps",
                (f"rate(infiniband_port_data_received_bytes_total{{{PORT}}}[$__rate_interval])", f"{port} received"),
                (f"rate(infiniband_port_data_transmitted_bytes_total{{{PORT}}}[$__rate_interval])", f"{port} sent"),
                (f"infiniband_rate_bytes_per_second{{{PORT}}}", f"{port} link rate"),
            ).id(PORT_PANEL)  # fixed: fabricweb's port page links to it (viewPanel=301)
        )
        .with_panel(
            timeseries(
                "Errors",
                "short",
                (f"rate(infiniband_symbol_error_total{{{PORT}}}[$__rate_interval]) * 3600", f"{port} symbol errors/h"),
                (
                    f"rate(infiniband_link_error_recovery_total{{{PORT}}}[$__rate_interval]) * 3600",
                    f"{port} link error recoveries/h",
                ),
                (f"rate(infiniband_link_downed_total{{{PORT}}}[$__rate_interval]) * 3600", f"{port} link downs/h"),
                (
                    f"rate(infiniband_port_errors_received_total{{{PORT}}}[$__rate_interval]) * 3600",
                    f"{port} receive errors/h",
                ),
                (
                    f"rate(infiniband_port_receive_remote_physical_errors_total{{{PORT}}}[$__rate_interval]) * 3600",
                    f"{port} remote physical errors/h",
                ),
                (
                    f"rate(infiniband_port_discards_transmitted_total{{{PORT}}}[$__rate_interval]) * 3600",
                    f"{port} transmit discards/h",
                ),
                description="Counter rates per hour, the unit of the health thresholds",
            )
        )
        .with_panel(
            timeseries(
                "Link speed against expected",
                "Bps",
                (f"infiniband_rate_bytes_per_second{{{PORT}}}", f"{port} trained"),
                (f"infiniband_port_expected_rate_bytes_per_second{{{PORT}}}", f"{port} expected"),
                description="Speed times width: a link at 1X or at a slower speed shows here (the lanes alone are "
                "?set=detail's infiniband_port_lanes)",
            )
        )
        .with_panel(
            timeseries(
                "Congestion",
                "percentunit",
                (f"infiniband:port_xmit_wait:ratio1m{{{PORT}}}", f"{port} waiting for credits"),
            )
        )
        .with_panel(
            timeseries(
                "Port state",
                "short",
                (f"infiniband_state_id{{{PORT}}}", f"{port} state (4: ACTIVE)"),
                (f"infiniband_physical_state_id{{{PORT}}}", f"{port} physical state (5: LinkUp)"),
            )
        )
    )


def render() -> str:
    return JSONEncoder(sort_keys=True, indent=2).encode(build().build()) + "\n"


if __name__ == "__main__":
    OUT.write_text(render())
    sys.stdout.write(f"wrote {OUT}\n")
