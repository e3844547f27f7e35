"""Covers collectors/.

Arbitrary bytes into every kind of file the sysfs reader reads.

For each file kind, one file of a complete tree (real fixture files plus every
optional attribute, a PCI function and its netdevs) is overwritten per example and
the host is read again. Whatever the bytes:
- nothing escapes read_host(), and to_dict() stays JSON-serialisable;
- the value is either parsed, and then consistent with the file's text, or None,
  and then the file is named in `errors` (bar the documented "unknown" values);
- every other value of the device and the host is what the clean tree gives.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from collectors import read_host, to_dict
from tests.collectors.sysfs_fixtures import FIXTURES, flat

U64_MAX = (1 << 64) - 1
PAGE = 4096  # the reader reads one page, the most a sysfs attribute holds

# -- the tree ---------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mlx5_0 with two ports and every file kind the reader knows, beside procfs' mlx4_0."""
    root = tmp_path_factory.mktemp("fuzz") / "sys"
    ib = root / "class" / "infiniband"
    src = FIXTURES / "procfs" / "sys" / "class" / "infiniband"
    shutil.copytree(src / "mlx4_0", ib / "mlx4_0")
    shutil.copytree(src / "mlx5_0", ib / "mlx5_0")
    shutil.copytree(src / "mlx5_0" / "ports" / "1", ib / "mlx5_0" / "ports" / "2")
    ext = FIXTURES / "node-exporter" / "sys" / "class" / "infiniband" / "mlx4_0" / "ports" / "1" / "counters_ext"
    shutil.copytree(ext, ib / "mlx5_0" / "ports" / "1" / "counters_ext")
    for dirpath, _, files in os.walk(root):  # the fixtures are read-only
        os.chmod(dirpath, 0o755)
        for f in files:
            os.chmod(os.path.join(dirpath, f), 0o644)

    dev = ib / "mlx5_0"
    for name, text in {
        "node_type": "1: CA\n",
        "sys_image_guid": "0a7f:bc12:45ef:d23b\n",
        "hw_rev": "0x0\n",
        "node_desc": "cn042 mlx5_0\n",
        "hw_counters/lifespan": "10\n",
        "hw_counters/RcvOverflow": "7\n",
        "hw_counters/DcRecvErr": "0\n",
    }.items():
        _write(dev / name, text)
    for port in ("1", "2"):
        for name, text in (("lid", "0x1a"), ("sm_lid", "0x1"), ("lid_mask_count", "0"), ("cap_mask", "0x2651e848")):
            _write(dev / "ports" / port / name, text + "\n")

    pci = root / "devices" / "pci0000:3a" / "0000:3a:00.0" / "0000:3b:00.0"
    for name, text in {
        "current_link_speed": "16.0 GT/s PCIe\n",
        "max_link_speed": "16.0 GT/s PCIe\n",
        "current_link_width": "16\n",
        "max_link_width": "16\n",
        "numa_node": "0\n",
        "net/ib0/dev_port": "0\n",
        "net/ib1/dev_port": "1\n",
    }.items():
        _write(pci / name, text)
    os.symlink(os.path.relpath(pci, dev), dev / "device")
    return root


def _read(root: Path) -> dict:
    return to_dict(read_host(str(root), host="fuzz", use_verbs=False, now=0.0))


@pytest.fixture(scope="module")
def clean(tree: Path) -> dict:
    snap = _read(tree)
    assert snap["errors"] == [], "the fuzz tree must read clean"
    return snap


# -- file kinds and what a parsed value must look like --------------------------


def _text_of(data: bytes) -> str:
    return data[:PAGE].decode("utf-8", "replace").strip()


def _decimal(text: str) -> int | None:
    """The value of a plain unsigned decimal sysfs number, None for anything else."""
    return int(text) if text.isascii() and text.isdigit() and int(text) <= U64_MAX else None


def check_text(value: object, data: bytes) -> None:
    assert isinstance(value, str) and value
    assert value == _text_of(data)


