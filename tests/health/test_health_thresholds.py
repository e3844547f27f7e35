"""Covers fabricweb/thresholds.py.

Thresholds: documented defaults with units, loadable from settings, loud on mistakes."""

from __future__ import annotations

import pytest

from fabricweb.thresholds import Thresholds


def test_defaults_follow_the_operator_tools():
    t = Thresholds()
    assert t.symbol_errors_per_hour == 120
    assert t.symbol_errors_per_poll == 10
    assert t.link_error_recovery_per_minute == 5
    assert t.stale_after_polls == 3
    assert t.resolve_after_polls == 3


def test_every_threshold_has_a_unit_and_a_source():
    for name, _default, unit, source in Thresholds.describe():
        assert unit and source, name


def test_settings_override_defaults_and_accept_numeric_strings():
    t = Thresholds.from_mapping({"symbol_errors_per_hour": "240", "congestion_window_s": 600, "congestion_share": 0.5})
    assert (t.symbol_errors_per_hour, t.congestion_window_s, t.congestion_share) == (240, 600.0, 0.5)
    assert isinstance(t.symbol_errors_per_hour, int)


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"symbol_errors_per_hr": 1}, "unknown health threshold(s): symbol_errors_per_hr"),
        ({"symbol_errors_per_hour": "lots"}, "symbol_errors_per_hour: expected a number"),
        ({"symbol_errors_per_hour": 1.5}, "symbol_errors_per_hour: expected a whole number"),
        ({"symbol_errors_per_hour": -1}, "symbol_errors_per_hour: must be a finite number >= 0"),
        ({"symbol_errors_per_hour": True}, "symbol_errors_per_hour: expected a number"),
        ({"congestion_share": float("nan")}, "congestion_share: must be a finite number >= 0"),
        ({"congestion_share": 2}, "congestion_share: a share of time, 0-1"),
        ({"resolve_after_polls": 0}, "resolve_after_polls: must be above 0"),
    ],
)
def test_a_bad_setting_is_an_error_naming_it(data, words):
    with pytest.raises(ValueError, match=r"^(health threshold|unknown)") as exc:
        Thresholds.from_mapping(data)
    assert words in str(exc.value)
