"""The shape every YAML file an operator writes for fabricweb shares: a list of named entries.

`policies:` for link policies (health/policyfile.py), `channels:` for notification channels
(alerts/channelfile.py): the list under its one top-level key (or the bare list), every
entry read by the caller's own function, names unique. Errors name the entry by its
position and name, in the caller's own exception class.
"""

from __future__ import annotations

from collections.abc import Callable

import yaml


def named_entries(
    text: str, *, key: str, noun: str, error: type[ValueError], entry: Callable[[object, int], dict]
) -> list[dict]:
    """The rows `entry(item, position)` makes of each item under `key`; `error` on the first problem."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise error(f"not valid YAML: {e}") from None
    if isinstance(doc, dict):
        extra = sorted(map(str, set(doc) - {key}))
        if extra:
            raise error(f"unknown top-level key(s) {', '.join(extra)}: expected only {key!r}")
        doc = doc.get(key)
    if doc is None:
        doc = []
    if not isinstance(doc, list):
        raise error(f"expected a list of {key} under {key!r}")
    out, names = [], set()
    for position, item in enumerate(doc, 1):
        row = entry(item, position)
        if row["name"] in names:
            raise error(f"{noun} {position} ({row['name']!r}): the name is used by an earlier entry")
        names.add(row["name"])
        out.append(row)
    return out


def entry_head(entry: object, position: int, *, noun: str, fields: tuple[str, ...], error: type[ValueError]):
    """The checks every entry starts with: a mapping of known keys with a `name` of 1 to 100 characters.
    Returns (where, name): `where` names the entry in errors (`policy 3 ('cn-hdr')`)."""
    if not isinstance(entry, dict):
        raise error(f"{noun} {position}: expected a mapping of {', '.join(fields)}, got {entry!r}")
    name = entry.get("name")
    where = f"{noun} {position} ({name!r})" if isinstance(name, str) else f"{noun} {position}"
    extra = sorted(map(str, set(entry) - set(fields)))
    if extra:
        raise error(f"{where}: unknown key(s) {', '.join(extra)} (known: {', '.join(fields)})")
    if not isinstance(name, str) or not name.strip() or len(name) > 100:
        raise error(f"{where}: 'name' must be text of 1 to 100 characters")
    return where, name.strip()
