"""Covers fabricweb/runfabric/__main__.py, collectors/mads/netfile.py,
fabricweb/fabric/management/commands/import_topology.py, collectors/__main__.py.

The switch side end to end: `runfabric --fabric` runs ibsim (a leaf/spine fabric under the simulated hosts),
opensm, a fabric collector sweeping over management datagrams, the node agents, ingest, health and beat,
all real processes.

Six faults, each its own problem naming both ends, opened within a sweep of the fault reaching the fabric:
a host link trained at 1X, an inter-switch link at DDR, a host cabled to the wrong port (against the
expected topology), a switch port unlinked (then relinked), symbol errors rising on a switch port, and a
switch that stops answering MADs. The runtime faults resolve once removed; the cabling one once the expected
topology says where the host really is. Nothing else opens: the rest of the fabric is clean.
(ibsim cannot retrain a link while it runs: 1X and DDR resolving is tested in tests/fabric.)
"""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.utils import timezone

from collectors.mads import netfile
from fabricweb.health.models import Event
from fabricweb.inventory.models import Node
from tests.e2e.e2e_harness import INTERVAL, STARTUP_S, RunningFabric, database_alias, fresh_database, leased_redis_db
from tests.ibsim_support import needs_ibsim

pytestmark = needs_ibsim
SLACK_S = 4.0  # a busy two-core machine: process start-up, the simulator's step, a sweep, a batch
START_FAULTS = ("cn002/mlx4_0/2:width=1X", "leaf02/25:speed=DDR", "cn004/mlx5_1/1:miscable")


@pytest.fixture(scope="module")
def switches(tmp_path_factory, django_db_blocker):
    tmp = tmp_path_factory.mktemp("switches")
    with (
        leased_redis_db() as redis_url,
        fresh_database("postgres", tmp) as db_url,
        django_db_blocker.unblock(),
        database_alias("e2e_switches", db_url),
    ):
        options = ["--nodes", "6", "--fabric", *(f"--fault={spec}" for spec in START_FAULTS)]
        running = RunningFabric(tmp, "e2e_switches", db_url, redis_url, options)
        try:
            yield running
        finally:
            running.stop()


def alarms(fabric) -> dict[str, Event]:
    opened = Event.objects.using(fabric.db).filter(resolved_at__isnull=True).exclude(severity=Event.Severity.INFO)
    return {e.key: e for e in opened}


