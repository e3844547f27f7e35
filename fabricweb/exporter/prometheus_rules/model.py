"""The shape of a rule as the builder writes it: alerts and recording rules in groups, their text plain,
quoted or folded (as YAML writes it), with the thresholds each mirrors and the health finding it says."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class Folded:
    """A folded block scalar (`>`, or `>-` with `strip`), one source line per item."""

    lines: tuple[str, ...]
    strip: bool = True


def folded(*lines: str) -> Folded:
    return Folded(lines)


def block(*lines: str) -> Folded:
    """A multi-line expression: `>`, keeping its final newline as the hand-written files did."""
    return Folded(lines, strip=False)


Text = str | Folded


@dataclass(frozen=True, slots=True)
class Alert:
    name: str
    expr: Text
    severity: str
    summary: Text
    description: Text
    pending: str | None = None  # `for:`: a duration, or a <<placeholder>>
    extra_labels: tuple[tuple[str, str], ...] = ()
    comment: tuple[str, ...] = ()
    # What it mirrors: the Thresholds fields its numbers come from (checked by drift()), the health
    # finding it says, and anything the two judge differently.
    mirrors: tuple[str, ...] = ()
    health: str = ""
    exporter_applies: tuple[str, ...] = ()  # thresholds the exporter applies to the series it reads


@dataclass(frozen=True, slots=True)
class Record:
    name: str
    expr: Text
    comment: tuple[str, ...] = ()
    mirrors: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Group:
    name: str
    rules: tuple[Alert | Record, ...]
    comment: tuple[str, ...] = field(default=())


def flat(value: Text) -> str:
    """A rule's text on one line, as YAML loads it back (folded lines joined, quotes taken off)."""
    if isinstance(value, Folded):
        return " ".join(value.lines)
    return value[1:-1].replace('\\"', '"') if value.startswith('"') else value


PORT = "{{ $labels.node }} {{ $labels.device }}/{{ $labels.port }}"
SWITCH_PORT = "{{ $labels.switch }} port {{ $labels.port }}"
