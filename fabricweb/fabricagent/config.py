"""The fabric collector's configuration: environment variables, read once at start-up, strictly.

Like the node agent (fabricweb/agent/config.py, whose strict reader it uses), it holds the
broker URL and its own key, never database credentials or the site's secret.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field

from collectors.facts import NODE_NAME_PATTERN
from fabricweb.agent.config import LOG_LEVELS, ConfigError, EnvReader, read_key

__all__ = ["ConfigError", "FabricAgentConfig"]


@dataclass(frozen=True)
class FabricAgentConfig:
    broker_url: str
    # Its name, in its snapshots and its queue fabric.<name>; a Node of kind `collector` centrally.
    collector: str
    ca: str | None = None  # the local channel adapter to send from (default: the first)
    port: int = 0  # its port (default: the first active)
    window: int = 64
    timeout_ms: int = 300
    retries: int = 2
    deadline_s: float = 30.0
    # A full sweep (discovery, links, counters) every Nth poll; counters-only polls in between.
    full_every: int = 1
    # The switches' forwarding tables: read at a full sweep after any topology change, and at least this often.
    routes_interval_s: float = 300.0
    log_level: str = "INFO"
    broker_wait_s: float = 10.0
    key: str | None = field(default=None, repr=False)  # manage.py node_key --collector NAME; None: unsigned
    ca_file: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> FabricAgentConfig:
        read = EnvReader(environ)
        default = "fabric-" + socket.gethostname().split(".")[0]
        return cls(
            broker_url=read.broker_url(),
            collector=read.match("FABRIC_COLLECTOR_NAME", default[:64], NODE_NAME_PATTERN),
            ca=read.text("FABRIC_UMAD_CA", None),
            port=read.number("FABRIC_UMAD_PORT", 0, int, low=0),
            window=read.number("FABRIC_SWEEP_WINDOW", 64, int, low=1),
            timeout_ms=read.number("FABRIC_SWEEP_TIMEOUT_MS", 300, int, low=1),
            retries=read.number("FABRIC_SWEEP_RETRIES", 2, int, low=0),
            deadline_s=read.number("FABRIC_SWEEP_DEADLINE", 30.0, float, low=0.1),
            full_every=read.number("FABRIC_FULL_SWEEP_EVERY", 1, int, low=1),
            routes_interval_s=read.number("FABRIC_ROUTES_INTERVAL", 300.0, float, low=1.0),
            log_level=read.choice("LOG_LEVEL", "INFO", LOG_LEVELS),
            broker_wait_s=read.number("FABRIC_BROKER_WAIT", 10.0, float, low=0.1),
            key=read_key(read, "FABRIC_COLLECTOR_KEY"),
            ca_file=read.file("FABRIC_REDIS_CA_FILE"),
        )
