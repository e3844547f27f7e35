"""Drift: a rule file against the thresholds. Each rule's template becomes a pattern over the text YAML
loads, each placeholder capturing its number; a number that is not what the threshold it mirrors says,
a rule missing or a template changed by hand, is named."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from fabricweb.thresholds import DEFAULT, Thresholds

from .model import Alert, Record, flat
from .quantities import DEFAULT_POLL_INTERVAL_S, PLACEHOLDER, number, quantities, seconds
from .render import rules


def _pattern(template: str) -> re.Pattern:
    """A rule's template as a pattern over its loaded text: each placeholder captures a number or duration."""
    parts, seen, last = [], set(), 0
    for m in PLACEHOLDER.finditer(template):
        parts.append(_loose(template[last : m.start()]))
        parts.append(f"(?P={m[1]})" if m[1] in seen else f"(?P<{m[1]}>[0-9][0-9a-z.+-]*?)")
        seen.add(m[1])
        last = m.end()
    parts.append(_loose(template[last:]))
    return re.compile("".join(parts), re.DOTALL)


def _loose(text: str) -> str:
    """Literal text, any run of whitespace matching any other (YAML folding moves line breaks)."""
    return r"\s+".join(re.escape(word) for word in re.split(r"\s+", text)) if text.strip() else r"\s*"


def _templates(rule: Alert | Record) -> dict[str, str]:
    if isinstance(rule, Record):
        return {"expr": flat(rule.expr)}
    out = {"expr": flat(rule.expr), "summary": flat(rule.summary), "description": flat(rule.description)}
    if rule.pending:
        out["for"] = rule.pending
    return out


def loaded(texts: Iterable[str]) -> dict[str, dict]:
    """Rule files' texts -> each rule as YAML loads it, by its alert or record name."""
    import yaml

    return {
        rule.get("alert") or rule["record"]: rule
        for text in texts
        for group in yaml.safe_load(text)["groups"]
        for rule in group["rules"]
    }


def drift(found: dict[str, dict], t: Thresholds = DEFAULT, poll_s: float = DEFAULT_POLL_INTERVAL_S) -> list[str]:
    """What in `found` (`loaded()`: rule name -> the rule as YAML loads it) disagrees with the thresholds at
    this poll interval: one line each, naming the rule, what it says and what the threshold it mirrors says."""
    q = quantities(t, poll_s)
    problems = []
    for name, rule in rules().items():
        got = found.get(name)
        if got is None:
            problems.append(f"{name}: missing")
            continue
        if isinstance(rule, Alert) and got.get("labels", {}).get("severity") != rule.severity:
            problems.append(f"{name}: severity {got.get('labels', {}).get('severity')!r}, not {rule.severity!r}")
        for key, template in _templates(rule).items():
            value = str((got.get("annotations") or {} if key in ("summary", "description") else got).get(key, ""))
            value = value.strip()
            m = _pattern(template.strip()).fullmatch(value)
            if m is None:
                problems.append(f"{name}: {key} is not the builder's ({value!r})")
                continue
            for placeholder, text in m.groupdict().items():
                want = q[placeholder]
                try:
                    have = seconds(text) if want.duration else float(text)
                except ValueError:
                    problems.append(f"{name}: {key} has {text!r} for <<{placeholder}>>")
                    continue
                if not math.isclose(have, want.value, rel_tol=1e-9):
                    source = ", ".join(f"{f} = {number(getattr(t, f))}" for f in want.thresholds) or "poll interval"
                    problems.append(
                        f"{name}: {key} says {text} where the health thresholds say {want.text}"
                        f" ({want.meaning}; {source})"
                    )
    return problems