def check_decimal(value: object, data: bytes, scale: int = 1) -> None:
    assert isinstance(value, int) and not isinstance(value, bool)
    raw = _decimal(_text_of(data))
    assert raw is not None and value == raw * scale


def check_hex(value: object, data: bytes) -> None:
    text = _text_of(data)
    assert isinstance(value, int) and text.startswith("0x") and text.isascii()
    assert value == int(text, 16) <= U64_MAX


def check_enum(value: object, data: bytes) -> None:
    assert isinstance(value, dict) and set(value) == {"id", "name"}
    text = _text_of(data)
    head, _, name = text.partition(":")
    assert _decimal(head) == value["id"]
    assert name.removeprefix(" ") == value["name"]


def check_rate(value: object, data: bytes) -> None:
    text = _text_of(data)
    assert isinstance(value, dict) and text.isascii()
    assert float(text.split(" ")[0]) == value["gbps"]
    if value["lanes"] is not None:
        assert f"({value['lanes']}X" in text
    assert value["bytes_per_second"] == value["gbps"] * 1e9 / 8


def check_pci_speed(value: object, data: bytes) -> None:
    text = _text_of(data)
    assert isinstance(value, float) and text.isascii() and "GT/s" in text
    assert float(text.split("GT/s")[0]) == value


def check_numa(value: object, data: bytes) -> None:
    text = _text_of(data)
    assert isinstance(value, int) and value >= 0 and text.isascii()
    assert value == int(text)


def _no_numa(data: bytes) -> bool:
    text = _text_of(data)
    return text.startswith("-") and text[1:].isascii() and text[1:].isdigit()  # -1: no NUMA affinity


@dataclass(frozen=True)
class Kind:
    rel: str  # under class/infiniband
    key: tuple  # where its value lies in the flattened snapshot
    check: Callable[[object, bytes], None]
    valid: tuple[bytes, ...]  # real-world contents that must parse
    none_ok: Callable[[bytes], bool] = lambda data: False  # None without an error is right for these
    also: tuple[tuple, ...] = ()  # other keys it may change (a counter's capped flag)


def _counter(port: str, d: str, name: str, scale: int = 1) -> Kind:
    capped = (("devices", "mlx5_0", "ports", int(port), "capped"),) if d == "counters" else ()
    return Kind(
        f"mlx5_0/ports/{port}/{d}/{name}",
        ("devices", "mlx5_0", "ports", int(port), d, name),
        lambda v, data: check_decimal(v, data, scale),
        (b"0\n", b"18446744073709551615\n", b"4294967295\n", b"12345678901\n"),
        also=capped,
    )


