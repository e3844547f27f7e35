"""The expected cabling: read from an `ibnetdiscover` output or fabricweb's YAML, checked whole before use.

    # fabricweb's YAML: one cable per line, each end as operators write it
    links:
      - leaf01 port 1 -- cn001 mlx5_0/1          # a switch port, a host's port (node device/port)
      - leaf01 port 21 -- spine01 port 1
      - 0xb8599f0000000102 port 3 -- nfs01 mlx5_0/1   # a switch or CA by node GUID

An `ibnetdiscover > expected.topo` taken on a healthy fabric is read as it is: its links, their
ends by node GUID, named by their descriptions. Every line is checked before anything is stored;
a port cabled twice, an end that is not an end, a line that is not a link: an error naming it.
"""

from __future__ import annotations

import re
import reprlib
from dataclasses import dataclass

import yaml

from collectors.facts import NODE_NAME_PATTERN
from collectors.mads import netfile
from collectors.mads.mad import format_guid
from fabricweb import yamlfile
from fabricweb.health.rules.findings import port_label

_SWITCH_END = re.compile(rf"^({NODE_NAME_PATTERN}|0x[0-9a-fA-F]{{16}})\s+port\s+(\d{{1,3}})$")
_HOST_END = re.compile(rf"^({NODE_NAME_PATTERN})\s+([A-Za-z0-9_.-]{{1,64}})/(\d{{1,3}})$")
_SEPARATOR = re.compile(r"\s+--\s+")
MAX_LINKS = 200_000


class TopologyError(ValueError):
    """A topology file that cannot be used; the message names the line or entry."""


@dataclass(frozen=True, slots=True)
class EndSpec:
    node: str  # name, or a GUID as 0x + 16 lower-case hex digits
    device: str  # a host's device; "" for a switch port or an end given by GUID
    port: int
    label: str

    @property
    def identity(self) -> tuple[str, str, int]:
        return (self.node.lower() if self.node.startswith("0x") else self.node, self.device, self.port)


def parse(text: str, source: str = "topology") -> list[tuple[EndSpec, EndSpec]]:
    """The expected links of `text`, in either format (YAML when it parses as a `links:` document)."""
    if re.search(r"^\s*(Switch|Hca|Ca|Rt)\s+\d+\s+\"", text, re.MULTILINE):
        links = _from_netfile(text)
    else:
        links = _from_yaml(text)
    seen: dict[tuple[str, str, int], str] = {}
    for a, b in links:
        for end in (a, b):
            if end.identity in seen:
                raise TopologyError(f"{end.label} is cabled twice in {source} ({seen[end.identity]} and {a.label})")
            seen[end.identity] = a.label if end is b else b.label
    return links


def _from_yaml(text: str) -> list[tuple[EndSpec, EndSpec]]:
    try:
        doc = yamlfile.load(text)
    except yaml.YAMLError as e:
        raise TopologyError(f"neither an ibnetdiscover topology nor valid YAML: {yamlfile.one_line(e)}") from None
    if isinstance(doc, dict):
        extra = sorted(map(str, set(doc) - {"links"}))
        if extra:
            raise TopologyError(f"unknown top-level key(s) {', '.join(extra)}: expected only 'links'")
        doc = doc.get("links")
    if not isinstance(doc, list):
        raise TopologyError("expected a list of links under 'links:' (each 'leaf01 port 1 -- cn001 mlx5_0/1')")
    if len(doc) > MAX_LINKS:
        raise TopologyError(f"{len(doc)} links, more than the {MAX_LINKS} of any real fabric")
    links = []
    for i, item in enumerate(doc, 1):
        if not isinstance(item, str):
            raise TopologyError(f"link {i}: expected 'END -- END' as text, got {reprlib.repr(item)}")
        ends = _SEPARATOR.split(item.strip())
        if len(ends) != 2:
            raise TopologyError(f"link {i} ({item[:80]!r}): expected two ends separated by ' -- '")
        a, b = (_end(text, i) for text in ends)
        if a.identity == b.identity:
            raise TopologyError(f"link {i} ({item[:80]!r}): both ends are the same port")
        links.append((a, b))
    return links


def _end(text: str, i: int) -> EndSpec:
    m = _SWITCH_END.match(text)
    if m:
        node, port = m.group(1), int(m.group(2))
        node = node.lower() if node.lower().startswith("0x") else node
        return EndSpec(node, "", _port(port, text, i), f"{node} port {port}")
    m = _HOST_END.match(text)
    if m:
        node, device, port = m.group(1), m.group(2), int(m.group(3))
        return EndSpec(node, device, _port(port, text, i), port_label(node, device, port))
    raise TopologyError(
        f"link {i}: {text[:80]!r} is not an end: write 'SWITCH port N', 'NODE DEVICE/PORT' or '0xGUID port N'"
    )


def _port(port: int, text: str, i: int) -> int:
    if not 1 <= port <= 255:
        raise TopologyError(f"link {i}: {text[:80]!r}: port {port} is not a port number (1 to 255)")
    return port


def _from_netfile(text: str) -> list[tuple[EndSpec, EndSpec]]:
    try:
        net = netfile.parse(text)
    except netfile.NetFileError as e:
        raise TopologyError(f"ibnetdiscover topology: {e}") from None
    links = []
    for node, port, remote, remote_port in net.links():
        links.append((_net_end(node, port), _net_end(remote, remote_port)))
    return links


def _net_end(node: netfile.NetNode, port: int) -> EndSpec:
    if node.guid is None:
        raise TopologyError(f"line {node.line}: {node.id!r} has no GUID (an S-/H- id or a switchguid=/caguid= line)")
    name = node.description or format_guid(node.guid)
    return EndSpec(format_guid(node.guid), "", port, f"{name} port {port}")
