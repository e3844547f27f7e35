"""Redis ACL users for node agents: each may push snapshots and take its own polls, nothing else. Standard library only.

Every compute node reaches the broker. With one shared password (or none) any of them can read
another node's polls, pop the snapshots of all, empty the central queues, or FLUSHALL. Here each
node has a user of its own, `node.<name>` (never `default`, whatever the node is called), whose
password is derived from the site's secret (FABRIC_NODE_KEY_SECRET) like its node key, so the
central side keeps no table of them:

    password(node) = HMAC-SHA256(secret, "fabricweb broker password v1\\0" + node)

and whose rules are only what the node agent sends (its own loop and connection: fabricweb/agent/loop.py,
resp.py), none of which stores anything but a snapshot (tests/agent/test_agent_broker_acl.py runs the agent as
such a user against a real redis-server, and tries every write it once allowed):

- its own queue `node.<name>`: BRPOP only (the poll, consumed without acknowledgement);
- its snapshots queue (`snapshots`, or `snapshots.<k>` of its shard with FABRIC_INGEST_SHARDS=K)
  through a selector: LPUSH only (never BRPOP: no node may take another's snapshot);
- connection upkeep (HELLO, AUTH, SELECT, PING, QUIT); no pub/sub channel (resetchannels: no pidbox, no
  broadcast), no other key, not even a queue's length or a binding, no admin command.

A fabric collector, which is a Celery worker, has a little more (collector_rules): LLEN of its queue and of
`sweeps` (kombu's declaration), reading their bindings (SISMEMBER, SMEMBERS) and the MULTI/EXEC kombu wraps
an LLEN in.

So a node can grow the broker only by pushing snapshots, each within its queue's cap, which the
ingest consumer reads and sheds past the node's byte budget; no key of its own holds more than the
polls central sent it (earlier rules let it LPUSH its own queue, HSET and SET its unacked keys, SADD
its bindings: 643 MiB in 0.4 s). Redis's maxmemory bounds the rest (docs/security.md).

`manage.py broker_acl NODE...` prints the users' lines for an ACL file (only a hash of each
password) and `--passwords` the passwords to provision on the nodes (docs/agent.md).

A fabric collector has a user of its own the same way, `fabric.<name>` (`broker_acl --collector`):
its own queue fabric.<name> (the sweep) and LPUSH to the `sweeps` queue, nothing else; its password
has a context of its own, so no node's password, whatever the node is called, is a collector's.

`broker_acl --central` starts the file with Redis's `default` user off (a client that names no
user gets nothing) and the central processes' own user, the one REDIS_URL names (docker-compose's
`central`), with every key and channel but no @dangerous command (FLUSHALL, CONFIG, KEYS, ACL,
DEBUG, SHUTDOWN, MONITOR...) save INFO (the broker's memory): what web, beat, the workers and
`manage.py ingest` send, checked against Redis's ACL LOG with every central process running
(tests/deploy/test_compose_acl.py).
"""

from __future__ import annotations

import hashlib
import hmac

from fabricweb.names import (
    COLLECTOR_QUEUE_PREFIX,
    NODE_QUEUE_PREFIX,
    SWEEP_QUEUE,
    collector_queue,
    node_queue,
    snapshot_queue,
)

PASSWORD_CONTEXT = b"fabricweb broker password v1\0"
COLLECTOR_PASSWORD_CONTEXT = b"fabricweb collector broker password v1\0"
# kombu's key layout (kombu.transport.redis.Channel): exchange bindings, one set each.
BINDING_KEYS = ("_kombu.binding.{}", "_kombu.binding_permanent.{}")
# A Celery worker's own unacknowledged-message keys on a host (kombu's unacked_key, unacked_index_key,
# unacked_mutex_key; the fabric collector's): named so that kombu never looks in the central workers' `unacked`.
UNACKED_KEYS = ("unacked.{}", "unacked_index.{}", "unacked_mutex.{}")

# Connection upkeep; a Celery worker's (the fabric collector) also the MULTI/EXEC kombu wraps a queue's LLEN in
# (a transaction stores nothing itself).
CONNECTION_COMMANDS = ("+hello", "+auth", "+select", "+ping", "+quit")
TRANSACTION_COMMANDS = ("+multi", "+exec", "+discard")


