"""The node agent's configuration: environment variables, read once at start-up, strictly.

No Django settings: a compute node holds the broker URL and what to read, never database
credentials or the site's secret, and loads none of the central code. A variable that is
set but unreadable stops the agent with a message naming it (as fabricweb/env.py does
centrally), never a silent default.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, urlsplit

from collectors.facts import NODE_NAME_PATTERN

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
WATCH_MODES = ("auto", "on", "off")
BROKER_SCHEMES = ("redis", "rediss", "unix")
# A node key as `manage.py node_key` prints it (fabricweb/nodeauth.py): 32 bytes in hex.
NODE_KEY_PATTERN = r"[0-9a-f]{64}"
# The words fabricweb/env.py takes for a boolean, centrally.
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


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
    # Seconds one BRPOP waits for a `collect`: longer than the poll interval, so the agent wakes for polls only
    # (a broker gone silent is found by the connection's TCP keepalive, fabricweb/agent/resp.py).
    broker_wait_s: float = 60.0
    # The key each served node signs its snapshots with (fabricweb/nodeauth.py); none: unsigned.
    node_keys: dict[str, str] = field(default_factory=dict, repr=False)
    # The CA that signed the broker's certificate (rediss://); None: the system's CAs.
    ca_file: str | None = None
    # Snapshot queues the central ingest consumers share (names.snapshot_queue): the same K as theirs.
    ingest_shards: int = 1
    # SR-IOV virtual functions come and go with the VMs that use them: not the host's own ports unless asked.
    include_virtual_functions: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] = os.environ) -> AgentConfig:
        read = EnvReader(environ)
        node_name = read.match("FABRIC_NODE_NAME", socket.gethostname().split(".")[0], NODE_NAME_PATTERN)
        sim_dir = read.text("FABRIC_SIM_DIR", None)
        return cls(
            broker_url=read.broker_url(),
            node_name=node_name,
            sysfs_root=read.text("FABRIC_SYSFS_ROOT", "/sys"),
            sim_dir=sim_dir,
            log_level=read.choice("LOG_LEVEL", "INFO", LOG_LEVELS),
            poll_deadline_s=read.number("FABRIC_POLL_DEADLINE", 10.0, float, low=0.1),
            hw_counters_every=read.number("FABRIC_HW_COUNTERS_EVERY", 6, int, low=1),
            watch=read.choice("FABRIC_WATCH_EVENTS", "auto", WATCH_MODES),
            broker_wait_s=read.number("FABRIC_BROKER_WAIT", 60.0, float, low=0.1),
            node_keys=read.node_keys(node_name, several=sim_dir is not None),
            ca_file=read.file("FABRIC_REDIS_CA_FILE"),
            ingest_shards=read.number("FABRIC_INGEST_SHARDS", 1, int, low=1),
            include_virtual_functions=read.flag("FABRIC_INCLUDE_VIRTUAL_FUNCTIONS", False),
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

    def check_keys(self, nodes: list[str]) -> None:
        """With node keys configured, every node served must have one: a snapshot signed by none is refused."""
        missing = [n for n in nodes if n not in self.node_keys]
        if self.node_keys and missing:
            raise ConfigError(f"FABRIC_NODE_KEY_FILE has no key for {', '.join(missing)}")

    def reads_this_machine(self) -> bool:
        """Whether the tree is this machine's own /sys, which pyverbs describes too."""
        return not self.sim_dir and os.path.realpath(self.sysfs_root) == "/sys"

    def watches_events(self) -> bool:
        return self.watch == "on" or (self.watch == "auto" and self.reads_this_machine())


class NotServed(ValueError):
    """A collect for a node this agent does not read: reporting another tree under that name would lie."""


