"""Covers fabricweb/env.py, fabricweb/health/records/context.py.

FABRIC_THRESHOLDS and FABRIC_RESOLVE_AFTER: read at start-up, a bad value stops it naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

from fabricweb.env import Env
from fabricweb.health.records import context

REPO = Path(__file__).resolve().parents[2]


def test_a_json_object_is_read_and_anything_else_is_an_error_naming_the_variable():
    assert Env({"FABRIC_THRESHOLDS": '{"symbol_errors_per_hour": 240}'}).json_object("FABRIC_THRESHOLDS", {}) == {
        "symbol_errors_per_hour": 240
    }
    assert Env({}).json_object("FABRIC_THRESHOLDS", {}) == {}
    for value, words in (("[240]", "is not a JSON object"), ("{symbol", "is not valid JSON")):
        with pytest.raises(ImproperlyConfigured, match=f"FABRIC_THRESHOLDS='.*' {words}"):
            Env({"FABRIC_THRESHOLDS": value}).json_object("FABRIC_THRESHOLDS", {})


def test_the_engine_judges_with_the_thresholds_settings_name(settings):
    settings.FABRIC_THRESHOLDS = {"symbol_errors_per_hour": 240, "congestion_share": "0.5"}
    settings.FABRIC_RESOLVE_AFTER = 5
    t = context.thresholds()
    assert (t.symbol_errors_per_hour, t.congestion_share, t.stale_after_polls) == (240, 0.5, 3)
    assert context.resolve_after() == 5


def manage_check(**env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "FABRIC_", "DATABASE"))}
    clean.update(SECRET_KEY=get_random_secret_key(), **env)
    return subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=REPO, env=clean, capture_output=True, text=True, check=False
    )


@pytest.mark.parametrize(
    ("env", "words"),
    [
        ({"FABRIC_THRESHOLDS": '{"symbol_errors_per_hours": 240}'}, "FABRIC_THRESHOLDS: unknown health threshold(s)"),
        ({"FABRIC_THRESHOLDS": '{"congestion_share": 2}'}, "FABRIC_THRESHOLDS: health threshold congestion_share"),
        ({"FABRIC_THRESHOLDS": '{"resolve_after_polls": 5}'}, "FABRIC_THRESHOLDS: set resolve_after_polls with"),
        ({"FABRIC_RESOLVE_AFTER": "0"}, "FABRIC_RESOLVE_AFTER=0 is below the minimum of 1"),
    ],
)
def test_a_bad_health_setting_stops_start_up(env, words):
    done = manage_check(**env)
    assert done.returncode != 0
    assert words in done.stderr


def test_good_health_settings_start():
    done = manage_check(FABRIC_THRESHOLDS='{"congestion_share": 0.1}', FABRIC_RESOLVE_AFTER="4")
    assert done.returncode == 0, done.stderr
