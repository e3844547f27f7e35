"""Drain policies as YAML, for configuration management: `manage.py import_drain_policies FILE`.

    drain_policies:
      - name: compute           # unique; an import updates the policy of the same name
        node: "cn*"             # shell pattern on the node name (default "*")
        kinds: [down, degraded] # finding kinds that drain (default: down, degraded, flapping)
        severity: critical      # the least severity that drains: critical or warning (default critical)
        drain: true             # false: never drain the nodes this matches
        order: 100              # lower is tried first when several match
        enabled: true

Everything is checked before anything is stored; the first problem is reported with the entry's
position and name (the link policies' rules: fabricweb/yamlfile.py).
"""

from __future__ import annotations

from fabricweb.yamlfile import entry_head, flag, named_entries, order

from ..models import DrainPolicy
from ..rules.expectation import DEFAULT_ORDER
from ..rules.findings import Kind

FIELDS = ("name", "node", "kinds", "severity", "drain", "order", "enabled")
DEFAULT_KINDS = ("down", "degraded", "flapping")  # with no policy, and a policy that names none
SEVERITIES = ("critical", "warning")
# What a drain can be for: a finding on a port (never a node's own drain state, staleness or PCIe path).
DRAINABLE = sorted(
    k.value
    for k in Kind
    if k not in (Kind.DRAIN, Kind.STALE, Kind.CLOCK_SKEW, Kind.UNREACHABLE, Kind.GPU_AFFINITY, Kind.PCIE_NUMA)
)


class DrainPolicyFileError(ValueError):
    pass


def parse(text: str) -> list[dict]:
    return named_entries(text, key="drain_policies", noun="drain policy", error=DrainPolicyFileError, entry=_entry)


def _entry(entry: object, i: int) -> dict:
    where, name = entry_head(entry, i, noun="drain policy", fields=FIELDS, error=DrainPolicyFileError)
    node = entry.get("node", "*")
    if not isinstance(node, str) or not node or len(node) > 100:
        raise DrainPolicyFileError(f"{where}: 'node' must be a shell pattern of 1 to 100 characters")
    kinds = entry.get("kinds", list(DEFAULT_KINDS))
    if not isinstance(kinds, list) or not kinds or any(k not in DRAINABLE for k in kinds):
        raise DrainPolicyFileError(f"{where}: 'kinds' must be a list of finding kinds from {', '.join(DRAINABLE)}")
    severity = entry.get("severity", "critical")
    if severity not in SEVERITIES:
        raise DrainPolicyFileError(f"{where}: 'severity' must be critical or warning, got {severity!r}")
    row = {"name": name, "node_glob": node, "kinds": sorted(set(kinds)), "severity": severity}
    for key in ("drain", "enabled"):
        row[key] = flag(entry, key, where, DrainPolicyFileError)
    row["order"] = order(entry, where, DrainPolicyFileError, DEFAULT_ORDER)
    return row


def store(rows: list[dict]) -> tuple[int, int]:
    """Create or update each policy by name: (created, updated). Call inside a transaction."""
    created = updated = 0
    for row in rows:
        _, made = DrainPolicy.objects.update_or_create(name=row["name"], defaults=row)
        created += made
        updated += not made
    return created, updated
