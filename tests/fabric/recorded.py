"""A fabric answered from recorded `smpdump` output, in place of a management datagram port.

ibsim simulates SDR to QDR only, so fabrics it cannot make (XDR, FDR10) are tested on what the diagnostic
tools recorded from them (tests/fixtures/fabric/*/): each directed-route query the collector sends is answered
with the attribute data smpdump printed for that route, attribute and modifier, through the collector's own
engine and discovery. A query the recording does not hold is answered "attribute not supported" and listed in
`unrecorded`, so a test sees it rather than a silent gap.
"""

from __future__ import annotations

import re
from pathlib import Path

from collectors.mads import mad
from collectors.mads.discover import Discovery
from collectors.mads.engine import Engine

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "fabric"
_HEADER = re.compile(r"^# smpdump -D ([\d,]+) (0x[0-9a-f]+) (\d+)")


def read_smpdump(text: str) -> dict[tuple[tuple[int, ...], int, int], bytes]:
    """(route after the local port, attribute, modifier) -> the 64 bytes smpdump printed for it."""
    records, key, hex_lines = {}, None, []
    for line in [*text.splitlines(), ""]:
        header = _HEADER.match(line)
        if header:
            path, attribute, modifier = header.groups()
            key = (tuple(int(p) for p in path.split(","))[1:], int(attribute, 16), int(modifier))
            hex_lines = []
        elif key is not None and line.startswith("SMP status:"):
            data = bytes.fromhex("".join(hex_lines).replace(" ", ""))
            assert len(data) == mad.SMP_DATA_SIZE and key not in records, key
            records[key] = data
            key = None
        elif key is not None:
            hex_lines.append(line)
    return records


class RecordedFabric:
    """send/recv as collectors.mads.umad.UmadPort has them, answering from one fixture's smpdump.txt."""

    def __init__(self, name: str) -> None:
        self.dir = FIXTURES / name
        self.records = read_smpdump((self.dir / "smpdump.txt").read_text())
        self.replies: list[bytes] = []
        self.unrecorded: list[tuple[tuple[int, ...], int, int]] = []
        self.asked: list[tuple[tuple[int, ...], int, int]] = []

    def send(self, mgmt_class, query, lid, qp, qkey, timeout_ms):
        assert mgmt_class == mad.CLASS_SUBN_DIRECTED_ROUTE  # discovery sends nothing else
        key = (tuple(query[129 : 129 + query[7]]), int.from_bytes(query[16:18]), int.from_bytes(query[20:24]))
        self.asked.append(key)
        reply = bytearray(query)
        reply[3] = mad.METHOD_GET_RESPONSE
        data = self.records.get(key)
        if data is None:
            self.unrecorded.append(key)
            reply[4:6] = (0x800C).to_bytes(2)  # direction bit, "method/attribute combination not supported"
        else:
            reply[mad.DATA_OFFSET : mad.DATA_OFFSET + len(data)] = data
        self.replies.append(bytes(reply))

    def recv(self, timeout_ms):
        return (self.replies.pop(0), 0) if self.replies else None

    def text(self, tool: str) -> str:
        return (self.dir / f"{tool}.txt").read_text()

    def discover(self) -> Discovery:
        """The collector's discovery of the recorded fabric, from the port the recording was made on."""
        engine = Engine(self, timeout_ms=50, retries=0)
        discovery = Discovery(engine)
        discovery.start()
        engine.run()
        return discovery
