"""Covers fabricweb/runfabric/__main__.py, collectors/__main__.py.

Notifications end to end: runfabric (simulator, agents, ingest, the alerts worker, beat) on SQLite and a
leased Redis; a port goes down in the simulator and the on-call receivers hear it, then hear it is over:
a local webhook receiver, Debian's prometheus-alertmanager (checked through its v2 API) and an aiosmtpd
SMTP server."""

from __future__ import annotations

import subprocess
import sys

import pytest

from fabricweb.alerts.models import Channel
from fabricweb.inventory.models import Node
from tests.alerts import alerts_support
from tests.alerts.alerts_support import Alertmanager, HttpReceiver
from tests.e2e.e2e_harness import INTERVAL, RunningFabric, database_alias, fresh_database, leased_redis_db

NODES = 3
BASE = "https://fabric.example.org"
PORT = "cn001/mlx5_0/1"
smtp_server = alerts_support.smtp_server  # the fixture


@pytest.fixture
def receivers(tmp_path):
    hook = HttpReceiver().start()
    am = Alertmanager(tmp_path)
    try:
        yield hook, am
    finally:
        hook.stop()
        am.stop()


@pytest.fixture
def fabric(tmp_path, django_db_blocker):
    alias = "e2e_alerts"
    with (
        leased_redis_db() as redis_url,
        fresh_database("sqlite", tmp_path, migrated=True) as db_url,
        django_db_blocker.unblock(),
        database_alias(alias, db_url),
    ):
        running = RunningFabric(tmp_path, alias, db_url, redis_url, ["--nodes", str(NODES)], FABRIC_BASE_URL=BASE)
        try:
            yield running
        finally:
            running.stop()


def fault(fabric, *args: str) -> None:
    cmd = [sys.executable, "-m", "collectors", "fault", "--out", str(fabric.sim_dir), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr


def test_a_port_that_goes_down_pages_every_channel_and_its_recovery_resolves_them(fabric, receivers, smtp_server):
    hook, am = receivers
    db = fabric.db
    fabric.wait("every node registered", lambda: Node.objects.using(db).count() == NODES, 60)
    common = {"severities": ["critical"], "group_s": 0, "flap_hold_s": 0}
    Channel.objects.using(db).create(name="hook", kind="webhook", url=f"{hook.url}/fabric", **common)
    Channel.objects.using(db).create(name="am", kind="alertmanager", url=am.url, **common)
    Channel.objects.using(db).create(
        name="mail", kind="email", url=f"smtp://127.0.0.1:{smtp_server.port}", options={"to": ["oncall@example.org"]},
        **common,
    )  # fmt: skip
    fault(fabric, "add", f"{PORT}:down")

    def firing_at_hook():
        return [
            b for b in hook.bodies() if b["status"] == "firing" and any(e["key"] == f"down:{PORT}" for e in b["events"])
        ]

    [body] = fabric.wait("the webhook receiver paged", firing_at_hook, 10 * INTERVAL + 15)
    item = next(e for e in body["events"] if e["key"] == f"down:{PORT}")
    assert item["message"].startswith("cn001 mlx5_0/1: port down (DOWN, physical state Polling")
    assert item["url"] == f"{BASE}/ports/cn001/mlx5_0/1/" and item["expected_link"] == "4X HDR"

    def am_alert(state: str):
        return [
            a for a in am.alerts()
            if a["labels"].get("node") == "cn001" and a["labels"]["kind"] == "down" and a["status"]["state"] == state
        ]  # fmt: skip

    [alert] = fabric.wait("Alertmanager holding the alert", lambda: am_alert("active"), 15)
    assert (alert["labels"]["device"], alert["labels"]["port"], alert["labels"]["severity"]) == (
        "mlx5_0",
        "1",
        "critical",
    )
    fabric.wait("the mail", lambda: smtp_server.messages, 15)
    text = smtp_server.messages[0].get_payload(decode=True).decode()
    assert "cn001 mlx5_0/1: port down (DOWN, physical state Polling" in text and f"{BASE}/ports/cn001/mlx5_0/1/" in text

    fault(fabric, "clear")
    resolved = fabric.wait(
        "the webhook receiver told it is over", lambda: [b for b in hook.bodies() if b["status"] == "resolved"], 30
    )
    assert [e["key"] for e in resolved[0]["events"]] == [f"down:{PORT}"]
    fabric.wait("Alertmanager resolving it", lambda: not am_alert("active"), 15)
    fabric.wait("the resolution mail", lambda: len(smtp_server.messages) >= 2, 15)
    subjects = [m["Subject"] for m in smtp_server.messages]  # named when this fails: what else paged
    assert len(subjects) == 2, subjects
    assert subjects[1].startswith("[fabricweb] RESOLVED: cn001 mlx5_0/1: port down"), subjects
    # Once each: the firing notification was not repeated or duplicated anywhere.
    assert [b["status"] for b in hook.bodies()] == ["firing", "resolved"]
