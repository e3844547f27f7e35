"""Covers fabricweb/runfabric/__main__.py, fabricweb/health/management/commands/import_policies.py,
fabricweb/dashboard/management/commands/create_user.py, collectors/__main__.py.

Which jobs a bad link hurts, end to end on the demo's kind of fabric: `runfabric --fabric --slurm` (ibsim and
opensm under the simulated hosts, a fabric collector reading the forwarding tables, a private Slurm with a slurmd
per host and jobs across the leaves, every central process real), the demo's link policy, and Debian's Chromium.

Symbol errors start on an uplink the job across the leaves crosses: within one poll of the fault reaching the
fabric, the /jobs/ page shows that job first with that link and its finding, its own page and the port's page
name it, and the API says the same. cn005's port is down from the start: its node page says "would drain"
(FABRIC_DRAIN's default, dry-run) and Slurm still has it idle. A screenshot of /jobs/ is left in the temp dir.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest

from fabricweb.fabric.models import Link
from fabricweb.health.models import Event
from fabricweb.jobs.models import Job
from harness import free_port
from tests.e2e.e2e_harness import (
    INTERVAL,
    REPO,
    STARTUP_S,
    RunningFabric,
    chromium_browser,
    clean_env,
    database_alias,
    fresh_database,
    leased_redis_db,
)
from tests.ibsim_support import needs_ibsim
from tests.slurm_support import needs_slurm

pytestmark = [needs_ibsim, needs_slurm]
SLACK_S = 4.0  # a busy two-core machine: a sweep, a batch, the page's own queries
WAIT_MS = 30_000


@pytest.fixture(scope="module")
def demo(tmp_path_factory, django_db_blocker):
    tmp = tmp_path_factory.mktemp("jobs")
    web = f"127.0.0.1:{free_port()}"
    with (
        leased_redis_db() as redis_url,
        fresh_database("sqlite", tmp, migrated=True) as db_url,
        django_db_blocker.unblock(),
        database_alias("e2e_jobs", db_url) as db,
    ):
        options = ["--nodes", "12", "--fabric", "--slurm", "--web", web, "--fault", "cn005/mlx5_0/1:down"]
        fabric = RunningFabric(tmp, db, db_url, redis_url, options, DEBUG="1")
        try:
            jobs = Job.objects.using(db)
            # A database error is "not yet": the table is there once runfabric's migrations ran.
            fabric.wait("runfabric's migrations", lambda: jobs.count() >= 0, STARTUP_S)
            fabric.manage("import_policies", str(REPO / "scripts" / "demo-policies.yaml"))
            fabric.wait("the jobs read, with their links", lambda: jobs.filter(job_links__isnull=False).exists(), 120)
            out = fabric.manage("create_user", "olga", "--role", "operator")
            yield f"http://{web}", fabric, ("olga", re.search(r"with password (\S+)", out)[1]), tmp
        finally:
            fabric.stop()


def test_a_bad_uplink_names_the_jobs_crossing_it_within_a_poll_in_the_browser_and_the_api(demo):
    base, fabric, (user, password), shots = demo
    db = fabric.db
    wide = Job.objects.using(db).get(name="allreduce", ended_at__isnull=True)
    inside = Job.objects.using(db).get(name="halo", ended_at__isnull=True)
    uplinks = Link.objects.using(db).filter(job_links__job=wide, inter_switch=True, gone_at__isnull=True)
    uplink = uplinks.exclude(job_links__job=inside).order_by("a_label", "a_port").first()
    switch, _, port = uplink.a_label.partition(" port ")
    crossing = set(Job.objects.using(db).filter(job_links__link=uplink).values_list("job_id", flat=True))
    assert wide.job_id in crossing and inside.job_id not in crossing

    with chromium_browser() as chromium:
        context = chromium.new_context(viewport={"width": 1400, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(f"{base}/login/")
        page.fill("input[name=username]", user)
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")

        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-m", "collectors", "fault", "--out", str(fabric.sim_dir), "add",
             f"{switch}/{port}:symbol-errors=500/s"],
            env=clean_env(), cwd=REPO, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        events = Event.objects.using(db).filter(resolved_at__isnull=True, kind="symbol_errors")
        fabric.wait("the uplink's symbol errors", lambda: events.filter(port=uplink.a).exists(), 20)
        # Within one poll of the fault reaching the fabric: the sweep that sees it, the batch that stores it.
        found = None
        while time.monotonic() - started < 3 * INTERVAL + SLACK_S and found is None:
            listed = page.request.get(f"{base}/api/v1/jobs").json()["jobs"]
            hurt = {j["id"]: j for j in listed if any(t["id"] == uplink.pk for t in j["links_unhealthy"])}
            found = hurt if set(hurt) == crossing else None
            time.sleep(0.2)
        assert found is not None, f"the API did not name {crossing} within a poll"
        assert "symbol errors" in found[wide.job_id]["links_unhealthy"][0]["finding"]

        page.goto(f"{base}/jobs/")
        first = page.locator("table.jobs tbody tr").first
        assert first.locator("td").first.inner_text() in crossing
        assert f"{uplink.a_label} ↔ {uplink.b_label}" in first.inner_text()
        assert "symbol errors" in first.inner_text()
        assert "forwarding tables" in page.content()  # the adaptive-routing note
        page.screenshot(path=str(shots / "jobs.png"), full_page=True)

        page.goto(f"{base}/jobs/{wide.job_id}/")
        assert page.locator("table.links tbody tr").first.inner_text().startswith(uplink.a_label)
        page.goto(f"{base}/ports/{switch}/switch/{port}/")
        assert f"{wide.job_id} allreduce" in page.locator("dd.port-jobs").inner_text()

        # cn005's port is down from the start: dry-run would drain it, and Slurm still has it as it was.
        page.goto(f"{base}/nodes/cn005/")
        page.wait_for_selector("p.drain-state strong", timeout=WAIT_MS)
        assert "would drain cn005: cn005 mlx5_0/1" in page.locator("p.drain-state").inner_text()
        context.close()
    assert not errors, errors
    state = subprocess.run(
        ["sinfo", "--noheader", "--Node", "--nodes", "cn005", "--format", "%T"],
        env={**clean_env(), "SLURM_CONF": _slurm_conf(fabric)}, capture_output=True, text=True, timeout=30,
    )  # fmt: skip
    assert state.stdout.strip() in ("idle", "allocated", "mixed"), state.stdout


def _slurm_conf(fabric: RunningFabric) -> str:
    """runfabric says where its Slurm's configuration is (`Slurm: N nodes idle (SLURM_CONF=...)`)."""
    return re.search(r"SLURM_CONF=(\S+)\)", fabric.runner.tail(400))[1]
