"""The node agent's configuration: environment variables, read once at start-up, strictly.

No Django settings: a compute node holds the broker URL and what to read, never database
credentials or the site's secret, and loads none of the central code. A variable that is
set but unreadable stops the agent with a message naming it (as fabricweb/env.py does
centrally), never a silent default.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass

from collectors.facts import NODE_NAME_PATTERN

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
WATCH_MODES = ("auto", "on", "off")
BROKER_SCHEMES = ("redis", "rediss", "unix")


class ConfigError(ValueError):
    """A variable is set to something the agent cannot use; the message names it."""


@dataclass(frozen=True)
class AgentConfig:
    broker_url: str
    # This node's name (default: the short host name, as in its snapshots): its queue is node.<name>.
    node_name: str
    sysfs_root: str = "/sys"
    # One agent for a whole simulated fabric: serve node.<n> for every DIR/<n>, reading DIR/<n>.
    sim_dir: str | None = None
    log_level: str = "INFO"
    # A poll that has not finished reading by then is abandoned (fabricweb/agent/poll.py).
    poll_deadline_s: float = 10.0
    # hw_counters/ are read every Nth poll (mlx5 answers them from a cache; nothing central reads
    # them every poll); in between, the last values read are sent again.
    hw_counters_every: int = 6
    # Port events (pyverbs) send a snapshot at once: auto = when reading this machine's /sys.
    watch: str = "auto"
    # Seconds the broker connection blocks waiting for a `collect` between wake-ups.
    broker_wait_s: float = 10.0
    # Snapshot queues the central ingest consumers share (names.snapshot_queue): the same K as theirs.
    ingest_shards: int = 1

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> AgentConfig:
        read = _Reader(environ)
        return cls(
            broker_url=read.url("REDIS_URL", "redis://127.0.0.1:6379/0"),
            node_name=read.match("FABRIC_NODE_NAME", socket.gethostname().split(".")[0], NODE_NAME_PATTERN),
            sysfs_root=read.text("FABRIC_SYSFS_ROOT", "/sys"),
            sim_dir=read.text("FABRIC_SIM_DIR", None),
            log_level=read.choice("LOG_LEVEL", "INFO", LOG_LEVELS),
            poll_deadline_s=read.number("FABRIC_POLL_DEADLINE", 10.0, float, low=0.1),
            hw_counters_every=read.number("FABRIC_HW_COUNTERS_EVERY", 6, int, low=1),
            watch=read.choice("FABRIC_WATCH_EVENTS", "auto", WATCH_MODES),
            broker_wait_s=read.number("FABRIC_BROKER_WAIT", 10.0, float, low=0.1),
            ingest_shards=read.number("FABRIC_INGEST_SHARDS", 1, int, low=1),
        )

    def served_nodes(self) -> list[str]:
        """The nodes this agent answers for: every node tree in sim_dir, or this node."""
        if not self.sim_dir:
            return [self.node_name]
        return sorted(
            name
            for name in os.listdir(self.sim_dir)
            if re.fullmatch(NODE_NAME_PATTERN, name)
            and os.path.isdir(os.path.join(self.sim_dir, name, "class", "infiniband"))
        )

    def root_of(self, node: str) -> str:
        """The tree `node` is read from; NotServed for a node this agent does not read."""
        if self.sim_dir:
            # A simulated node keeps its name when its tree vanishes: that is a fault to report.
            if not re.fullmatch(NODE_NAME_PATTERN, node):
                raise NotServed(f"{node!r} is not a node name")
            return os.path.join(self.sim_dir, node)
        if node != self.node_name:
            raise NotServed(f"this agent reads {self.node_name}, not {node}")
        return self.sysfs_root

    def reads_this_machine(self) -> bool:
        """Whether the tree is this machine's own /sys, which pyverbs describes too."""
        return not self.sim_dir and os.path.realpath(self.sysfs_root) == "/sys"

    def watches_events(self) -> bool:
        return self.watch == "on" or (self.watch == "auto" and self.reads_this_machine())


class NotServed(ValueError):
    """A collect for a node this agent does not read: reporting another tree under that name would lie."""


class _Reader:
    def __init__(self, environ: Mapping[str, str]) -> None:
        self.environ = environ

    def _get(self, name: str) -> str | None:
        value = self.environ.get(name)
        if value is not None and not value.strip():
            raise ConfigError(f"{name} is set but empty")
        return None if value is None else value.strip()

    def text(self, name: str, default: str | None) -> str | None:
        value = self._get(name)
        return default if value is None else value

    def choice(self, name: str, default: str, choices: tuple[str, ...]) -> str:
        value = self._get(name)
        if value is None:
            return default
        for choice in choices:
            if value.lower() == choice.lower():
                return choice
        raise ConfigError(f"{name}={value!r}: expected one of {', '.join(choices)}")

    def match(self, name: str, default: str, pattern: str) -> str:
        value = self._get(name)
        if value is None:
            return default
        if not re.fullmatch(pattern, value):
            raise ConfigError(f"{name}={value!r}: expected a short host name ({pattern})")
        return value

    def number(self, name: str, default, kind, low):
        value = self._get(name)
        if value is None:
            return default
        try:
            number = kind(value)
        except ValueError:
            raise ConfigError(f"{name}={value!r}: expected {'an integer' if kind is int else 'a number'}") from None
        if not number >= low:  # also refuses nan
            raise ConfigError(f"{name}={value!r}: must be at least {low}")
        return number

    def url(self, name: str, default: str) -> str:
        value = self._get(name)
        if value is None:
            return default
        scheme = value.partition("://")[0]
        if "://" not in value or scheme not in BROKER_SCHEMES:
            shown = re.sub(r"(://[^/@:]*:)[^/@]*@", r"\1***@", value)
            raise ConfigError(f"{name}={shown!r}: expected a URL starting with {', '.join(BROKER_SCHEMES)}://")
        return value