def run(fabric, *argv: str) -> str:
    done = subprocess.run([sys.executable, *argv], env=fabric.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"{' '.join(argv)}: {done.stdout}{done.stderr}"
    return done.stdout


def fault(fabric, action: str, spec: str) -> None:
    run(fabric, "-m", "collectors", "fault", "--out", str(fabric.sim_dir), action, spec)


def expect(fabric, keys: set[str], what: str, timeout: float) -> dict[str, Event]:
    """Wait until exactly `keys` are the open alarms; fail showing what is open instead."""
    fabric.wait(what, lambda: set(alarms(fabric)) == keys, timeout)
    return alarms(fabric)


def miscabled_at(fabric) -> str:
    """Where fabric.net cabled cn004 mlx5_1 port 1 (the miscable fault): `leaf01 port 7`."""
    net = netfile.parse((fabric.sim_dir / "fabric.net").read_text())
    port = net.nodes["cn004 mlx5_1"].ports[1]
    return f"{port.remote_id} port {port.remote_port}"


def test_each_fault_is_one_problem_naming_both_ends_and_goes_when_the_fault_does(switches):
    fabric = switches
    db = fabric.db
    fabric.wait("the switches swept", lambda: Node.objects.using(db).filter(kind="switch").count() == 3, STARTUP_S)
    run(fabric, "manage.py", "import_topology", str(fabric.sim_dir / "fabric-expected.yaml"))
    wrong_at = miscabled_at(fabric)
    expected = {"degraded:cn002/mlx4_0/2", "degraded:leaf02/switch/25"}
    events = expect(
        fabric, {*expected, "cabling:leaf02/switch/3"}, "the start faults' problems", 6 * INTERVAL + SLACK_S
    )
    assert events["degraded:cn002/mlx4_0/2"].message.startswith("cn002 mlx4_0/2 ↔ leaf01 port 4: trained at ")
    assert "(1X where 12X expected) — both ends support 12X QDR" in events["degraded:cn002/mlx4_0/2"].message
    assert events["degraded:leaf02/switch/25"].message.startswith("leaf02 port 25 ↔ spine01 port ")
    assert "(DDR where QDR expected) — both ends support 12X QDR" in events["degraded:leaf02/switch/25"].message
    cable = events["cabling:leaf02/switch/3"].message
    assert cable == (
        "leaf02 port 3: cabled wrong: expected leaf02 port 3 ↔ cn004 mlx5_1/1; "
        f"cn004 mlx5_1/1 is cabled to {wrong_at}; leaf02 port 3 has no link"
    )
    base = set(events)

    # A switch port unlinked: down, naming both ends, within a sweep; relinked: resolved.
    added = timezone.now()
    fault(fabric, "add", "leaf01/30:down")
    events = expect(fabric, base | {"down:leaf01/switch/30"}, "the unlinked port down", 2 * INTERVAL + SLACK_S)
    down = events["down:leaf01/switch/30"]
    assert down.message.startswith("leaf01 port 30 ↔ spine01 port 10: port down (DOWN, physical state Polling")
    assert (down.opened_at - added).total_seconds() <= 2 * INTERVAL + SLACK_S
    fault(fabric, "remove", "leaf01/30:down")
    expect(fabric, base, "the relinked port's event resolved", 8 * INTERVAL + 2 * SLACK_S)

    # Symbol errors rising on a switch port.
    fault(fabric, "add", "leaf02/2:symbol-errors=50/s")
    events = expect(fabric, base | {"symbol_errors:leaf02/switch/2"}, "symbol errors", 3 * INTERVAL + SLACK_S)
    assert events["symbol_errors:leaf02/switch/2"].message.startswith("leaf02 port 2 ↔ cn004 mlx5_0/1: ")
    fault(fabric, "remove", "leaf02/2:symbol-errors")
    expect(fabric, base, "the symbol errors' event resolved", 8 * INTERVAL + 2 * SLACK_S)

    # A switch that stops answering management datagrams: one event, its own; then it answers again.
    fault(fabric, "add", "leaf02:mute")
    events = expect(fabric, base | {"unreachable:leaf02"}, "the mute switch", 4 * INTERVAL + 2 * SLACK_S)
    assert events["unreachable:leaf02"].message.startswith(
        "leaf02: switch not answering management datagrams: its link to spine01 port "
    )
    fault(fabric, "remove", "leaf02:mute")
    # Found again at the next full sweep, then clean for the polls an event needs to resolve: more sweeps than
    # a port's fault takes (a busy CI machine once needed more than 16 s).
    expect(fabric, base, "the switch answering again", 12 * INTERVAL + 2 * SLACK_S)

    # The host is where it is: the expected topology, corrected, resolves the cabling problem.
    text = (fabric.sim_dir / "fabric-expected.yaml").read_text()
    fixed = fabric.tmp / "expected-fixed.yaml"
    fixed.write_text(text.replace("leaf02 port 3 -- cn004 mlx5_1/1", f"{wrong_at} -- cn004 mlx5_1/1"))
    run(fabric, "manage.py", "import_topology", str(fixed))
    expect(fabric, expected, "the cabling event resolved", 6 * INTERVAL + 2 * SLACK_S)
    time.sleep(3 * INTERVAL)
    assert set(alarms(fabric)) == expected  # and nothing else opened meanwhile
    assert timezone.now() - added < timedelta(minutes=5)