D = ("devices", "mlx5_0")
P = (*D, "ports", 1)
KINDS = [
    Kind("mlx5_0/node_type", (*D, "node_type"), check_enum, (b"1: CA\n", b"2: switch\n", b"4: RNIC\n")),
    *(
        Kind(f"mlx5_0/{a}", (*D, a), check_text, (b"0002:c903:00a1:b2c0\n", b"MT_0000000223\n", b"cn042 HCA-1\n"))
        for a in ("node_guid", "sys_image_guid", "fw_ver", "hca_type", "board_id", "hw_rev", "node_desc")
    ),
    Kind("mlx5_0/ports/1/state", (*P, "state"), check_enum, (b"4: ACTIVE\n", b"1: DOWN\n", b"5: ACTIVE_DEFER\n")),
    Kind("mlx5_0/ports/1/phys_state", (*P, "phys_state"), check_enum, (b"5: LinkUp\n", b"7: Phy Test\n")),
    Kind(
        "mlx5_0/ports/1/rate",
        (*P, "rate"),
        check_rate,
        (b"100 Gb/sec (4X EDR)\n", b"2.5 Gb/sec (1X SDR)", b"10 Gb/sec (4X)\n", b"0 GB/sec\n", b"800 Gb/sec (4X XDR)"),
    ),
    Kind("mlx5_0/ports/1/link_layer", (*P, "link_layer"), check_text, (b"InfiniBand\n", b"Ethernet\n")),
    Kind("mlx5_0/ports/1/lid", (*P, "lid"), check_hex, (b"0x1a\n", b"0xffff\n")),
    Kind("mlx5_0/ports/1/sm_lid", (*P, "sm_lid"), check_hex, (b"0x0\n", b"0x1\n")),
    Kind("mlx5_0/ports/1/lid_mask_count", (*P, "lmc"), check_decimal, (b"0\n", b"7\n")),
    Kind("mlx5_0/ports/1/cap_mask", (*P, "cap_mask"), check_hex, (b"0x2651e848\n", b"0x00000000\n")),
    _counter("1", "counters", "symbol_error"),
    _counter("1", "counters", "port_xmit_data", 4),
    _counter("1", "counters", "port_xmit_wait"),
    _counter("2", "counters", "unicast_rcv_packets"),
    _counter("1", "counters_ext", "port_rcv_data_64", 4),
    _counter("1", "counters_ext", "port_unicast_xmit_packets"),
    _counter("1", "hw_counters", "out_of_buffer"),
    _counter("2", "hw_counters", "rnr_nak_retry_err"),
    Kind(
        "mlx5_0/hw_counters/RcvOverflow",
        (*D, "hw_counters", "RcvOverflow"),
        check_decimal,
        (b"0\n", b"18446744073709551615\n"),
    ),
    *(
        Kind(
            f"mlx5_0/device/{f}",
            (*D, "pci", key),
            check_pci_speed,
            (b"16.0 GT/s PCIe\n", b"8 GT/s\n", b"2.5 GT/s\n", b"32.0 GT/s PCIe\n"),
            none_ok=lambda data: _text_of(data) == "Unknown",  # virtual functions
        )
        for f, key in (("current_link_speed", "current_gts"), ("max_link_speed", "max_gts"))
    ),
    *(
        Kind(f"mlx5_0/device/{f}", (*D, "pci", key), check_decimal, (b"16\n", b"8\n", b"1\n"))
        for f, key in (("current_link_width", "current_width"), ("max_link_width", "max_width"))
    ),
    Kind("mlx5_0/device/numa_node", (*D, "pci", "numa_node"), check_numa, (b"0\n", b"3"), none_ok=_no_numa),
]
DEV_PORT = "mlx5_0/device/net/ib0/dev_port"
ALL_FILES = [k.rel for k in KINDS] + [DEV_PORT]

# Contents hypothesis might take long to reach on its own.
NASTY = [
    b"",
    b"\n",
    b" \t\r\n\x0b\x0c",
    b"\x00",
    b"4\x00",
    b"N/A (no PMA)\n",
    b"-1\n",
    b"-0\n",
    b"+5\n",
    b"1_000\n",
    b" 42 \n",
    b"18446744073709551616\n",  # 2**64
    b"9" * 5000,
    b"0x" + b"f" * 4000,  # more decimal digits than int->str allows
    b"0x_1\n",
    b"0x\n",
    "\u0664: ACTIVE\n".encode(),  # an Arabic-Indic 4
    "\u0664\u0660 Gb/sec (4X QDR)\n".encode(),
    "\uff11\uff16.0 GT/s PCIe\n".encode(),  # fullwidth 16
    b"\xff\xfe\xfd",
    b"\xc3",
    b"4: ACTIVE\n\x00garbage",
    b"1e3\n",
    b"inf\n",
    b"nan\n",
    b"0x1a extra\n",
    b"Unknown\n",
]
# Run for every kind on every run, whatever hypothesis draws: each broke the reader once.
ALWAYS = [
    b"18446744073709551616\n",
    b"9" * 5000,
    b"0x" + b"f" * 4000,
    "\u0664: ACTIVE\n".encode(),
    "\u0664\u0660 Gb/sec (4X QDR)\n".encode(),
    "\uff11\uff16.0 GT/s PCIe\n".encode(),
    "\uff13\n".encode(),
]
fuzz_bytes = st.one_of(
    st.binary(max_size=80),
    st.text(max_size=40).map(str.encode),
    st.text(alphabet="0123456789 -+x:.GTbs/()XNADRQEHF\n\t", max_size=30).map(str.encode),
    st.sampled_from(NASTY),
)


