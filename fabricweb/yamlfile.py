"""The shape every YAML file an operator writes for fabricweb shares: a list of named entries, read safely.

`policies:` for link policies (health/records/policyfile.py), `channels:` for notification channels
(alerts/channelfile.py): the list under its one top-level key (or the bare list), every
entry read by the caller's own function, names unique. Errors name the entry by its
position and name, in the caller's own exception class.
"""

from __future__ import annotations

from collections.abc import Callable

import yaml

MAX_DEPTH = 32  # nesting of mappings and lists: an operator's file needs three or four


class _Bounded(yaml.SafeLoader):
    """SafeLoader without aliases (`*name`: a few hundred bytes of them expand to gigabytes, the billion laughs)
    and with bounded nesting (PyYAML composes recursively: 100,000 brackets overflow Python's stack). Pure
    Python: where PyYAML was built without libyaml, load() reads with it."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            _refuse_alias(self.peek_event())
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                _refuse_depth(self.peek_event())
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


def _refuse_alias(event: yaml.Event):
    raise yaml.composer.ComposerError(None, None, "aliases (*name) are not accepted", event.start_mark)


def _refuse_depth(event: yaml.Event):
    raise yaml.composer.ComposerError(None, None, f"nested deeper than {MAX_DEPTH} levels", event.start_mark)


def _check(events) -> None:
    """_Bounded's two refusals, on the parser's events, at the same marks: a node is entered one level below the
    collections open around it."""
    depth = 0
    for event in events:
        if isinstance(event, yaml.AliasEvent):
            _refuse_alias(event)
        if isinstance(event, yaml.NodeEvent):  # a scalar, or a collection's start
            if depth + 1 > MAX_DEPTH:
                _refuse_depth(event)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def load(text: str):
    """The YAML document of `text` as plain values; yaml.YAMLError for a bad one, aliases and deep nesting
    included, whose message is one short line (where, and what).

    With libyaml (PyYAML's wheels carry it), the C parser's events are checked first, then the document is
    read by the C loader: a big fabric's topology file (tens of thousands of links) is read at C's speed. A
    file either refuses is read again by the pure-Python one, so that an error is said in its words and at its
    mark whichever PyYAML is installed (libyaml words syntax errors its own way, and refuses nesting past its
    own limit before the events reach ours)."""
    if yaml.__with_libyaml__:
        try:
            _check(yaml.parse(text, Loader=yaml.CSafeLoader))
            return yaml.load(text, Loader=yaml.CSafeLoader)  # SafeConstructor: plain values only
        except yaml.YAMLError:
            pass
    return yaml.load(text, Loader=_Bounded)  # a SafeLoader: plain values only


def named_entries(
    text: str, *, key: str, noun: str, error: type[ValueError], entry: Callable[[object, int], dict]
) -> list[dict]:
    """The rows `entry(item, position)` makes of each item under `key`; `error` on the first problem."""
    try:
        doc = load(text)
    except yaml.YAMLError as e:
        raise error(f"not valid YAML: {one_line(e)}") from None
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


def flag(entry: dict, key: str, where: str, error: type[ValueError], default: bool = True) -> bool:
    """An entry's true/false field; `error` naming it when it is anything else."""
    value = entry.get(key, default)
    if not isinstance(value, bool):
        raise error(f"{where}: {key!r} must be true or false, got {value!r}")
    return value


def order(entry: dict, where: str, error: type[ValueError], default: int) -> int:
    """An entry's `order`: a whole number within a database integer."""
    value = entry.get("order", default)
    if isinstance(value, bool) or not isinstance(value, int) or abs(value) > 2**31 - 1:
        raise error(f"{where}: 'order' must be a whole number, got {value!r}")
    return value


def one_line(error: yaml.YAMLError) -> str:
    """A YAML error in one line: its problem and where (`aliases (*name) are not accepted, line 3 column 8`)."""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    mark = getattr(error, "problem_mark", None)
    where = f", line {mark.line + 1} column {mark.column + 1}" if mark is not None else ""
    return f"{problem}{where}"[:200]
