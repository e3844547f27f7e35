"""Link policies as YAML, for configuration management: `manage.py import_policies` / `export_policies`.

    policies:
      - name: cn-hdr            # unique; an import updates the policy of the same name
        node: "cn*"             # shell patterns on node, device and port number (default "*")
        device: "mlx5_*"
        port: "*"
        speed: HDR              # SDR ... XDR, or null: learn it
        width: 4X               # 1X, 2X, 4X, 8X, 12X, or null: learn it
        expect_up: true         # false for ports meant to be down or unused
        order: 100              # lower is tried first when several match
        enabled: true
        pcie_shared: warning    # a PCIe switch uplink these ports' cards share with GPUs, too small for
                                # all of them: warning or info (default: info; the first policy that says wins)

Everything is checked before anything is stored; the first problem is reported with
the entry's position and name.
"""

from __future__ import annotations

from collections.abc import Iterable

import yaml

from collectors.link import SPEED_BY_NAME, WIDTHS
from fabricweb.yamlfile import entry_head, flag, named_entries, order

from ..models import LinkPolicy
from ..rules.expectation import DEFAULT_ORDER

FIELDS = ("name", "node", "device", "port", "speed", "width", "expect_up", "order", "enabled", "pcie_shared")
SHARED = ("warning", "info")
_GLOBS = {"node": ("node_glob", 100), "device": ("device_glob", 100), "port": ("port_glob", 20)}


class PolicyFileError(ValueError):
    pass


def parse(text: str) -> list[dict]:
    """The policies of a YAML document as LinkPolicy field values; PolicyFileError on the first problem."""
    return named_entries(text, key="policies", noun="policy", error=PolicyFileError, entry=_entry)


def _entry(entry: object, i: int) -> dict:
    where, name = entry_head(entry, i, noun="policy", fields=FIELDS, error=PolicyFileError)
    row: dict[str, object] = {"name": name}
    for key, (column, longest) in _GLOBS.items():
        value = entry.get(key, "*")
        if key == "port" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)  # `port: 1` in YAML is a number
        if not isinstance(value, str) or not value or len(value) > longest:
            raise PolicyFileError(f"{where}: {key!r} must be a shell pattern of 1 to {longest} characters")
        row[column] = value
    row["speed"] = _speed(entry.get("speed"), where)
    row["lanes"] = _width(entry.get("width"), where)
    for key in ("expect_up", "enabled"):
        row[key] = flag(entry, key, where, PolicyFileError)
    row["order"] = order(entry, where, PolicyFileError, DEFAULT_ORDER)
    shared = entry.get("pcie_shared")
    if shared is not None and shared not in SHARED:
        raise PolicyFileError(f"{where}: 'pcie_shared' must be warning, info or null, got {shared!r}")
    row["pcie_shared"] = shared
    return row


def _speed(value: object, where: str) -> str | None:
    if value is None:
        return None
    name = str(value).upper()
    if name not in SPEED_BY_NAME:
        raise PolicyFileError(
            f"{where}: speed {value!r} is not an InfiniBand speed (one of {', '.join(SPEED_BY_NAME)}, or null)"
        )
    return name


def _width(value: object, where: str) -> int | None:
    if value is None:
        return None
    text = str(value).upper().removesuffix("X")
    if isinstance(value, bool) or not text.isdigit() or int(text) not in WIDTHS:
        known = ", ".join(f"{w}X" for w in WIDTHS)
        raise PolicyFileError(f"{where}: width {value!r} is not an InfiniBand width (one of {known}, or null)")
    return int(text)


def dump(policies: Iterable[LinkPolicy]) -> str:
    entries = [
        {
            "name": p.name,
            "node": p.node_glob,
            "device": p.device_glob,
            "port": p.port_glob,
            "speed": p.speed or None,
            "width": f"{p.lanes}X" if p.lanes else None,
            "expect_up": p.expect_up,
            "order": p.order,
            "enabled": p.enabled,
            **({"pcie_shared": p.pcie_shared} if p.pcie_shared else {}),
        }
        for p in policies
    ]
    header = (
        "# fabricweb link policies: manage.py import_policies FILE to load"
        " (see fabricweb/health/records/policyfile.py)\n"
    )
    return header + yaml.safe_dump({"policies": entries}, sort_keys=False, allow_unicode=True)


def store(rows: list[dict], replace: bool = False) -> tuple[int, int, int]:
    """Create or update each policy by name (and with `replace`, delete the others): (created, updated, deleted).

    Call inside a transaction: all of it or none."""
    existing = {p.name: p for p in LinkPolicy.objects.all()}
    created = updated = 0
    for row in rows:
        policy = existing.get(row["name"])
        if policy is None:
            LinkPolicy.objects.create(**row)
            created += 1
            continue
        if any(getattr(policy, k) != v for k, v in row.items()):
            for k, v in row.items():
                setattr(policy, k, v)
            policy.save()
            updated += 1
    deleted = 0
    if replace:
        deleted, _ = LinkPolicy.objects.exclude(name__in=[r["name"] for r in rows]).delete()
    return created, updated, deleted
