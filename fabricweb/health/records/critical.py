"""Why an event is critical rather than a warning, in one line: the link policy that set it, or the rule.

Said from what the event already keeps (its kind and details, written by the rules in fabricweb/health/rules/)
and, for an older event whose details lack it, the port's expected_source: nothing is stored for it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..rules.findings import Kind

POLICY = "policy "
EXPECTS_UP = " expects it up"


def critical_reason(kind: str, details: Mapping[str, object] | None, expected_source: str = "") -> str:
    """`critical: link policy 'compute-hdr' expects it up`, `critical: a port that was up went down`, ..."""
    d = details if isinstance(details, Mapping) else {}
    return f"critical: {_why(kind, d, expected_source or '')}"


def _why(kind: str, d: Mapping[str, object], expected_source: str) -> str:
    because = _text(d.get("expected_up_because"))
    by_policy = because.startswith(POLICY) and because.endswith(EXPECTS_UP)
    if kind == Kind.DOWN:
        return f"link {because}" if by_policy else "a port that was up went down"
    if kind == Kind.NO_SM:
        held = f"link {because}" if by_policy else "a port that was up"
        return f"{held}, and without a subnet manager it cannot become ACTIVE"
    if kind == Kind.VANISHED:
        return f"link {because}, and it vanished" if by_policy else "a port or device that was up vanished"
    if kind == Kind.DEGRADED:
        return _degraded(d, expected_source)
    if kind == Kind.FLAPPING:
        downs = d.get("link_downs_per_hour")
        if isinstance(downs, int | float) and downs > 0:
            return f"the link went down {_n(downs)} times in the last hour: over the flapping rule's limit"
        return "the link retrained more often in the last minute than the flapping rule allows"
    if kind == Kind.SYMBOL_ERRORS:
        return "symbol errors while the link also retrains or goes down: the link is failing"
    if kind == Kind.LINK_INTEGRITY:
        return "the rule: link integrity errors over the port's limit are always critical"
    if kind == Kind.BUFFER_OVERRUN:
        return "the rule: buffer overruns mean the link's flow control is broken, always critical"
    if kind == Kind.PAUSE_STORM:
        return "the rule: the NIC stalled past its pause-storm timeout and stopped sending PFC pause, so frames drop"
    if kind == Kind.UNREACHABLE:
        return "the rule: an unreachable switch leaves every port behind it unjudged"
    return f"set by the {kind} rule"


def _degraded(d: Mapping[str, object], expected_source: str) -> str:
    source = _text(d.get("source")) or expected_source
    origin = _text(d.get("origin"))
    expected = _text(d.get("expected"))
    wanted = f" ({expected})" if expected else ""
    if origin == "policy" or (not origin and source.startswith(POLICY)):
        # "policy 'x' (HDR), the rest learned from ...": the policy is what set it.
        return f"link {source.split(', the rest ', 1)[0]} sets the link it should run at{wanted}"
    if origin == "link":
        return f"{source}: the link can train that high, and trained lower"
    return f"trained below a link this port has held before{wanted}"


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _n(x: float) -> str:
    return f"{round(x):,}" if abs(x - round(x)) < 0.05 else f"{x:,.1f}"
