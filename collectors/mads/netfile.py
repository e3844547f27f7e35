"""ibnetdiscover's topology format: read it (an expected cabling, a recorded fabric) and write it (ibsim's net file).

What `ibnetdiscover` prints and what ibsim reads share one shape:

    switchguid=0x2c90300a1b2c0
    Switch	40 "S-0002c90300a1b2c0"		# "leaf07" enhanced port 0 lid 3 lmc 0
    [12]	"H-0002c90300001234"[1](2c90300001235)		# "cn042 mlx5_0" lid 42 4xHDR

    caguid=0x2c90300001234
    Ca	1 "H-0002c90300001234"		# "cn042 mlx5_0"
    [1](2c90300001235)	"S-0002c90300a1b2c0"[12]		# lid 42 lmc 0 "leaf07" lid 3 4xHDR

A record is a header line (`Switch`, `Ca`/`Hca` or `Rt`, the port count, a quoted id, then
`# "description"`) followed by one line per cabled port: `[local](port GUID) "remote id"[remote
port]`, an optional comment naming the far end and the link (`4xHDR`), and for ibsim `w=` and
`s=` options (the link's enabled width and speed masks). The parser is strict: a line it cannot
read is an error naming the line, never skipped, since a topology read wrong would page on
cabling that is right.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

KINDS = {"Switch": "switch", "Ca": "ca", "Hca": "ca", "Rt": "router"}


class NetFileError(ValueError):
    """A topology file that does not follow the format; the message names the line."""


@dataclass(slots=True)
class NetPort:
    number: int
    remote_id: str
    remote_port: int
    port_guid: int | None = None
    remote_port_guid: int | None = None
    link: str | None = None  # "4xHDR" as ibnetdiscover prints it
    options: dict[str, int] = field(default_factory=dict)  # ibsim's w= and s=


@dataclass(slots=True)
class NetNode:
    kind: str  # switch, ca, router
    num_ports: int
    id: str
    description: str | None = None
    guid: int | None = None
    ports: dict[int, NetPort] = field(default_factory=dict)
    line: int = 0

    @property
    def name(self) -> str:
        return self.description or self.id


@dataclass(slots=True)
class NetFile:
    nodes: dict[str, NetNode] = field(default_factory=dict)  # by id

    def links(self) -> list[tuple[NetNode, int, NetNode, int]]:
        """Each cabled link once: (node, port, remote node, remote port)."""
        out, seen = [], set()
        for node in self.nodes.values():
            for port in node.ports.values():
                remote = self.nodes.get(port.remote_id)
                if remote is None:
                    continue
                ends = tuple(sorted([(node.id, port.number), (remote.id, port.remote_port)]))
                if ends in seen:
                    continue
                seen.add(ends)
                out.append((node, port.number, remote, port.remote_port))
        return out


_HEADER = re.compile(r'^(Switch|Hca|Ca|Rt)\s+(\d+)\s+"([^"]*)"(.*)$')
_PORT = re.compile(r'^\[(\d+)\](?:\(([0-9A-Fa-fx]+)\))?\s+"([^"]*)"\[(\d+)\](?:\(([0-9A-Fa-fx]+)\))?(.*)$')
_GUID_LINE = re.compile(r"^(switchguid|caguid|hcaguids|rtguid|sysimgguid|vendid|devid)\s*=\s*(0x[0-9A-Fa-f]+|\d+)")
_ID_GUID = re.compile(r"^[SHR]-([0-9A-Fa-f]{16})$")
_COMMENT_DESC = re.compile(r'#\s*"([^"]*)"')
_LINK = re.compile(r"\b(\d+)x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)\b", re.IGNORECASE)
_OPTION = re.compile(r"\b([ws])=(\d+)\b")
MAX_PORTS = 255


def parse(text: str) -> NetFile:
    net = NetFile()
    node: NetNode | None = None
    pending_guid: int | None = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            node = None if not line else node
            continue
        guid_line = _GUID_LINE.match(line)
        if guid_line:
            if guid_line.group(1) in ("switchguid", "caguid", "hcaguids", "rtguid"):
                pending_guid = int(guid_line.group(2), 0)
            node = None
            continue
        header = _HEADER.match(line)
        if header:
            kind, ports, ident, rest = header.groups()
            count = int(ports)
            if not 1 <= count <= MAX_PORTS:
                raise NetFileError(f"line {number}: {kind} {ident!r} with {count} ports (1 to {MAX_PORTS})")
            if ident in net.nodes:
                raise NetFileError(
                    f"line {number}: {ident!r} is described twice (first at line {net.nodes[ident].line})"
                )
            desc = _COMMENT_DESC.search(rest)
            from_id = _ID_GUID.match(ident)
            guid = int(from_id.group(1), 16) if from_id else pending_guid
            node = NetNode(KINDS[kind], count, ident, desc.group(1) if desc else None, guid, line=number)
            net.nodes[ident] = node
            pending_guid = None
            continue
        port = _PORT.match(line)
        if port:
            if node is None:
                raise NetFileError(f"line {number}: a port line outside a Switch or Ca record: {raw.strip()[:80]!r}")
            local, local_guid, remote, remote_port, remote_guid, rest = port.groups()
            local_n, remote_n = int(local), int(remote_port)
            if not 1 <= local_n <= node.num_ports:
                raise NetFileError(f"line {number}: port {local_n} of {node.id!r}, which has {node.num_ports} ports")
            if local_n in node.ports:
                raise NetFileError(f"line {number}: port {local_n} of {node.id!r} is cabled twice")
            if not 1 <= remote_n <= MAX_PORTS:
                raise NetFileError(f"line {number}: remote port {remote_n} is not a port number")
            link = _LINK.search(rest)
            options = {key: int(value) for key, value in _OPTION.findall(rest.split("#", 1)[0])}
            node.ports[local_n] = NetPort(
                local_n,
                remote,
                remote_n,
                _hex(local_guid),
                _hex(remote_guid),
                f"{link.group(1)}x{link.group(2).upper()}" if link else None,
                options,
            )
            continue
        raise NetFileError(f"line {number}: not a topology line: {raw.strip()[:80]!r}")
    for node in net.nodes.values():
        for port in node.ports.values():
            if port.remote_id not in net.nodes:
                raise NetFileError(
                    f"line {node.line}: {node.id!r} port {port.number} is cabled to {port.remote_id!r}, "
                    "which the file does not describe"
                )
    return net


def _hex(text: str | None) -> int | None:
    return int(text, 16) if text else None


def render(net: NetFile) -> str:
    """The net file ibsim reads: GUIDs set before each record, `w=`/`s=` options where a link has them."""
    out = []
    for node in net.nodes.values():
        if node.guid is not None:
            out.append(f"{'switchguid' if node.kind == 'switch' else 'caguid'}=0x{node.guid:x}")
        keyword = {"switch": "Switch", "ca": "Hca", "router": "Rt"}[node.kind]
        desc = f' # "{node.description}"' if node.description else ""
        out.append(f'{keyword} {node.num_ports} "{node.id}"{desc}')
        for number in sorted(node.ports):
            port = node.ports[number]
            options = "".join(f" {key}={value}" for key, value in sorted(port.options.items()))
            out.append(f'[{number}] "{port.remote_id}"[{port.remote_port}]{options}')
        out.append("")
    return "\n".join(out) + "\n"
