"""Covers fabricweb/fabricagent/config.py.

The fabric collector's systemd unit, environment example and udev rule: valid, unprivileged, in step."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from fabricweb.fabricagent.config import FabricAgentConfig
from tests.deploy.systemd_support import verify

ROOT = Path(__file__).resolve().parents[2]
UNIT = ROOT / "deploy" / "systemd" / "fabricweb-fabric.service"


def test_the_unit_passes_systemd_analyze_verify(tmp_path):
    verify(UNIT, "fabricweb.fabricagent", tmp_path)


def test_the_unit_has_no_root_and_no_capability_only_the_umad_devices():
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(UNIT)
    service = parser["Service"]
    assert service["DynamicUser"] == "yes" and service["CapabilityBoundingSet"] == ""
    assert service["AmbientCapabilities"] == "" and service["NoNewPrivileges"] == "yes"
    assert (service["DevicePolicy"], service["DeviceAllow"]) == ("closed", "char-infiniband_mad rw")
    assert service["SupplementaryGroups"] == "fabricweb-umad"
    rule = (ROOT / "deploy" / "udev" / "90-fabricweb-umad.rules").read_text()
    assert 'KERNEL=="umad*", SUBSYSTEM=="infiniband_mad", GROUP="fabricweb-umad", MODE="0660"' in rule
    assert "issm" not in re.sub(r"^#.*$", "", rule, flags=re.M)  # the subnet manager's device stays root's


def test_the_environment_example_names_variables_the_collector_reads_with_values_it_accepts(tmp_path):
    found = {}
    for line in (ROOT / "deploy" / "systemd" / "fabric.env.example").read_text().splitlines():
        m = re.fullmatch(r"#?([A-Z][A-Z0-9_]+)=(.*)", line.strip())
        if m:
            found[m.group(1)] = m.group(2)
    (tmp_path / "collector.key").write_text("0" * 64)
    (tmp_path / "password").write_text("s3cret\n")
    env = {k: v for k, v in found.items() if v and k not in ("FABRIC_COLLECTOR_KEY", "REDIS_PASSWORD")}
    env.update(
        FABRIC_COLLECTOR_KEY_FILE=str(tmp_path / "collector.key"), REDIS_PASSWORD_FILE=str(tmp_path / "password")
    )
    env.pop("FABRIC_REDIS_CA_FILE", None)
    config = FabricAgentConfig.from_env(env)
    assert config.collector == "fabric-sm01" and config.key == "0" * 64
    source = (ROOT / "fabricweb" / "fabricagent" / "config.py").read_text()
    read = set(re.findall(r'"((?:FABRIC|REDIS|LOG)_[A-Z_]+)"', source)) | {
        "REDIS_URL",
        "REDIS_PASSWORD",
        "REDIS_PASSWORD_FILE",
    }
    read |= {f"{name}_FILE" for name in read if name.endswith("_KEY")}
    assert set(found) <= read and {n for n in read if n.startswith("FABRIC_")} <= set(found)