# The central processes' rules: they send to every node's queue, take the snapshots and the central queues,
# hold the scheduling locks (Lua) and read queue lengths; none needs an administrative command but INFO
# (@dangerous for what else it tells): the broker's memory for /healthz and /metrics (brokermemory.py).
CENTRAL_RULES = ("~*", "&*", "+@all", "-@dangerous", "+info")
# Names no central user may have: Redis's own, and the prefixes of the nodes' and collectors' users.
NOT_CENTRAL = ("default", NODE_QUEUE_PREFIX, COLLECTOR_QUEUE_PREFIX)


def central_acl_lines(user: str, password: str) -> list[str]:
    """The first lines of the broker's ACL file: `default` off, then the central `user` (only its password's
    SHA-256). ValueError for a user name that is Redis's default or a node's or collector's."""
    if not user or user == "default" or user.startswith(NOT_CENTRAL[1:]) or not user.isprintable() or " " in user:
        raise ValueError(f"{user!r} cannot be the central user: not `default`, nor node.* or fabric.*")
    digest = hashlib.sha256(password.encode()).hexdigest()
    return ["user default reset off", " ".join(["user", user, "reset", "on", f"#{digest}", *CENTRAL_RULES])]


def user_name(node: str) -> str:
    """The node's Redis user: prefixed, so no node name can be `default` or a central user."""
    return f"{NODE_QUEUE_PREFIX}{node}"


def node_password(secret: str, node: str) -> str:
    return hmac.new(secret.encode(), PASSWORD_CONTEXT + node.encode(), hashlib.sha256).hexdigest()


def collector_user(collector: str) -> str:
    return f"{COLLECTOR_QUEUE_PREFIX}{collector}"


def collector_password(secret: str, collector: str) -> str:
    return hmac.new(secret.encode(), COLLECTOR_PASSWORD_CONTEXT + collector.encode(), hashlib.sha256).hexdigest()


def unacked_keys(node: str, queue: str | None = None) -> dict[str, str]:
    """kombu's transport options naming a host's worker's own unacknowledged-message keys (those of its `queue`,
    node.<node> by default)."""
    queue = queue or node_queue(node)
    names = ("unacked_key", "unacked_index_key", "unacked_mutex_key")
    return {name: key.format(queue) for name, key in zip(names, UNACKED_KEYS, strict=True)}


def node_rules(node: str, shards: int = 1) -> list[str]:
    """The ACL rules of the node's user, after `on` and its password; with `shards` snapshot queues
    (FABRIC_INGEST_SHARDS), the one queue its snapshots go to."""
    return [
        "resetkeys",
        "resetchannels",
        "-@all",
        *CONNECTION_COMMANDS,
        f"(~{node_queue(node)} +brpop)",
        f"(~{snapshot_queue(node, shards)} +lpush)",
    ]


def collector_rules(collector: str) -> list[str]:
    """The ACL rules of a fabric collector's user (a Celery worker): its polls' queue, the sweeps queue."""
    queue = collector_queue(collector)
    own_bindings = " ".join(f"%R~{k.format(queue)}" for k in BINDING_KEYS)
    bindings = " ".join(f"%R~{k.format(SWEEP_QUEUE)}" for k in BINDING_KEYS)
    return [
        "resetkeys",
        "resetchannels",
        "-@all",
        *CONNECTION_COMMANDS,
        *TRANSACTION_COMMANDS,
        f"(~{queue} +brpop +llen)",
        f"({own_bindings} +sismember)",
        f"(~{SWEEP_QUEUE} +lpush +llen)",
        f"({bindings} +sismember +smembers)",
    ]


def acl_line(node: str, password: str, shards: int = 1, collector: bool = False) -> str:
    """One line of a Redis ACL file (aclfile) for the node's (or `collector`'s) user; only the password's
    SHA-256 is written."""
    digest = hashlib.sha256(password.encode()).hexdigest()
    user, rules = (
        (collector_user(node), collector_rules(node)) if collector else (user_name(node), node_rules(node, shards))
    )
    return " ".join(["user", user, "reset", "on", f"#{digest}", *rules])
