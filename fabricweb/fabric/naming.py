"""A switch's name in the inventory, from its NodeDescription, stable once given; an agentless channel
adapter's (fabricweb.fabric.adapters) the same way, with its device's name from the description.

Switches name themselves in their NodeDescription, which anyone managing the switch sets:
untrusted text. NVIDIA's switches write `MF0;leaf07:MQM8790-HS2F/U1` (the host name between
`;` and `:`), others `leaf07` or a vendor's default such as `Quantum Mellanox Technologies`.
The name must be a node name (URLs, queue-free but shown everywhere) and unique among every
node, hosts included; a description that gives none, or one already taken, falls back to
the name plus the GUID's last four digits, or `sw-<GUID>`. A switch keeps the name it was
first given (FabricNode.node): events, samples and links stay attached when its description
changes.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from collectors.facts import NODE_NAME_PATTERN

_NAME_RE = re.compile(NODE_NAME_PATTERN)
_NOT_NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
_NVIDIA = re.compile(r"^[^;]*;([^:;]+):")
_MAX = 64


def candidate(description: str | None) -> str | None:
    """The name a description gives, or None."""
    if not description:
        return None
    m = _NVIDIA.match(description)
    text = m.group(1) if m else description.split()[0] if description.split() else ""
    text = _NOT_NAME_CHARS.sub("-", text).strip("-._")[:_MAX]
    return text if text and _NAME_RE.fullmatch(text) else None


def switch_name(description: str | None, guid: str, taken: Callable[[str], bool], fallback: str = "sw") -> str:
    """A free name for the switch `guid` (0x + 16 hex digits): from its description when that gives one
    (`fallback` "ca": an adapter's, `ca-<GUID>` when it gives none)."""
    suffix = guid[-4:]
    base = candidate(description)
    if base is not None:
        if not taken(base):
            return base
        with_guid = f"{base[: _MAX - 5]}-{suffix}"
        if not taken(with_guid):
            return with_guid
    return f"{fallback}-{guid[2:]}"


# rdma-core writes a channel adapter's description as `<host name> <device>` (`nfs01 mlx5_0`): a kernel device name.
_DEVICE = re.compile(r"[a-z][a-z0-9_]{0,30}[0-9]", re.ASCII)


def device_name(description: str | None) -> str:
    """The device an agentless adapter's ports are stored under: the description's second word when it is a
    kernel device name (`mlx5_0`), else `ca`."""
    words = (description or "").split()
    return words[1] if len(words) > 1 and _DEVICE.fullmatch(words[1]) else "ca"


_GUID = re.compile(r"0[xX][0-9a-fA-F]{16}")


def find_switch(key: str):
    """A switch (an inventory Node) by its inventory name, or by its node GUID (0x and 16 hex digits, either
    case), with its fabric node loaded; None when there is none. The API's and the switch pages' lookup."""
    from fabricweb.inventory.models import Node

    switches = Node.objects.filter(kind=Node.Kind.SWITCH).select_related("fabric_node")
    if _GUID.fullmatch(key):
        return switches.filter(guid=key.lower()).first()
    return switches.filter(name=key).first()
