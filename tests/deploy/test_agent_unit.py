"""Covers fabricweb/agent/config.py.

The node agent's systemd unit and environment example: valid, hardened, in step with the code."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

from fabricweb.agent.config import AgentConfig
from tests.deploy.systemd_support import verify

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "systemd"
UNIT = DEPLOY / "fabricweb-agent.service"


def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str  # systemd keys are case-sensitive
    parser.read(UNIT)
    return parser


def test_the_unit_passes_systemd_analyze_verify(tmp_path):
    verify(UNIT, "fabricweb.agent", tmp_path)


def test_the_unit_runs_unprivileged_hardened_with_a_ceiling_and_restarts_on_failure():
    service = unit()["Service"]
    assert service["DynamicUser"] == "yes" and service["CapabilityBoundingSet"] == ""
    for key, value in {
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "ProtectHome": "yes",
        "PrivateTmp": "yes",
        "Restart": "on-failure",
        "EnvironmentFile": "/etc/fabricweb/agent.env",
        # The node key stays root-only on disk; the agent's dynamic user reads it as a credential.
        "Environment": "FABRIC_NODE_KEY_FILE=%d/node-key REDIS_PASSWORD_FILE=%d/redis-password",
    }.items():
        assert service[key] == value, key
    credentials = re.findall(r"^LoadCredential=(.*)$", (DEPLOY / "fabricweb-agent.service").read_text(), re.M)
    assert credentials == ["node-key:/etc/fabricweb/node.key", "redis-password:/etc/fabricweb/redis.password"]
    assert re.fullmatch(r"\d+%", service["CPUQuota"]) and re.fullmatch(r"\d+M", service["MemoryMax"])


def example_env() -> dict[str, str]:
    """Every variable of the example, commented out or not, with its value."""
    found = {}
    for line in (DEPLOY / "agent.env.example").read_text().splitlines():
        m = re.fullmatch(r"#?([A-Z][A-Z0-9_]+)=(.*)", line.strip())
        if m:
            found[m.group(1)] = m.group(2)
    return found


def test_the_environment_example_names_every_variable_the_agent_reads_with_values_it_accepts(tmp_path):
    env = example_env()
    # The files it names exist on a provisioned node: stand-ins here. FABRIC_NODE_KEY is the file's alternative.
    (tmp_path / "node.key").write_text("0" * 64)
    (tmp_path / "ca.pem").write_text("")
    (tmp_path / "redis.password").write_text("s3cret\n")
    usable = {k: v for k, v in env.items() if k not in ("FABRIC_NODE_KEY", "REDIS_PASSWORD")}  # the files' alternatives
    usable.update(FABRIC_NODE_KEY_FILE=str(tmp_path / "node.key"), FABRIC_REDIS_CA_FILE=str(tmp_path / "ca.pem"))
    usable["REDIS_PASSWORD_FILE"] = str(tmp_path / "redis.password")
    config = AgentConfig.from_env(usable)
    assert config.broker_url == "rediss://node.cn042:s3cret@fabric-central.example.org:6379/0"
    assert config.node_name == "cn042"
    assert config.node_keys == {"cn042": "0" * 64} and config.ca_file == str(tmp_path / "ca.pem")
    source = (ROOT / "fabricweb/agent/config.py").read_text()
    read_by_agent = set(re.findall(r'"((?:REDIS_URL|REDIS_PASSWORD(?:_FILE)?|LOG_LEVEL|FABRIC_[A-Z_]+))"', source))
    # A secret read with EnvReader.secret("NAME") may come as NAME or as the file NAME_FILE.
    read_by_agent |= {f"{name}_FILE" for name in re.findall(r'\.secret\("([A-Z_]+)"\)', source)}
    assert set(env) == read_by_agent - {"FABRIC_SIM_DIR"}  # that one serves simulated trees, not a node
    assert not {"DATABASE_URL", "SECRET_KEY", "DJANGO_SETTINGS_MODULE"} & set(env)
