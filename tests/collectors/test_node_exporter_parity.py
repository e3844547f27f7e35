"""Covers collectors/.

Our sysfs reader against node_exporter's infiniband collector, on the same real trees.

Parity: every counter, state id, physical state id, rate and info label node_exporter
prints for a tree is what our reader reports for it (after mapping its metric names to
the sysfs file names), and nothing we read from those files is missing from its output.

Robustness: one broken file makes node_exporter give up on the whole infiniband
collector (every device and port of the host), while our reader loses only that value
and names the file in `errors`. The cases were found by running node_exporter 1.5.0
(Debian 12) against copies of the fixture tree.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from collectors import read_host, to_dict
from tests.collectors.node_exporter_support import (
    NE_TREE,
    PHYS_STATE,
    PORT_COUNTERS,
    PROCFS_TREE,
    RATE,
    STATE,
    Key,
    NodeExporter,
    collector_success,
    ne_samples,
)
from tests.collectors.sysfs_fixtures import FIXTURES, flat

GOLDEN = FIXTURES / "node-exporter" / "expected-node_exporter.prom"


# -- node_exporter ----------------------------------------------------------------


def _binary() -> str:
    path = shutil.which("prometheus-node-exporter") or shutil.which("node_exporter")
    if path is None:
        message = "prometheus-node-exporter is not installed (apt-get install prometheus-node-exporter)"
        if os.environ.get("CI"):
            pytest.fail(message + ": CI must run the parity tests")
        pytest.skip(message)
    return path


@pytest.fixture
def node_exporter() -> Iterator[NodeExporter]:
    ne = NodeExporter(_binary())
    try:
        yield ne
    finally:
        ne.close()


# -- the two views ----------------------------------------------------------------


def our_samples(root: Path) -> tuple[dict[Key, float], dict[str, dict[str, str]]]:
    """Our reader's values, named the way node_exporter names them."""
    snap = read_host(str(root), host="parity", use_verbs=False)
    values: dict[Key, float] = {}
    info: dict[str, dict[str, str]] = {}
    for dev in snap.devices:
        # node_exporter prints an absent hca_type (hfi1) as an empty label.
        info[dev.name] = {"board_id": dev.board_id, "firmware_version": dev.fw_ver, "hca_type": dev.hca_type or ""}
        for p in dev.ports:
            port = str(p.number)
            for metric, (where, name) in PORT_COUNTERS.items():
                value = getattr(p, where).get(name)
                if value is not None:
                    values[(metric, dev.name, port)] = float(value)
            if p.state is not None:
                values[(STATE, dev.name, port)] = float(p.state.id)
            if p.phys_state is not None:
                values[(PHYS_STATE, dev.name, port)] = float(p.phys_state.id)
            if p.rate is not None:
                values[(RATE, dev.name, port)] = p.rate.bytes_per_second
    return values, info


def assert_same(ours: dict[Key, float], theirs: dict[Key, float]) -> None:
    only_ours = sorted(set(ours) - set(theirs))
    only_theirs = sorted(set(theirs) - set(ours))
    differ = {k: (ours[k], theirs[k]) for k in sorted(set(ours) & set(theirs)) if ours[k] != theirs[k]}
    assert not only_ours, f"we report series node_exporter does not: {only_ours}"
    assert not only_theirs, f"node_exporter reports series we do not: {only_theirs}"
    assert not differ, f"values differ (ours, node_exporter's): {differ}"


# -- parity -----------------------------------------------------------------------


def test_golden_output_equals_our_reader() -> None:
    """node_exporter's own end-to-end golden file for its fixture tree, value by value."""
    theirs, their_info = ne_samples(GOLDEN.read_text())
    ours, our_info = our_samples(NE_TREE)
    assert len(theirs) == 49  # the golden file's per-port series: nothing silently unparsed
    assert_same(ours, theirs)
    assert our_info == their_info


@pytest.mark.needs_node_exporter
@pytest.mark.parametrize("tree", [NE_TREE, PROCFS_TREE], ids=["node-exporter", "procfs"])
def test_same_values_as_node_exporter(node_exporter: NodeExporter, tree: Path) -> None:
    text = node_exporter.scrape(tree)
    assert collector_success(text) == 1.0
    theirs, their_info = ne_samples(text)
    ours, our_info = our_samples(tree)
    assert theirs, "node_exporter reported no infiniband series"
    assert_same(ours, theirs)
    assert our_info == their_info


