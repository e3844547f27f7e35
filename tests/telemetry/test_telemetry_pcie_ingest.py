"""Covers fabricweb/telemetry/ingest.py, fabricweb/telemetry/results.py.

Ingest stores a schema-2 snapshot's PCIe tree: Device.pcie_path and Node.gpus, exactly as validated,
rewritten only when they change; a schema-1 snapshot leaves them unknown (null). SQLite and PostgreSQL."""

from __future__ import annotations

import contextlib
import copy
from unittest import mock

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from fabricweb.inventory.models import Device, Node
from fabricweb.telemetry.ingest import ingest_batch, ingest_snapshot
from fabricweb.telemetry.results import STORED
from tests.pcie_trees import DGX_A100_MATRIX, DGX_A100_NICS
from tests.telemetry.pcie_support import UPLINK, Dgx, device, hop
from tests.telemetry.telemetry_support import T0, later


@pytest.fixture
def dgx(tmp_path) -> Dgx:
    return Dgx(str(tmp_path / "sys"))


def stored_paths(host: str = "dgx01") -> dict[str, dict | None]:
    return dict(Device.objects.filter(node__name=host).values_list("name", "pcie_path"))


def gpus(host: str = "dgx01") -> list | None:
    return Node.objects.get(name=host).gpus


@contextlib.contextmanager
def sent():
    """The SQL ingest sends meanwhile: through Django's cursor (SQLite logs executemany as "<n> times: UPDATE
    ..."), and on PostgreSQL through psycopg, which store.update_rows calls itself (server-bound arrays)."""
    statements: list[str] = []
    with CaptureQueriesContext(connection) as ctx:
        if connection.vendor != "postgresql":
            yield statements
        else:
            import psycopg

            execute = psycopg.Cursor.execute

            def spy(cursor, query, *args, **kwargs):
                statements.append(str(query))
                return execute(cursor, query, *args, **kwargs)

            with mock.patch.object(psycopg.Cursor, "execute", spy):
                yield statements
    statements.extend(q["sql"] for q in ctx.captured_queries)


def updates(statements: list[str], table: str, column: str = "") -> list[str]:
    return [sql for sql in statements if "UPDATE" in sql and table in sql and column in sql]


def test_a_dgx_snapshot_is_stored_with_each_path_and_the_gpu_matrix_exactly(each_db, dgx):
    snap = dgx.read()
    assert ingest_snapshot(snap).status == STORED
    assert stored_paths() == {d["name"]: d.get("pcie_path") for d in snap["devices"]}
    path = stored_paths()["mlx5_0"]
    assert [(h["address"], h["kind"], h["current_width"]) for h in path["hops"]] == [
        ("0000:0b:00.0", "switch port", 16),
        ("0000:0a:00.0", "switch port", 16),
        ("0000:02:04.0", "switch port", 16),
        (UPLINK, "switch port", 16),
        ("0000:00:01.1", "root port", 16),
    ]
    assert path["host_bridge"] == "pci0000:00" and path["neighbours"][2] == {
        "address": "0000:12:00.0",
        "kind": "rdma",
        "name": "mlx5_1",
        "via": "0000:0a:00.0",
    }
    assert gpus() == snap["gpus"]
    assert [[g["nics"][n] for n in DGX_A100_NICS] for g in gpus()] == DGX_A100_MATRIX
    assert gpus()[0]["local_cpulist"] == "48-63,176-191" and gpus()[0]["current_gts"] == 16.0


def test_a_hop_that_retrains_to_x8_is_stored_at_the_next_snapshot_and_when_it_trains_back(each_db, dgx):
    ingest_snapshot(dgx.read(T0))
    dgx.retrain(8)
    ingest_snapshot(dgx.read(T0.replace(second=10)))
    paths = stored_paths()
    for name in ("mlx5_0", "mlx5_1"):  # the two cards below that uplink
        assert (hop(paths[name])["current_width"], hop(paths[name])["max_width"]) == (8, 16)
    assert all(h["current_width"] == 16 for name in ("mlx5_2", "mlx5_4") for h in paths[name]["hops"])
    dgx.retrain(16)
    ingest_snapshot(dgx.read(T0.replace(second=20)))
    assert hop(stored_paths()["mlx5_0"])["current_width"] == 16


