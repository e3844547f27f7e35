"""Which node sent a snapshot: a per-node key and an HMAC over the snapshot as sent. Standard library only.

Every compute node can write to the broker, so a message naming node A proves nothing
by itself. Each node holds a key of its own, derived from the site's secret
(FABRIC_NODE_KEY_SECRET, central only) and the node's name, so the central side keeps
no table of keys and one node's key says nothing of another's:

    key(node) = HMAC-SHA256(secret, "fabricweb node key v1\\0" + node)

`manage.py node_key NODE` prints it for provisioning. The node sends its snapshot as
the JSON text it signed, with its name and the signature:

    ingest_snapshot(snapshot="<JSON text>", node="cn042", signature="<hex>")
    signature = HMAC-SHA256(key(node), node + "\\n" + JSON text)

and ingest stores it only if the signature holds for that name and the snapshot's own
`host` is that name. A replayed message is harmless: ingest is idempotent, and an
older snapshot than the node's last is not applied.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass

KEY_CONTEXT = b"fabricweb node key v1\0"
# A fabric collector's key has a context of its own: no node key, whatever the node is named, is one.
COLLECTOR_KEY_CONTEXT = b"fabricweb fabric collector key v1\0"
# A real node's snapshot is 10-100 kB of JSON: anything far larger is refused before it is hashed or decoded.
MAX_SNAPSHOT_CHARS = 4 * 1024 * 1024
# A fabric snapshot is ~200 bytes per port in the fabric: 64 MiB is some 300,000 ports, past the caps of
# fabricweb/fabric/schema.py, so a real one always fits and a hostile one is refused before it is hashed.
MAX_FABRIC_CHARS = 64 * 1024 * 1024


class NotAuthenticated(ValueError):
    """A snapshot whose sender cannot be shown to be the node it names."""


def node_key(secret: str, node: str) -> str:
    """The key of `node` (hex), from the site's secret."""
    return hmac.digest(secret.encode(), KEY_CONTEXT + node.encode(), "sha256").hex()


def collector_key(secret: str, collector: str) -> str:
    """The key of fabric collector `collector` (hex), from the site's secret."""
    return hmac.digest(secret.encode(), COLLECTOR_KEY_CONTEXT + collector.encode(), "sha256").hex()


def sign(key: str, node: str, text: str) -> str:
    # (hmac.digest: OpenSSL's one-shot HMAC, not an HMAC object per message; the same bytes)
    return hmac.digest(bytes.fromhex(key), node.encode() + b"\n" + text.encode(), "sha256").hex()


@dataclass(frozen=True)
class Role:
    """Who signs a kind of snapshot: the argument and snapshot field that name the sender, its key, its caps."""

    what: str  # "node", "fabric collector": in messages
    argument: str  # the keyword argument naming the sender
    field: str  # the snapshot's own field naming it
    key: Callable[[str, str], str]  # (secret, name) -> key
    max_chars: int


NODE = Role("node", "node", "host", node_key, MAX_SNAPSHOT_CHARS)
COLLECTOR = Role("fabric collector", "collector", "collector", collector_key, MAX_FABRIC_CHARS)


def signed_kwargs(key: str, snapshot: dict, role: Role = NODE) -> dict:
    """The task arguments of a signed snapshot, as a node (or with role COLLECTOR, a fabric collector) sends them."""
    text = json.dumps(snapshot, separators=(",", ":"), allow_nan=False)
    name = snapshot[role.field]
    return {"snapshot": text, role.argument: name, "signature": sign(key, name, text)}


def verify(secret: str, kwargs: dict, role: Role = NODE) -> dict:
    """The snapshot of a signed message (decoded), or NotAuthenticated saying why."""
    name, text = signed_text(secret, kwargs, role)
    return decoded(name, text, role)


def signed_text(secret: str, kwargs: dict, role: Role = NODE) -> tuple[str, str]:
    """The sender's name and snapshot text of a signed message, its signature checked (nothing decoded yet: a
    sender over its budget is refused before its snapshot costs a parse); NotAuthenticated saying why."""
    name, text, signature = kwargs.get(role.argument), kwargs.get("snapshot"), kwargs.get("signature")
    if not (isinstance(name, str) and isinstance(text, str) and isinstance(signature, str)):
        raise NotAuthenticated(f"not signed: expected snapshot (JSON text), {role.argument} and signature")
    if len(text) > role.max_chars:
        raise NotAuthenticated(
            f"a snapshot of {len(text)} characters, more than the {role.max_chars} a {role.what} sends"
        )
    expected = sign(role.key(secret, name), name, text)
    if not hmac.compare_digest(expected, signature):
        raise NotAuthenticated(f"bad signature for {role.what} {name[:64]!r}: not sent with that {role.what}'s key")
    return name, text


def decoded(name: str, text: str, role: Role = NODE, loads: Callable[[str], object] = json.loads) -> dict:
    """The snapshot of a signed text whose signature held: JSON, naming its sender as the signature does. `loads`
    reads it as json.loads does (ingest passes a faster one, not of the standard library)."""
    try:
        snapshot = loads(text)
    except (ValueError, RecursionError) as e:
        raise NotAuthenticated(f"signed by {name} but not JSON ({type(e).__name__})") from None
    named = snapshot.get(role.field) if isinstance(snapshot, dict) else None
    if named != name:
        raise NotAuthenticated(f"signed by {name} but names {role.field} {str(named)[:64]!r}")
    return snapshot