# -- robustness: one broken file --------------------------------------------------


def _copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    # The fixtures are read-only; the copy must be writable for non-root users too.
    for dirpath, _, filenames in os.walk(dst):
        os.chmod(dirpath, 0o755)
        for f in filenames:
            os.chmod(os.path.join(dirpath, f), 0o644)
    return dst


def _write(rel: str, data: bytes) -> Callable[[Path], None]:
    def mutate(ib: Path) -> None:
        (ib / rel).write_bytes(data)

    return mutate


def _make_dir(rel: str) -> Callable[[Path], None]:
    def mutate(ib: Path) -> None:
        (ib / rel).unlink()
        (ib / rel).mkdir()

    return mutate


def _remove(rel: str) -> Callable[[Path], None]:
    def mutate(ib: Path) -> None:
        (ib / rel).unlink()

    return mutate


def _port_named(name: str) -> Callable[[Path], None]:
    def mutate(ib: Path) -> None:
        shutil.copytree(ib / "mlx4_0/ports/2", ib / "mlx4_0/ports" / name)

    return mutate


def _file_for_dir(rel: str) -> Callable[[Path], None]:
    def mutate(ib: Path) -> None:
        shutil.rmtree(ib / rel)
        (ib / rel).write_text("0\n")

    return mutate


P1 = "mlx4_0/ports/1"
C = f"{P1}/counters/port_xmit_discards"  # not capped, so no capped flag goes with it
# (id, how to break the tree, the file our reader must name in errors)
BREAKS = [
    ("counter-garbage", _write(C, b"garbage\n"), C),
    ("counter-negative", _write(C, b"-5\n"), C),
    ("counter-over-64-bits", _write(C, b"18446744073709551616\n"), C),
    ("counter-fraction", _write(C, b"1.5\n"), C),
    ("counter-empty", _write(C, b""), C),
    ("counter-not-utf8", _write(C, b"\xff\xfe\n"), C),
    (
        "counters_ext-garbage",
        _write(f"{P1}/counters_ext/port_rcv_data_64", b"garbage\n"),
        f"{P1}/counters_ext/port_rcv_data_64",
    ),
    # Port 2: its counters hold no capped value, whose flag would go with them.
    ("counters-is-a-file", _file_for_dir("mlx4_0/ports/2/counters"), "mlx4_0/ports/2/counters"),
    ("rate-garbage", _write(f"{P1}/rate", b"fast\n"), f"{P1}/rate"),
    ("rate-empty", _write(f"{P1}/rate", b""), f"{P1}/rate"),
    ("rate-is-a-directory", _make_dir(f"{P1}/rate"), f"{P1}/rate"),
    ("state-without-id", _write(f"{P1}/state", b"ACTIVE\n"), f"{P1}/state"),
    ("state-is-a-directory", _make_dir(f"{P1}/state"), f"{P1}/state"),
    ("phys_state-garbage-id", _write(f"{P1}/phys_state", b"x: LinkUp\n"), f"{P1}/phys_state"),
    ("fw_ver-is-a-directory", _make_dir("mlx4_0/fw_ver"), "mlx4_0/fw_ver"),
    ("board_id-is-a-directory", _make_dir("mlx4_0/board_id"), "mlx4_0/board_id"),
    ("hca_type-is-a-directory", _make_dir("mlx4_0/hca_type"), "mlx4_0/hca_type"),
    ("port-dir-not-a-number", _port_named("x"), "mlx4_0/ports/x"),
]
# A file that is simply absent is no error for us (driver-dependent files may be
# missing: the value is None), but node_exporter treats the whole class as absent.
MISSING = [f"{P1}/rate", f"{P1}/state", f"{P1}/phys_state", "mlx4_0/fw_ver", "mlx4_0/board_id"]


def _values(root: Path) -> tuple[dict[tuple, object], list[dict]]:
    snap = to_dict(read_host(str(root), host="parity", use_verbs=False, now=0.0))
    errors = snap.pop("errors")
    snap.pop("source")  # names the sysfs root, which differs between the copies
    return flat(snap), errors