def _get(snap: dict, key: tuple) -> object:
    """The value at a flattened key in the nested snapshot; None where it is absent."""
    node: object = snap
    for part in key:
        if isinstance(node, list):  # devices by name, ports by number
            node = next((x for x in node if part in (x.get("name"), x.get("port"))), None)
        elif isinstance(node, dict):
            node = node.get(part)
        if node is None:
            return None
    return node


def _changed(clean: dict[tuple, object], now: dict[tuple, object]) -> set[tuple]:
    return {k for k in clean.keys() | now.keys() if clean.get(k, "<absent>") != now.get(k, "<absent>")}


def _starts(key: tuple, prefixes: tuple[tuple, ...]) -> bool:
    return any(key[: len(p)] == p for p in prefixes)


@pytest.fixture
def put(tree: Path) -> Iterator[Callable[[str, bytes], None]]:
    """Overwrite one file of the shared tree; every file touched is restored afterwards."""
    ib = tree / "class" / "infiniband"
    saved: dict[Path, bytes] = {}

    def write(rel: str, data: bytes) -> None:
        path = ib / rel
        saved.setdefault(path, path.read_bytes())
        path.write_bytes(data)

    yield write
    for path, data in saved.items():
        path.write_bytes(data)


def _read_checked(tree: Path) -> tuple[dict, dict[tuple, object], list[dict]]:
    snap = _read(tree)  # must not raise, whatever the bytes
    json.loads(json.dumps(snap, allow_nan=False))
    return snap, flat({k: v for k, v in snap.items() if k != "errors"}), snap["errors"]


def _named(tree: Path, rel: str, errors: list[dict]) -> bool:
    return str(tree / "class" / "infiniband" / rel) in {e["path"] for e in errors}


# -- the properties ---------------------------------------------------------------

