"""Covers docker-compose.yml, deploy/prometheus/, deploy/grafana/.

The compose profile `monitoring`: Prometheus, Alertmanager and Grafana provisioned from deploy/."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

from tests.deploy.compose_support import ROOT, compose

SECRETS = {"SECRET_KEY": "s" * 50, "POSTGRES_PASSWORD": "p"}


def test_the_monitoring_profile_runs_prometheus_alertmanager_and_grafana_from_deploy():
    result = compose("--profile", "monitoring", "config", env=SECRETS)
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    assert {"prometheus", "alertmanager", "grafana"} <= set(services)
    mounted = {
        str(Path(v.split(":")[0]).resolve().relative_to(ROOT))
        for name in ("prometheus", "alertmanager", "grafana")
        for v in services[name]["volumes"]
        if v.startswith("/")
    }
    assert mounted == {
        "deploy/prometheus/prometheus.yml",
        "deploy/prometheus/rules",
        "deploy/alertmanager/alertmanager.yml",
        "deploy/grafana/provisioning",
        "deploy/grafana/dashboards",
    }
    for path in mounted:
        assert (ROOT / path).exists(), path
    # Prometheus scrapes the web service by its compose name: Django must accept that host.
    assert "web" in services["web"]["environment"]["ALLOWED_HOSTS"].split(",")


def test_the_alertmanager_config_is_valid():
    amtool = shutil.which("amtool")
    assert amtool, "amtool is not installed (scripts/system-packages installs prometheus-alertmanager)"
    result = subprocess.run(
        [amtool, "check-config", str(ROOT / "deploy" / "alertmanager" / "alertmanager.yml")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stdout + result.stderr
