"""The alerts about a host's ports and devices: down, degraded, errors, flapping, congestion, PCIe."""

from __future__ import annotations

from .model import PORT, Alert, Group, block, folded

PORTS = Group(
    "fabricweb-ports",
    (
        Alert(
            "InfinibandPortDown",
            block(
                "(infiniband_port_up == 0)",
                "and on (node, device, port) (infiniband_port_expected_up == 1)",
                "unless on (node) (infiniband_node_up == 0)",
            ),
            "critical",
            f'"{PORT}: port down"',
            folded(
                f"{PORT} is not ACTIVE (or no longer",
                "reported by its node). See infiniband_state_id / infiniband_physical_state_id",
                "(2: Polling = no cable or the peer is off; 3: Disabled).",
            ),
            pending="<<down_for>>",
            comment=(
                "Down: not ACTIVE, or gone from its node's snapshot. Only ports that should be up",
                "(infiniband_port_expected_up: a policy, the expected cabling, or it has been up) count, as",
                "on the dashboard; a never-connected port is not an outage; ports of stale nodes are NodeStale's.",
                "Waits down_after_polls polls (at least a minute: one bounce is flapping's).",
            ),
            mirrors=("down_after_polls",),
            health="down (critical)",
        ),
        Alert(
            "InfinibandPortDegraded",
            block(
                "(",
                "  (infiniband_port_degraded == 1)",
                "  * on (node, device, port)"
                " group_left (speed, width, expected_speed, expected_width, expected_source, peer)",
                "  infiniband_port_degraded_info",
                ")",
                "unless on (node) (infiniband_node_up == 0)",
            ),
            "critical",
            folded(
                f"{PORT}: trained at {{{{ $labels.width }}}}",
                "{{ $labels.speed }}, expected {{ $labels.expected_width }} {{ $labels.expected_speed }}",
            ),
            folded(
                f"{PORT} runs at {{{{ $labels.width }}}}",
                "{{ $labels.speed }} where {{ $labels.expected_width }} {{ $labels.expected_speed }} is",
                "expected ({{ $labels.expected_source }}). Check the cable{{ with $labels.peer }} to {{ . }}{{ end }}",
                "and both ends' port settings.",
            ),
            pending="1m",
            comment=(
                "Below the port's expected link: what both ends of its cable support where the fabric view knows",
                "the cable (`peer` names the far end), unless a policy says otherwise; else a policy or its own",
                "past. A host's own link has no infiniband_link_* series in the default set: this alert is its.",
            ),
            health="degraded (critical; warning when only the fabric majority expects more)",
            exporter_applies=("fabric_min_ports",),
        ),
        Alert(
            "InfinibandSymbolErrors",
            "increase(infiniband_symbol_error_total[1h]) > <<symbol_errors_per_hour>>",
            "warning",
            f'"{PORT}: {{{{ $value | printf \\"%.0f\\" }}}} symbol errors/h"',
            folded(
                "Over <<symbol_errors_per_hour>> symbol errors/h: the link's bit error rate is worse than 1e-12."
                " Check or reseat the cable.",
            ),
            comment=(
                "Symbol errors: a compliant link has BER below 1e-12; NVIDIA's NIC health monitor calls more",
                "than 120 symbol errors per hour fatal (health: symbol_errors_per_hour).",
            ),
            mirrors=("symbol_errors_per_hour",),
            health="symbol_errors (warning; critical when the link also retrained or went down)",
        ),
        Alert(
            "InfinibandSymbolErrorsFast",
            "rate(infiniband_symbol_error_total[1m]) > <<symbol_errors_per_second>>",
            "warning",
            f'"{PORT}: {{{{ $value | printf \\"%.1f\\" }}}} symbol errors/s"',
            folded(
                "Over <<symbol_errors_per_poll>> symbol errors in a <<poll_interval>> s poll: the link is degrading"
                " fast. Check or",
                "reseat the cable; with retrains or link downs as well it is failing.",
            ),
            comment=(
                "Fast: more than symbol_errors_per_poll in a poll (ibqueryerrors' 10 per check), as a rate",
                "at the poll interval: <<symbol_errors_per_poll>> per <<poll_interval>> s is"
                " <<symbol_errors_per_second>>/s.",
            ),
            mirrors=("symbol_errors_per_poll",),
            health="symbol_errors (warning; critical when the link also retrained or went down)",
        ),
        Alert(
            "InfinibandPortFlapping",
            block(
                "(",
                "  increase(infiniband_link_downed_total[1h]) >= <<link_downs_flapping>>",
                "  and on (node, device, port) (",
                "    increase(infiniband_link_downed_total[<<flapping_quiet>>]) > 0",
                "    or increase(infiniband_link_error_recovery_total[<<flapping_quiet>>]) > 0",
                "  )",
                ")",
                "or increase(infiniband_link_error_recovery_total[1m]) > <<link_error_recoveries_per_minute>>",
            ),
            "critical",
            f'"{PORT}: link flapping"',
            folded(
                "The link goes down and comes back (link_downed), or retrains (link_error_recovery),",
                "again and again. Check the cable and the switch port.",
            ),
            comment=(
                "Flapping: the link went down and came back more than link_downed_per_hour times in an hour",
                "and bounced within flapping_quiet_s, or retrained more than link_error_recovery_per_minute",
                "times in the last minute (NVIDIA NIC health): health's critical flapping.",
            ),
            mirrors=("link_downed_per_hour", "flapping_quiet_s", "link_error_recovery_per_minute"),
            health="flapping (critical; health also records one bounce as info and retrains per hour as warning)",
        ),
        Alert(
            "InfinibandReceiveErrors",
            "increase(infiniband_port_errors_received_total[1h]) > <<port_rcv_errors_per_hour>>",
            "warning",
            f'"{PORT}: {{{{ $value | printf \\"%.0f\\" }}}} receive errors/h"',
            "Malformed packets arrive on this link (PortRcvErrors over <<port_rcv_errors_per_hour>>/h)."
            " Check the cable.",
            mirrors=("port_rcv_errors_per_hour",),
            health="rcv_errors (warning)",
        ),
        Alert(
            "InfinibandRemotePhysicalErrors",
            "increase(infiniband_port_receive_remote_physical_errors_total[1h]) > <<remote_physical_errors_per_hour>>",
            "info",
            f'"{PORT}: {{{{ $value | printf \\"%.0f\\" }}}} remote physical errors/h"',
            folded("Packets arrive already marked bad: the fault is upstream, elsewhere in the fabric."),
            mirrors=("remote_physical_errors_per_hour",),
            health="remote_physical_errors (info)",
        ),
        Alert(
            "InfinibandTransmitDiscards",
            block(
                "increase(infiniband_port_discards_transmitted_total[1h]) > <<xmit_discards_per_hour>>",
                "unless on (node, device, port) (increase(infiniband_link_downed_total[1h]) > 0)",
            ),
            "warning",
            f'"{PORT}: {{{{ $value | printf \\"%.0f\\" }}}} transmit discards/h"',
            "Packets dropped on send, from congestion or a peer that stopped taking data.",
            comment=("A link going down discards what was queued: down and flapping say that already (as health).",),
            mirrors=("xmit_discards_per_hour",),
            health="xmit_discards (warning; none while the link went down within the hour)",
        ),
        Alert(
            "InfinibandCongestion",
            "infiniband:port_xmit_wait:ratio1m > <<congestion_share>>",
            "warning",
            folded(
                f"{PORT}: congested,",
                "{{ $value | humanizePercentage }} of the link's time lost waiting for credits",
            ),
            folded(
                "port_xmit_wait says the port had data to send but no credits; the share is in the bytes one"
                " count is on its device (infiniband_port_congestion_ratio)."
            ),
            pending="<<congestion_window>>",
            comment=(
                "Congestion: more than congestion_share of the link's time lost for congestion_window_s, each",
                "minute of it (health: the window's average, so bursts averaging over it are health's only).",
            ),
            mirrors=("congestion_share", "congestion_window_s"),
            health="congestion (warning)",
        ),
        Alert(
            "InfinibandCounterCapped",
            "infiniband_port_capped == 1",
            "info",
            f'"{PORT}: {{{{ $labels.counter }}}} stuck at its maximum"',
            folded(
                "Its rate is unknown until the counter is reset (perfquery -R); the 64-bit counters_ext/",
                "series (infiniband_legacy_*) keep counting where the HCA has them.",
            ),
            pending="10m",
            comment=("ConnectX-3 and other old PMAs: a 32-bit counter stuck at all-ones has no rate until reset.",),
            health="capped_counters (info)",
        ),
        Alert(
            "InfinibandNoSubnetManager",
            block(
                "(infiniband_physical_state_id == 5)",
                "and on (node, device, port) (infiniband_state_id == 2 or infiniband_state_id == 3)",
            ),
            "critical",
            f'"{PORT}: LinkUp but not ACTIVE, no subnet manager"',
            folded(
                "The link is physically up but the port stays in INIT or ARMED: no subnet manager",
                "answered. Check that opensm (or the switch's SM) runs and reaches this port.",
            ),
            pending="<<no_sm_for>>",
            comment=(
                "LinkUp but INIT or ARMED: the link trained but no subnet manager brought the port up",
                "(for no_sm_after_polls polls, at least a minute).",
            ),
            mirrors=("no_sm_after_polls",),
            health="no_subnet_manager (critical; warning for a port no policy or history expects up)",
        ),
    ),
)

DEVICES = Group(
    "fabricweb-devices",
    (
        Alert(
            "InfinibandPcieBottleneck",
            block(
                "infiniband_device_pcie_bandwidth_bytes_per_second",
                "< on (node, device)",
                "max by (node, device) (",
                "  infiniband_rate_bytes_per_second and on (node, device, port) (infiniband_port_up == 1)",
                ")",
            ),
            "warning",
            '"{{ $labels.node }} {{ $labels.device }}: PCIe link limits the InfiniBand port"',
            folded(
                "The PCIe link carries {{ $value | humanize }}B/s, less than the port's link rate. Compare",
                "infiniband_device_pcie_link_width_lanes / _speed_gts with their max_ values; reseat",
                "the card or move it to a full-width slot.",
            ),
            pending="1m",
            comment=("The HCA's PCIe link, as trained, carries less than its fastest active port.",),
            health="pcie (warning)",
        ),
    ),
)
