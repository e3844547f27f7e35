"""Slurm's hostlist expressions: `cn[001-003,007],gpu-a` -> cn001, cn002, cn003, cn007, gpu-a.

Brackets may appear several times in one name (`r[1-2]n[01-02]`); a range keeps its zero padding.
"""

from __future__ import annotations

import re

MAX_HOSTS = 100_000  # past any cluster: a hostile or broken expression is refused, not expanded
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def expand(expression: str) -> list[str]:
    """Every host an expression names, in its order; ValueError on a malformed one."""
    out: list[str] = []
    for item in _split(expression):
        out.extend(_expand_one(item))
        if len(out) > MAX_HOSTS:
            raise ValueError(f"hostlist {expression[:60]!r} names more than {MAX_HOSTS} hosts")
    return out


def _split(expression: str) -> list[str]:
    """Top-level comma-separated items (commas inside brackets belong to a range)."""
    items, depth, start = [], 0, 0
    for i, ch in enumerate(expression):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise ValueError(f"hostlist {expression[:60]!r}: ']' without '['")
        elif ch == "," and depth == 0:
            items.append(expression[start:i])
            start = i + 1
    if depth:
        raise ValueError(f"hostlist {expression[:60]!r}: '[' without ']'")
    items.append(expression[start:])
    return [item.strip() for item in items if item.strip()]


def _expand_one(item: str) -> list[str]:
    open_at = item.find("[")
    if open_at < 0:
        return [item]
    close_at = item.index("]", open_at)
    head, body, tail = item[:open_at], item[open_at + 1 : close_at], item[close_at + 1 :]
    numbers: list[str] = []
    for part in body.split(","):
        m = _RANGE.match(part.strip())
        if not m:
            raise ValueError(f"hostlist range {part!r} in {item[:60]!r} is not N or N-M")
        first, last = m.group(1), m.group(2) or m.group(1)
        if int(last) < int(first) or int(last) - int(first) > MAX_HOSTS:
            raise ValueError(f"hostlist range {part!r} in {item[:60]!r} runs backwards or too far")
        width = len(first) if first.startswith("0") else 0
        numbers.extend(str(n).zfill(width) for n in range(int(first), int(last) + 1))
    return [f"{head}{n}{rest}" for n in numbers for rest in _expand_one(tail)]