FUZZ = settings(
    max_examples=45,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def _always(test):
    for data in ALWAYS:
        test = example(data=data)(test)
    return test


@pytest.mark.parametrize("kind", KINDS, ids=[k.rel.removeprefix("mlx5_0/") for k in KINDS])
@FUZZ
@given(data=fuzz_bytes)
@_always
def test_any_bytes_cost_at_most_that_value(tree: Path, clean: dict, put, kind: Kind, data: bytes) -> None:
    put(kind.rel, data)
    snap, now, errors = _read_checked(tree)
    base = flat({k: v for k, v in clean.items() if k != "errors"})

    stray = {k for k in _changed(base, now) if not _starts(k, (kind.key, *kind.also))}
    assert not stray, f"{kind.rel} = {data[:60]!r} changed other values: {sorted(stray)}"
    # Errors: at most this file's own.
    assert all(e["path"].endswith("/" + kind.rel) for e in errors), errors

    value = _get(snap, kind.key)
    if value is None:
        assert kind.none_ok(data) or _named(tree, kind.rel, errors), f"{data[:60]!r} lost without an error"
    else:
        kind.check(value, data)
        assert not errors, f"{data[:60]!r} parsed as {value!r} yet reported as an error"


@pytest.mark.parametrize("kind", KINDS, ids=[k.rel.removeprefix("mlx5_0/") for k in KINDS])
def test_real_world_contents_parse(tree: Path, put, kind: Kind) -> None:
    for data in kind.valid:
        put(kind.rel, data)
        snap = _read(tree)
        assert snap["errors"] == [], data
        value = _get(snap, kind.key)
        assert value is not None, data
        kind.check(value, data)


def _ports_of(snap: dict[tuple, object], ifname: str) -> list[int]:
    return [k[3] for k, v in snap.items() if k[-1] == "netdevs" and k[1] == "mlx5_0" and ifname in v]


@FUZZ
@given(data=fuzz_bytes | st.sampled_from([b"0\n", b"1\n", b"2\n", b"00\n", b"18446744073709551615\n"]))
@example(data=b"1\n")
@_always
def test_any_dev_port_attaches_the_netdev_right_or_not_at_all(tree: Path, clean: dict, put, data: bytes) -> None:
    put(DEV_PORT, data)
    _, now, errors = _read_checked(tree)
    base = flat({k: v for k, v in clean.items() if k != "errors"})
    netdevs = (("devices", "mlx5_0", "ports", 1, "netdevs"), ("devices", "mlx5_0", "ports", 2, "netdevs"))
    assert all(_starts(k, netdevs) for k in _changed(base, now))

    n = _decimal(_text_of(data))
    if n is None:
        assert _ports_of(now, "ib0") == [] and _named(tree, DEV_PORT, errors)
    else:  # dev_port is 0-based; a port this device does not have attaches nowhere
        assert _ports_of(now, "ib0") == ([n + 1] if n + 1 in (1, 2) else []) and not errors
    assert _ports_of(now, "ib1") == [2]


# -- things that are not files ---------------------------------------------------


def _replace(tree: Path, rel: str, make: Callable[[Path], None]) -> Callable[[], None]:
    """Put something else where a file is; returns the undo."""
    path = tree / "class" / "infiniband" / rel
    data = path.read_bytes()
    path.unlink()
    make(path)

    def undo() -> None:
        if path.is_dir() and not path.is_symlink():
            path.rmdir()
        else:
            path.unlink()
        path.write_bytes(data)

    return undo


def _loop(path: Path) -> None:
    os.symlink(path.name, path)  # a symlink to itself: ELOOP


NOT_FILES = {"directory": Path.mkdir, "fifo": os.mkfifo, "symlink-loop": _loop}


def _read_with_timeout(tree: Path, fifo: Path | None, seconds: float = 3.0) -> dict:
    """read_host in a thread: a reader that blocks on a FIFO fails the test instead of hanging it."""
    box: dict[str, object] = {}
    t = threading.Thread(target=lambda: box.update(snap=_read(tree)), daemon=True)
    t.start()
    t.join(seconds)
    if t.is_alive():
        if fifo is not None:  # a writer that goes away at once releases the reader's open()
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        t.join(seconds)
        pytest.fail("read_host blocked on a FIFO: the reader must open files with O_NONBLOCK")
    return box["snap"]  # type: ignore[return-value]


@pytest.mark.parametrize("what", list(NOT_FILES))
@pytest.mark.parametrize("rel", ALL_FILES, ids=[r.removeprefix("mlx5_0/") for r in ALL_FILES])
def test_a_non_file_costs_only_that_value_and_is_named(tree: Path, clean: dict, rel: str, what: str) -> None:
    undo = _replace(tree, rel, NOT_FILES[what])
    try:
        fifo = tree / "class" / "infiniband" / rel if what == "fifo" else None
        snap = _read_with_timeout(tree, fifo)
    finally:
        undo()
    json.dumps(snap)
    assert [e["path"] for e in snap["errors"]] == [str(tree / "class" / "infiniband" / rel)]
    kind = next((k for k in KINDS if k.rel == rel), None)
    allowed = (
        (kind.key, *kind.also)
        if kind
        else (("devices", "mlx5_0", "ports", 1, "netdevs"), ("devices", "mlx5_0", "ports", 2, "netdevs"))
    )
    base, now = (
        flat({k: v for k, v in clean.items() if k != "errors"}),
        flat({k: v for k, v in snap.items() if k != "errors"}),
    )
    changed = _changed(base, now)
    assert changed and all(_starts(k, allowed) for k in changed), sorted(changed)
    assert all(now.get(k) in (None, []) for k in changed)


@pytest.mark.parametrize("rel", ALL_FILES, ids=[r.removeprefix("mlx5_0/") for r in ALL_FILES])
def test_a_missing_file_is_none_and_no_error(tree: Path, clean: dict, rel: str) -> None:
    path = tree / "class" / "infiniband" / rel
    data = path.read_bytes()
    path.unlink()
    try:
        snap = _read(tree)
    finally:
        path.write_bytes(data)
    assert snap["errors"] == []
    base, now = (
        flat({k: v for k, v in clean.items() if k != "errors"}),
        flat({k: v for k, v in snap.items() if k != "errors"}),
    )
    assert all(now.get(k) in (None, []) for k in _changed(base, now))
