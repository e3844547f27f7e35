"""The link's state: down, up without a subnet manager, trained below what it should run at, flapping."""

from __future__ import annotations

from collectors.link import judge_link
from fabricweb.thresholds import Thresholds

from .common import ARMED, CRITICAL, INFO, INIT, WARNING, ethernet, expect_up, fmt_n, fmt_times, port_finding
from .expectation import Expectation, usable
from .findings import Finding, Kind
from .view import LINK_UP, PortView
from .window import HOUR_S, MINUTE_S, Windows

# What each physical state (ibstat's words) usually means for a port that should be up.
PHYS_MEANING = {
    1: "the port is powered down",
    2: "no cable or the peer is off",
    3: "disabled by an administrator or the subnet manager",
    4: "the link is still training; stuck here, the two ends cannot agree on speed or width",
    5: "the link is up but the port is not",
    6: "the link is retraining after errors; check the cable",
    7: "the port is in a physical test mode",
}


def down_while_flapping(view: PortView, w: Windows, t: Thresholds) -> bool:
    """Down now and down before within the hour, still bouncing: the flapping finding speaks, not a new DOWN."""
    if view.state_id is None or view.is_active or not expect_up(view):
        return False
    return w.count("link_downed", HOUR_S).total > t.link_downed_per_hour and bounced_lately(w, t)


def bounced_lately(w: Windows, t: Thresholds) -> bool:
    """The link went down or retrained within flapping_quiet_s: a link quiet for longer has stopped flapping."""
    quiet = t.flapping_quiet_s
    return w.count("link_downed", quiet).total > 0 or w.count("link_error_recovery", quiet).total > 0


def state(view: PortView, exp: Expectation, w: Windows, t: Thresholds) -> Finding | None:
    if view.state_id is None:
        return None  # unreadable state: nothing to say, and nothing cleared
    if view.is_active:
        return _degraded(view, exp)
    should_be_up = expect_up(view)
    if view.phys_state_id == LINK_UP and view.state_id in (INIT, ARMED) and not ethernet(view):
        # The cable and peer are fine; only a subnet manager brings a port from INIT to ACTIVE.
        if view.state_polls < t.no_sm_after_polls or (view.policy is not None and not should_be_up):
            return None
        return port_finding(
            view,
            Kind.NO_SM,
            CRITICAL if should_be_up else WARNING,
            f"link is up (LinkUp) but the port is {view.state_text}: "
            "the subnet manager is not answering (run sminfo, check opensm)",
            state=view.state_text,
            phys_state="LinkUp",
            polls=view.state_polls,
            expected_up_because=up_because(view),
        )
    if not should_be_up or view.state_polls < t.down_after_polls:
        return None  # never up and no policy: an unused port, not an alarm
    if down_while_flapping(view, w, t):
        return None  # one flapping event for the episode, not a new DOWN event each time it drops
    phys = view.phys_text
    meaning = PHYS_MEANING.get(view.phys_state_id) if view.phys_state_id is not None else None
    if phys is None:
        why = "physical state unknown"
    elif meaning is None:
        why = f"physical state {phys}"
    else:
        why = f"physical state {phys}: {meaning}"
    return port_finding(
        view,
        Kind.DOWN,
        CRITICAL,
        f"port down ({view.state_text}, {why})",
        state=view.state_text,
        phys_state=phys,
        expected_up_because=up_because(view),
    )


def up_because(view: PortView) -> str:
    """Why a port should be up, kept in the event's details: the dashboard says it as why the event is critical."""
    return f"policy {view.policy.name!r} expects it up" if view.policy is not None else "it has been ACTIVE before"


def _degraded(view: PortView, exp: Expectation) -> Finding | None:
    link, expected = usable(view.link), usable(exp.link)
    if link is None or expected is None:
        return None
    eth = ethernet(view)
    verdict = judge_link(link, expected, eth)
    if verdict is None:
        return None
    # Below a policy or its own past: certain. Below only what its peers run: likely, not certain.
    best = usable(view.best_link)
    own = exp.origin in ("policy", "link") or (best is not None and judge_link(link, best) is not None)
    return port_finding(
        view,
        Kind.DEGRADED,
        CRITICAL if own else WARNING,
        f"{verdict.message} — {exp.source}",
        link=link.named(eth),
        link_gbps=link.gbps,
        expected=expected.named(eth),
        expected_gbps=expected.gbps,
        downgrade=verdict.kind,
        source=exp.source,
        origin=exp.origin,
    )


def flapping(view: PortView, w: Windows, t: Thresholds) -> Finding | None:
    if not bounced_lately(w, t):
        return None
    downs = w.count("link_downed", HOUR_S).total
    retrains_h = w.count("link_error_recovery", HOUR_S).total
    retrains_min = w.count("link_error_recovery", MINUTE_S).total
    if downs > t.link_downed_per_hour or retrains_min > t.link_error_recovery_per_minute:
        severity = CRITICAL
    elif retrains_h > t.link_error_recovery_per_hour:
        severity = WARNING
    elif downs > 0 and view.is_active:
        # One bounce between polls is worth recording, not paging (a peer reboot does it).
        severity = INFO
    else:
        return None
    details = {
        "link_downs_per_hour": round(downs, 1),
        "link_error_recoveries_per_hour": round(retrains_h, 1),
        "link_error_recoveries_last_minute": round(retrains_min, 1),
    }
    if severity is INFO:
        text = f"link went down and came back {fmt_times(downs)} in the last hour (link_downed)"
        return port_finding(view, Kind.FLAPPING, INFO, text, **details)
    parts = []
    if downs:
        parts.append(f"{fmt_n(downs)} link downs in the last hour (link_downed)")
    if retrains_h:
        parts.append(f"{fmt_n(retrains_h)} link error recoveries in the last hour (link_error_recovery)")
    if retrains_min > t.link_error_recovery_per_minute:
        parts.append(f"{fmt_n(retrains_min)} in the last minute (over {t.link_error_recovery_per_minute}/min)")
    now = ""
    if down_while_flapping(view, w, t):
        now = f", down now ({view.state_text}, physical state {view.phys_text or 'unknown'})"
    text = f"link flapping{now}: {', '.join(parts)}; check the cable and the switch port"
    return port_finding(view, Kind.FLAPPING, severity, text, **details)