class EnvReader:
    """Strict reads of environment variables: a value set but unusable is a ConfigError naming it."""

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

    def flag(self, name: str, default: bool) -> bool:
        value = self._get(name)
        if value is None:
            return default
        if value.lower() in _TRUE | _FALSE:
            return value.lower() in _TRUE
        raise ConfigError(f"{name}={value!r}: expected true or false (or 1/0, yes/no, on/off)")

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

    def file(self, name: str) -> str | None:
        path = self._get(name)
        if path is not None and not (os.path.isfile(path) and os.access(path, os.R_OK)):
            raise ConfigError(f"{name}={path!r}: not a readable file")
        return path

    def node_keys(self, node: str, several: bool) -> dict[str, str]:
        """FABRIC_NODE_KEY (this node's key), or FABRIC_NODE_KEY_FILE: one key, or JSON {node: key}."""
        key, path = self._get("FABRIC_NODE_KEY"), self.file("FABRIC_NODE_KEY_FILE")
        if key is not None and path is not None:
            raise ConfigError("FABRIC_NODE_KEY and FABRIC_NODE_KEY_FILE are both set: give one")
        if key is not None:
            if several:
                raise ConfigError("FABRIC_NODE_KEY is one node's key: an agent serving FABRIC_SIM_DIR needs "
                                  "FABRIC_NODE_KEY_FILE with {node: key} (manage.py node_key --json)")  # fmt: skip
            return {node: _node_key("FABRIC_NODE_KEY", key)}
        if path is None:
            return {}
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read(64 * 1024).strip()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"FABRIC_NODE_KEY_FILE={path!r}: cannot read it ({e.__class__.__name__})") from None
        if not text.startswith("{"):
            if several:
                raise ConfigError(f"FABRIC_NODE_KEY_FILE={path!r}: one key, but FABRIC_SIM_DIR serves several nodes")
            return {node: _node_key(f"FABRIC_NODE_KEY_FILE={path!r}", text)}
        try:
            keys = json.loads(text)
        except ValueError:
            raise ConfigError(f"FABRIC_NODE_KEY_FILE={path!r}: neither a key nor a JSON object") from None
        if not isinstance(keys, dict) or not keys:
            raise ConfigError(f"FABRIC_NODE_KEY_FILE={path!r}: expected a JSON object {{node: key}}")
        for name, value in keys.items():
            if not re.fullmatch(NODE_NAME_PATTERN, name):
                raise ConfigError(f"FABRIC_NODE_KEY_FILE={path!r}: {name[:64]!r} is not a node name")
            _node_key(f"FABRIC_NODE_KEY_FILE={path!r}: the key of {name}", value)
        return dict(keys)

    def secret(self, name: str) -> tuple[str | None, str]:
        """A secret from NAME, or from the file NAME_FILE (a systemd credential), never both; and where it came
        from, for messages (never the secret itself)."""
        value, path = self._get(name), self.file(f"{name}_FILE")
        if value is not None and path is not None:
            raise ConfigError(f"{name} and {name}_FILE are both set: give one")
        if path is None:
            return value, name
        try:
            with open(path, encoding="utf-8") as f:
                value = f.read(4096).strip()
        except (OSError, UnicodeDecodeError) as e:
            raise ConfigError(f"{name}_FILE={path!r}: cannot read it ({e.__class__.__name__})") from None
        if not value:
            raise ConfigError(f"{name}_FILE={path!r} is empty")
        return value, f"{name}_FILE={path!r}"

    def broker_url(self) -> str:
        """REDIS_URL, with the password of REDIS_PASSWORD or the file REDIS_PASSWORD_FILE (a systemd
        credential) put in it: the password need not sit in an environment file."""
        url = self.url("REDIS_URL", "redis://127.0.0.1:6379/0")
        password, _ = self.secret("REDIS_PASSWORD")
        if password is None:
            return url
        parts = urlsplit(url)
        if parts.scheme == "unix" or parts.password is not None:
            where = "a unix:// URL" if parts.scheme == "unix" else "a REDIS_URL that has a password already"
            raise ConfigError(f"a broker password from REDIS_PASSWORD(_FILE) does not go with {where}")
        host = parts.netloc.rpartition("@")[2]
        return parts._replace(netloc=f"{parts.username or ''}:{quote(password, safe='')}@{host}").geturl()

    def url(self, name: str, default: str) -> str:
        value = self._get(name)
        if value is None:
            return default
        scheme = value.partition("://")[0]
        if "://" not in value or scheme not in BROKER_SCHEMES:
            shown = re.sub(r"(://[^/@:]*:)[^/@]*@", r"\1***@", value)
            raise ConfigError(f"{name}={shown!r}: expected a URL starting with {', '.join(BROKER_SCHEMES)}://")
        return value


def read_key(read: EnvReader, name: str) -> str | None:
    """One key from NAME or the file NAME_FILE (a systemd credential): 64 hex digits, never echoed."""
    key, source = read.secret(name)
    return None if key is None else _node_key(source, key)


def _node_key(what: str, value) -> str:
    # Never echoed: a key one character off is still most of a key.
    if not (isinstance(value, str) and re.fullmatch(NODE_KEY_PATTERN, value)):
        raise ConfigError(f"{what}: expected 64 hex digits (manage.py node_key NODE)")
    return value
