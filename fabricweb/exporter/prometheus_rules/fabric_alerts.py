"""The alerts about the switch fabric, the nodes and fabricweb's own exporter."""

from __future__ import annotations

from .model import SWITCH_PORT, Alert, Group, block, folded

SWITCHES = Group(
    "fabricweb-switches",
    (
        Alert(
            "InfinibandSwitchPortDown",
            block(
                "(infiniband_link_up == 0)",
                'unless on (node) label_replace(infiniband_switch_up == 0, "node", "$1", "switch", "(.+)")',
                'unless on (peer_node) label_replace(infiniband_switch_up == 0, "peer_node", "$1", "switch", "(.+)")',
            ),
            "critical",
            '"{{ $labels.end }}: switch port down (cabled to {{ $labels.peer }})"',
            folded(
                "The link {{ $labels.end }} ↔ {{ $labels.peer }} was up and is down. See",
                "infiniband_switch_port_physical_state_id (2: Polling = no cable or the far end is off;",
                "3: Disabled).",
            ),
            pending="<<down_for>>",
            comment=(
                "A switch port down that was up: a link series exists only for a cable the sweeps saw up, and stays",
                "when it goes down (health: down after down_after_polls polls; the alert waits as the host's). An",
                "unreachable switch's ports keep their last values, and the links to it go down:",
                "InfinibandSwitchUnreachable says both.",
            ),
            mirrors=("down_after_polls",),
            health="down (critical)",
        ),
        Alert(
            "InfinibandLinkDegraded",
            block(
                "(",
                "  (infiniband_link_degraded == 1)",
                "  * on (end, peer) group_left (speed, width, capable_speed, capable_width)",
                "  infiniband_link_degraded_info",
                ")",
                'unless on (node) label_replace(infiniband_switch_up == 0, "node", "$1", "switch", "(.+)")',
            ),
            "critical",
            folded(
                "{{ $labels.end }} ↔ {{ $labels.peer }}: trained at {{ $labels.width }} {{ $labels.speed }},",
                "both ends support {{ $labels.capable_width }} {{ $labels.capable_speed }}",
            ),
            folded(
                "The {{ $labels.type }} link {{ $labels.end }} ↔ {{ $labels.peer }} runs at {{ $labels.width }}",
                "{{ $labels.speed }} where both ends support {{ $labels.capable_width }} {{ $labels.capable_speed }}.",
                "Check the cable and both ends' port settings.",
            ),
            pending="1m",
            comment=(
                "Trained below what both ends support (the fastest speed and widest width common to both, as",
                "iblinkinfo's \"could be\"), speed and width judged separately: the health rules' degraded finding",
                "on the end that speaks for the link, whose expected link is that capability unless a policy says",
                "otherwise. The links a switch port speaks for; a host's own is InfinibandPortDegraded's.",
            ),
            health="degraded (critical: the expectation is what both ends support)",
        ),
        Alert(
            "InfinibandSwitchPortSymbolErrors",
            "increase(infiniband_switch_port_symbol_error_total[1h]) > <<symbol_errors_per_hour>>",
            "warning",
            f'"{SWITCH_PORT}: {{{{ $value | printf \\"%.0f\\" }}}} symbol errors/h"',
            folded(
                "Over <<symbol_errors_per_hour>> symbol errors/h: the link's bit error rate is worse than 1e-12."
                " Check or reseat the cable",
                "(?set=detail's infiniband_link_info names both ends of every cable).",
            ),
            comment=(
                "Symbol errors on a switch port, as the host's: the health thresholds' symbol_errors_per_hour",
                "(<<symbol_errors_per_hour>>/h: bit error rate worse than 1e-12) and symbol_errors_per_poll",
                "(<<symbol_errors_per_poll>> in one poll: <<symbol_errors_per_second>>/s at the"
                " <<poll_interval>> s poll).",
            ),
            mirrors=("symbol_errors_per_hour",),
            health="symbol_errors (warning; critical when the link also retrained or went down)",
        ),
        Alert(
            "InfinibandSwitchPortSymbolErrorsFast",
            "rate(infiniband_switch_port_symbol_error_total[1m]) > <<symbol_errors_per_second>>",
            "warning",
            f'"{SWITCH_PORT}: {{{{ $value | printf \\"%.1f\\" }}}} symbol errors/s"',
            folded(
                "Over <<symbol_errors_per_poll>> symbol errors in a <<poll_interval>> s poll: the link is"
                " degrading fast. Check or reseat the cable; with",
                "retrains or link downs as well it is failing.",
            ),
            mirrors=("symbol_errors_per_poll",),
            health="symbol_errors (warning; critical when the link also retrained or went down)",
        ),
        Alert(
            "InfinibandSwitchUnreachable",
            "infiniband_switch_up == 0",
            "critical",
            '"{{ $labels.switch }}: switch not reached by the fabric sweeps"',
            folded(
                "{{ $labels.switch }} ({{ $labels.guid }}) did not answer the last full sweep: its ports' state and",
                "counters are its last known ones. The open `unreachable` event says whether its links are up",
                "(a mute management agent) or down (power, or every cable).",
            ),
            comment=(
                "Not reached by the last full sweep (health: the `unreachable` event, critical): mute (its links",
                "are up but it does not answer management datagrams) or cut off. Its ports' series keep their",
                "last values until it answers again.",
            ),
            health="unreachable (critical)",
        ),
        Alert(
            "InfinibandFabricCollectorStale",
            "infiniband_fabric_collector_up == 0",
            "warning",
            '"{{ $labels.collector }}: no fabric sweep stored recently"',
            folded(
                "The fabric collector or its host is down. With no collector sweeping, the switches' series are",
                "old (infiniband_switch_last_seen_timestamp_seconds says how old).",
            ),
            health="stale (the collector's node)",
            exporter_applies=("stale_after_polls",),
        ),
    ),
    comment=(
        "The switch side (the fabric collector's sweeps): switch ports, the links the fabric view has seen,",
        "switches. A link has one series per cable, from the end that speaks for it, labels `end` and `peer`",
        "naming both ends. The default set has the cables a switch port speaks for (type inter-switch, the",
        "first switch port by name; or adapter: a switch port facing a channel adapter fabricweb has no agent",
        "on); a host's own link is its port's series, said by its port's alerts above.",
    ),
)

