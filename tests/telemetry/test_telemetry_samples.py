"""Covers fabricweb/telemetry/history/samples.py, fabricweb/telemetry/history/rollup.py, fabricweb/telemetry/ingest.py.

Reading packed samples back (fabricweb/telemetry/history/samples.py), on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

from fabricweb.inventory.models import Port
from fabricweb.telemetry.history import samples
from fabricweb.telemetry.history.rollup import rollup
from fabricweb.telemetry.ingest import ingest_batch, ingest_snapshot
from fabricweb.telemetry.models import NodePoll, PortRollup
from tests.telemetry.telemetry_support import T0, later, snapshot


def port(device: str, number: int = 1) -> Port:
    return Port.objects.select_related("device").get(device__node__name="cn001", device__name=device, number=number)


def without(snap: dict, device: str) -> dict:
    return {**snap, "devices": [d for d in snap["devices"] if d["name"] != device]}


def test_a_port_missing_from_the_newest_polls_keeps_its_last_sample(each_db):
    base = snapshot()
    ingest_batch([base, later(base, 10, {"symbol_error": 3})])
    gone = later(base, 20)
    ingest_batch([without(gone, "mlx4_0"), without(later(base, 30), "mlx4_0")])
    last = samples.last_of_port(port("mlx4_0"))
    assert (last.ts, last.symbol_error, last.interval_s) == (T0 + timedelta(seconds=10), 3, 10.0)
    assert samples.last_of_port(port("mlx5_0")).ts == T0 + timedelta(seconds=30)


def test_pages_after_a_cursor_neither_repeat_nor_skip_a_sample(each_db):
    base = snapshot()
    ingest_batch([later(base, 10 * k, {"symbol_error": k}) for k in range(7)])
    mlx5 = port("mlx5_0")
    first = samples.of_port(mlx5, limit=3)
    rest = samples.of_port(mlx5, after=(first[-1].ts, first[-1].pk))
    assert [s.ts for s in first + rest] == [T0 + timedelta(seconds=10 * k) for k in range(7)]
    newest = samples.of_port(mlx5, newest_first=True, limit=2)
    assert [s.ts for s in newest] == [T0 + timedelta(seconds=60), T0 + timedelta(seconds=50)]
    window = samples.of_port(mlx5, T0 + timedelta(seconds=20), T0 + timedelta(seconds=40))  # half-open
    assert [s.ts for s in window] == [T0 + timedelta(seconds=20), T0 + timedelta(seconds=30)]


def test_a_deleted_ports_packed_samples_are_left_out_of_the_rollups(each_db):
    base = snapshot()
    for k in range(6):
        ingest_snapshot(later(base, 60 * k, {"symbol_error": k}))
    deleted = port("mlx4_0", 2).pk
    Port.objects.filter(pk=deleted).delete()  # by an operator: its packed samples stay in the node's rows
    written = rollup(now=T0 + timedelta(minutes=7))
    ports = set(PortRollup.objects.values_list("port_id", flat=True))
    assert ports == set(Port.objects.values_list("pk", flat=True)) and deleted not in ports
    assert written[PortRollup.FIVE_MINUTES] == len(ports)


def test_the_admin_lists_node_polls_and_shows_their_samples_decoded(each_db, client, django_user_model):
    base = snapshot()
    ingest_batch([base, later(base, 10, {"symbol_error": 3})])
    admin = django_user_model.objects.create_superuser("root", "root@example.com", "x")
    client.force_login(admin)
    listing = client.get("/admin/telemetry/nodepoll/", secure=True)
    assert listing.status_code == 200 and "cn001" in listing.content.decode()
    poll = NodePoll.objects.order_by("ts").last()
    page = client.get(f"/admin/telemetry/nodepoll/{poll.pk}/change/", secure=True)
    assert page.status_code == 200
    mlx5 = port("mlx5_0")
    assert f"port {mlx5.pk}: interval_s=10.0" in page.content.decode()
