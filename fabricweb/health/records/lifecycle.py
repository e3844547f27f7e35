"""Events are the state of findings: open, update, count clean polls, resolve. Pure.

Given the events open now (for the ports, devices or node judged this poll)
and this poll's findings, `step` says what to do:

- a finding with no open event: OPEN it;
- a finding with an open event: UPDATE it when anything changed (message,
  severity, details) or when it had started counting clean polls, which
  start again from 0;
- an open event without a finding: QUIET (one more clean poll) until it has
  `resolve_after` clean polls with no finding between them, then RESOLVE;
- an open event whose key the rules could not judge (`unknown`: stale data, a
  reset counter): nothing; an unknown poll is neither clean nor dirty;
- an open event whose fault a finding of another kind now carries on (findings.CARRIES_ON: a port's DOWN
  once its link is flapping): RESOLVE at once, saying which event carries it on. One fault, one event.

This hysteresis is what makes a flapping link one event: a quiet poll between
two flaps only counts towards `resolve_after` and the next flap sets it back
to 0 with an UPDATE, never a second OPEN. The flapping rule also judges the
last hour, so its finding stays present for the whole episode.
Only the events passed in are touched: pass every open event of what was judged.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from fabricweb.thresholds import DEFAULT

from ..rules.findings import CARRIES_ON, Finding, Severity, merge_findings, retarget


@dataclass(frozen=True, slots=True)
class OpenEvent:
    """What lifecycle needs of a stored open event."""

    key: str
    kind: str
    severity: Severity | str
    message: str
    clean_polls: int = 0
    details: Mapping[str, object] = field(default_factory=dict)


class Op(StrEnum):
    OPEN = "open"
    UPDATE = "update"
    QUIET = "quiet"
    RESOLVE = "resolve"


@dataclass(frozen=True, slots=True)
class Action:
    op: Op
    key: str
    kind: str
    severity: Severity
    message: str  # for OPEN/UPDATE the finding's message; otherwise the event's last one
    clean_polls: int  # what to store on the event
    details: Mapping[str, object] = field(default_factory=dict)
    reason: str = ""  # why, in words: OPEN/UPDATE the finding, RESOLVE how long it has been clear
    previous_severity: Severity | None = None  # set on UPDATE when the severity changed

    @property
    def escalated(self) -> bool:
        return self.previous_severity is not None and self.severity.rank > self.previous_severity.rank


def step(
    open_events: Iterable[OpenEvent] | Mapping[str, OpenEvent],
    findings: Iterable[Finding],
    unknown: Container[str] = frozenset(),
    resolve_after: int = DEFAULT.resolve_after_polls,
) -> list[Action]:
    """The actions for one poll; see the module docstring."""
    events = dict(open_events) if isinstance(open_events, Mapping) else {e.key: e for e in open_events}
    resolve_after = max(int(resolve_after), 1)
    actions: list[Action] = []
    present = merge_findings(findings)
    carried = {
        key: f
        for f in present
        if f.severity != Severity.INFO
        for key in (retarget(f.key, kind) for kind in CARRIES_ON.get(f.kind, ()))
        if key != f.key
    }
    present = [f for f in present if f.key not in carried]
    seen = set()
    for f in present:
        seen.add(f.key)
        event = events.get(f.key)
        if event is None:
            actions.append(Action(Op.OPEN, f.key, f.kind, f.severity, f.message, 0, f.details, f.message))
            continue
        before = _severity(event.severity)
        changed = event.message != f.message or before != f.severity or dict(event.details) != dict(f.details)
        if changed or event.clean_polls:
            actions.append(
                Action(
                    Op.UPDATE,
                    f.key,
                    f.kind,
                    f.severity,
                    f.message,
                    0,
                    f.details,
                    f.message,
                    before if before != f.severity else None,
                )
            )
    for key, event in events.items():
        if key in seen:
            continue
        if key in carried:
            severity, by = _severity(event.severity), carried[key]
            reason = f"carried on by its {by.kind.replace('_', ' ')} event: {by.message}"
            actions.append(
                Action(Op.RESOLVE, key, event.kind, severity, event.message, event.clean_polls, event.details, reason)
            )
            continue
        if key in unknown:
            continue
        clean = max(int(event.clean_polls), 0) + 1
        severity = _severity(event.severity)
        if clean >= resolve_after:
            reason = f"clear for {clean} polls"
            actions.append(Action(Op.RESOLVE, key, event.kind, severity, event.message, clean, event.details, reason))
        else:
            actions.append(Action(Op.QUIET, key, event.kind, severity, event.message, clean, event.details))
    return actions


def _severity(value: Severity | str) -> Severity:
    try:
        return Severity(value)
    except ValueError:
        return Severity.WARNING  # an unknown stored value must not stop the poll