def test_an_unchanged_tree_costs_no_update_of_devices_or_gpus(each_db, dgx):
    first = dgx.read(T0)
    ingest_snapshot(first)
    with sent() as statements:
        assert ingest_snapshot(later(first, 10)).status == STORED
    assert updates(statements, Node._meta.db_table, "last_collected_at")  # (the spy sees ingest's updates)
    assert updates(statements, Device._meta.db_table) == []
    assert updates(statements, Node._meta.db_table, "gpus") == []
    # A change is written, and only then.
    changed = later(first, 20)
    changed["gpus"][0]["current_width"] = 8
    hop(device(changed, "mlx5_3")["pcie_path"], "0000:40:01.1")["current_gts"] = 8.0
    with sent() as statements:
        ingest_snapshot(changed)
    assert len(updates(statements, Node._meta.db_table, "gpus")) == 1 and gpus()[0]["current_width"] == 8
    assert len(updates(statements, Device._meta.db_table, "pcie_path")) == 1
    assert hop(stored_paths()["mlx5_3"], "0000:40:01.1")["current_gts"] == 8.0


def test_an_old_agent_s_schema_1_snapshot_is_stored_with_the_tree_unknown(each_db, dgx):
    old = dgx.read()
    old["schema"] = 1
    assert ingest_snapshot(old).status == STORED
    assert gpus() is None and set(stored_paths().values()) == {None}
    assert Device.objects.filter(node__name="dgx01").count() == 12


def test_a_node_that_goes_back_to_schema_1_has_its_tree_unknown_again(each_db, dgx):
    ingest_snapshot(dgx.read(T0))
    older = later(dgx.read(T0), 10)
    older["schema"] = 1
    ingest_snapshot(older)
    assert gpus() is None and set(stored_paths().values()) == {None}


def test_a_schema_2_node_without_gpus_stores_an_empty_list(each_db, dgx):
    snap = dgx.read()
    del snap["gpus"]
    ingest_snapshot(snap)
    assert gpus() == []


def test_a_malformed_tree_refuses_the_snapshot_and_stores_nothing_of_it(each_db, dgx):
    good = dgx.read(T0)
    ingest_snapshot(good)
    bad = later(good, 10)
    hop(device(bad, "mlx5_0")["pcie_path"])["current_width"] = "x8"
    other = {**copy.deepcopy(later(good, 10)), "host": "dgx02"}
    other["gpus"][0]["nics"]["mlx5_0"] = "NV12"
    batch = ingest_batch([bad, other, {**later(good, 10), "host": "dgx03"}])
    assert [(r.index, str(r.error)) for r in batch.rejected] == [
        (
            0,
            "snapshot from dgx01 rejected: device mlx5_0.pcie_path.hops[3].current_width: "
            "expected null or a number of lanes from 0 to 64, got 'x8'",
        ),
        (
            1,
            "snapshot from dgx02 rejected: gpus[0].nics['mlx5_0']: "
            "expected one of PIX, PXB, PHB, NODE, SYS, got 'NV12'",
        ),
    ]
    assert [r.node for r in batch.results] == ["dgx03"]  # the others of the batch are stored
    node = Node.objects.get(name="dgx01")
    assert node.last_collected_at == T0 and hop(stored_paths()["mlx5_0"])["current_width"] == 16


@pytest.mark.django_db(transaction=True)  # committed: the rows come from ingest's row cache
def test_with_the_rows_held_in_memory_a_retrained_hop_is_still_written(each_db, dgx, fresh_cache):
    ingest_snapshot(dgx.read(T0))
    ingest_snapshot(dgx.read(T0.replace(second=10)))
    dgx.retrain(8)
    ingest_snapshot(dgx.read(T0.replace(second=20)))
    assert fresh_cache.hits == 2
    assert hop(stored_paths()["mlx5_1"])["current_width"] == 8
    assert gpus() == dgx.read(T0)["gpus"]