def _owner(ib_rel: str) -> tuple:
    """The key prefix in our snapshot of the value a file (or directory) feeds."""
    parts = ib_rel.split("/")
    if len(parts) == 2:  # a device attribute
        return ("devices", parts[0], parts[1])
    if len(parts) == 3:  # a port directory
        return ("devices", parts[0], "ports", int(parts[2]) if parts[2].isdigit() else parts[2])
    key = ("devices", parts[0], "ports", int(parts[2]), parts[3])
    return (*key, *parts[4:5])


def _changed(clean: dict[tuple, object], broken: dict[tuple, object]) -> set[tuple]:
    return {k for k in clean.keys() | broken.keys() if clean.get(k, "absent") != broken.get(k, "absent")}


def _broken_copy(tmp_path: Path, mutate: Callable[[Path], None]) -> Path:
    root = _copy_tree(NE_TREE, tmp_path / "sys")
    mutate(root / "class" / "infiniband")
    return root


def _assert_node_exporter_gave_up(text: str) -> None:
    theirs, their_info = ne_samples(text)
    assert collector_success(text) == 0.0
    assert not theirs and not their_info, "node_exporter kept some infiniband series"


@pytest.mark.needs_node_exporter
@pytest.mark.parametrize(("mutate", "bad"), [b[1:] for b in BREAKS], ids=[b[0] for b in BREAKS])
def test_one_bad_file_costs_node_exporter_everything_and_us_one_value(
    node_exporter: NodeExporter, tmp_path: Path, mutate: Callable[[Path], None], bad: str
) -> None:
    root = _broken_copy(tmp_path, mutate)
    _assert_node_exporter_gave_up(node_exporter.scrape(root))

    clean, clean_errors = _values(NE_TREE)
    broken, errors = _values(root)
    bad_path = str(root / "class" / "infiniband" / bad)
    assert bad_path in {e["path"] for e in errors}, f"{bad} not named in errors: {errors}"
    # Every error of the clean tree is still there, and only the bad file was added.
    assert len(errors) == len(clean_errors) + 1
    owner = _owner(bad)
    changed = _changed(clean, broken)
    if any(k[: len(owner)] == owner for k in clean):
        assert changed, "the broken value was still reported"
    stray = {k for k in changed if k[: len(owner)] != owner}
    assert not stray, f"one bad file changed other values: {sorted(stray)}"
    assert all(broken.get(k) is None for k in changed), "the bad value must be None (or absent), never a guess"


@pytest.mark.needs_node_exporter
@pytest.mark.parametrize("missing", MISSING)
def test_a_missing_file_costs_node_exporter_everything_and_us_one_value(
    node_exporter: NodeExporter, tmp_path: Path, missing: str
) -> None:
    root = _broken_copy(tmp_path, _remove(missing))
    # node_exporter reads this as "no InfiniBand here" (logged at debug level only).
    _assert_node_exporter_gave_up(node_exporter.scrape(root))

    clean, clean_errors = _values(NE_TREE)
    broken, errors = _values(root)
    assert len(errors) == len(clean_errors)
    owner = _owner(missing)
    changed = _changed(clean, broken)
    assert changed and all(k[: len(owner)] == owner and broken.get(k) is None for k in changed)


def _make_fifo(rel: str) -> Callable[[Path], None]:
    def mutate(ib: Path) -> None:
        (ib / rel).unlink()
        os.mkfifo(ib / rel)

    return mutate


@pytest.mark.needs_node_exporter
@pytest.mark.parametrize("make", [_make_dir, _make_fifo], ids=["directory", "fifo"])
def test_a_non_file_in_place_of_a_counter_costs_node_exporter_that_series(
    node_exporter: NodeExporter, tmp_path: Path, make: Callable[[str], Callable[[Path], None]]
) -> None:
    """Not every break is fatal to it: a non-file in counters/ is skipped silently."""
    bad = C
    root = _broken_copy(tmp_path, make(bad))
    text = node_exporter.scrape(root)
    assert collector_success(text) == 1.0
    theirs, _ = ne_samples(text)
    clean, _ = ne_samples(GOLDEN.read_text())
    lost = set(clean) - set(theirs)
    assert lost == {("node_infiniband_port_discards_transmitted_total", "mlx4_0", "1")}

    ours, _ = our_samples(root)
    assert_same(ours, theirs)  # we too drop exactly that value, but say so:
    _, errors = _values(root)
    assert str(root / "class" / "infiniband" / bad) in {e["path"] for e in errors}
