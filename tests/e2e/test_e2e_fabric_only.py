"""Covers fabricweb/runfabric/__main__.py, fabricweb/fabric/models.py, fabricweb/health/models.py,
fabricweb/inventory/models.py.

A fabric whose hosts run no agent: `runfabric --no-sim --ibsim-net FILE` with an empty DIR runs the fabric
collector alone (storage, gateways, a site that starts with the fabric side), and judges the fabric.

Real processes: ibsim on the file, opensm, the fabric collector, ingest, health and beat. The fabric: two
leaves and a spine, a host adapter on each leaf (no agent on either), the uplink of leaf02 trained at DDR
where both ends support QDR: its degraded link's event names both ends.
"""

from __future__ import annotations

import pytest

from fabricweb.fabric.models import Sweep
from fabricweb.health.models import Event
from fabricweb.inventory.models import Node
from tests.e2e.e2e_harness import STARTUP_S, RunningFabric, database_alias, fresh_database, leased_redis_db
from tests.ibsim_support import needs_ibsim

pytestmark = needs_ibsim

NET = """
switchguid=0xb8599f0300000001
Switch 8 "leaf01" # "MF0;leaf01:MQM8790-HS2F/U1"
[1] "st01 mlx5_0"[1] w=2 s=4
[8] "spine01"[1] w=2 s=4

switchguid=0xb8599f0300000002
Switch 8 "leaf02" # "MF0;leaf02:MQM8790-HS2F/U1"
[1] "st02 mlx5_0"[1] w=2 s=4
[8] "spine01"[2] w=2 s=2

switchguid=0xb8599f0300000003
Switch 8 "spine01" # "MF0;spine01:MQM8790-HS2F/U1"
[1] "leaf01"[8] w=2 s=4
[2] "leaf02"[8] w=2 s=2

caguid=0x0c42a10300000011
Hca 1 "st01 mlx5_0" # "st01 mlx5_0"
[1] "leaf01"[1] w=2 s=4

caguid=0x0c42a10300000012
Hca 1 "st02 mlx5_0" # "st02 mlx5_0"
[1] "leaf02"[1] w=2 s=4
"""


@pytest.fixture(scope="module")
def fabric_only(tmp_path_factory, django_db_blocker):
    tmp = tmp_path_factory.mktemp("fabric-only")
    (tmp / "sim").mkdir()  # DIR, with no host tree in it
    net = tmp / "storage.net"
    net.write_text(NET)
    with (
        leased_redis_db() as redis_url,
        fresh_database("sqlite", tmp, migrated=True) as db_url,
        django_db_blocker.unblock(),
        database_alias("e2e_fabric_only", db_url),
    ):
        running = RunningFabric(tmp, "e2e_fabric_only", db_url, redis_url, ["--no-sim", "--ibsim-net", str(net)])
        try:
            yield running
        finally:
            running.stop()


def test_an_empty_dir_with_an_ibsim_fabric_runs_the_collector_alone_and_judges_the_fabric(fabric_only):
    db = fabric_only.db
    fabric_only.wait("a sweep applied", lambda: Sweep.objects.using(db).filter(applied=True).exists(), STARTUP_S + 60)
    switches = set(Node.objects.using(db).filter(kind=Node.Kind.SWITCH).values_list("name", flat=True))
    assert switches == {"leaf01", "leaf02", "spine01"}
    assert not Node.objects.using(db).filter(kind=Node.Kind.HOST).exists()  # no agent ran: no host reported

    def degraded_uplink():
        opened = Event.objects.using(db).filter(resolved_at__isnull=True, kind="degraded")
        return [e for e in opened if "leaf02" in e.message and "spine01" in e.message]

    (event,) = fabric_only.wait("the degraded uplink's event", degraded_uplink, 60)
    assert "DDR" in event.message and "QDR" in event.message
    assert "runfabric exited" not in fabric_only.tail()
