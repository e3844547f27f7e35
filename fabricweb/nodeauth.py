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

import hashlib
import hmac
import json

KEY_CONTEXT = b"fabricweb node key v1\0"
# A real node's snapshot is 10-100 kB of JSON: anything far larger is refused before it is hashed or decoded.
MAX_SNAPSHOT_CHARS = 4 * 1024 * 1024


class NotAuthenticated(ValueError):
    """A snapshot whose sender cannot be shown to be the node it names."""


def node_key(secret: str, node: str) -> str:
    """The key of `node` (hex), from the site's secret."""
    return hmac.new(secret.encode(), KEY_CONTEXT + node.encode(), hashlib.sha256).hexdigest()


def sign(key: str, node: str, text: str) -> str:
    return hmac.new(bytes.fromhex(key), node.encode() + b"\n" + text.encode(), hashlib.sha256).hexdigest()


def signed_kwargs(key: str, snapshot: dict) -> dict:
    """The ingest_snapshot arguments of a signed snapshot, as a node sends them."""
    text = json.dumps(snapshot, separators=(",", ":"), allow_nan=False)
    node = snapshot["host"]
    return {"snapshot": text, "node": node, "signature": sign(key, node, text)}


def verify(secret: str, kwargs: dict) -> dict:
    """The snapshot of a signed message (decoded), or NotAuthenticated saying why."""
    node, text, signature = kwargs.get("node"), kwargs.get("snapshot"), kwargs.get("signature")
    if not (isinstance(node, str) and isinstance(text, str) and isinstance(signature, str)):
        raise NotAuthenticated("not signed: expected snapshot (JSON text), node and signature")
    if len(text) > MAX_SNAPSHOT_CHARS:
        raise NotAuthenticated(f"a snapshot of {len(text)} characters, more than the {MAX_SNAPSHOT_CHARS} a node sends")
    expected = sign(node_key(secret, node), node, text)
    if not hmac.compare_digest(expected, signature):
        raise NotAuthenticated(f"bad signature for node {node[:64]!r}: not sent with that node's key")
    try:
        snapshot = json.loads(text)
    except (ValueError, RecursionError) as e:
        raise NotAuthenticated(f"signed by {node} but not JSON ({type(e).__name__})") from None
    host = snapshot.get("host") if isinstance(snapshot, dict) else None
    if host != node:
        raise NotAuthenticated(f"signed by {node} but names host {str(host)[:64]!r}")
    return snapshot