NODES = Group(
    "fabricweb-nodes",
    (
        Alert(
            "InfinibandNodeStale",
            "infiniband_node_up == 0",
            "warning",
            '"{{ $labels.node }}: no snapshot stored recently"',
            folded("The node or its fabricweb agent is down: its ports' counters are no longer exported."),
            health="stale",
            exporter_applies=("stale_after_polls",),
        ),
    ),
)

EXPORTER = Group(
    "fabricweb-exporter",
    (
        Alert(
            "FabricwebExporterDown",
            'up{job=~"fabricweb.*"} == 0',
            "critical",
            '"fabricweb /metrics ({{ $labels.job }}) cannot be scraped"',
            "The fabric's state is not reaching Prometheus; no InfiniBand alert can fire.",
            pending="2m",
            health="none: Prometheus' own",
        ),
        Alert(
            "FabricwebIngestStalled",
            "fabricweb_exporter_last_ingest_age_seconds > 300",
            "critical",
            '"fabricweb has stored no snapshot for {{ $value | humanizeDuration }}"',
            folded(
                "/metrics answers but shows old data: the ingest consumer, the broker or every node",
                "agent is down.",
            ),
            pending="2m",
            health="none: Prometheus' own",
        ),
        Alert(
            "FabricwebBrokerMemoryHigh",
            "fabricweb_broker_memory_used_bytes / (fabricweb_broker_memory_max_bytes > 0) > 0.8",
            "warning",
            '"the broker (Redis) uses {{ $value | humanizePercentage }} of its maxmemory"',
            folded(
                "Past its maxmemory Redis refuses the nodes' snapshots and the polls to them. A node flooding",
                "the snapshot queues (its row says it is refused over its budget), or ingest behind: /healthz.",
            ),
            pending="2m",
            health="none: the broker's (/healthz degraded from 80 %)",
        ),
    ),
)
