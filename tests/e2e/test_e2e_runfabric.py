"""Covers fabricweb/runfabric/__main__.py, fabricweb/telemetry/history/samples.py.

runfabric itself: trees written by someone else, a private Redis, the web server, and no process left behind."""

from __future__ import annotations

import json
import os
import signal
import urllib.error
import urllib.request
from pathlib import Path

from collectors.sim import Fabric
from fabricweb.telemetry.history.samples import between
from harness import free_port
from tests.e2e.e2e_harness import RunningFabric, database_alias, fresh_database
from tests.slurm_support import needs_slurm


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def healthz(web: str):
    """(response, its JSON) of GET /healthz, or None while nothing listens there yet."""
    try:
        with urllib.request.urlopen(f"http://{web}/healthz", timeout=10) as response:
            return response, json.loads(response.read())
    except ConnectionRefusedError:
        return None
    except urllib.error.URLError as e:
        if isinstance(e.reason, ConnectionRefusedError):
            return None
        raise


def test_runfabric_serves_any_trees_and_stops_everything_when_one_process_dies(tmp_path, django_db_blocker):
    trees = tmp_path / "trees"
    Fabric.create(str(trees), 2)  # written once by someone else; runfabric starts no simulator
    web = f"127.0.0.1:{free_port()}"
    options = ["--no-sim", "--start-redis", "--web", web, "--ingest-concurrency", "1"]
    with (
        fresh_database("sqlite", tmp_path, migrated=True) as db_url,
        django_db_blocker.unblock(),
        database_alias("e2e_runfabric", db_url) as db,
    ):
        fabric = RunningFabric(tmp_path, db, db_url, None, options, sim_dir=trees, ALLOWED_HOSTS="127.0.0.1")
        try:
            polled = lambda: len({s.port_id for s in between(using=db)}) >= 4  # noqa: E731
            fabric.wait("polls of both nodes stored", polled, 60)
            # The web server may still be starting (its system checks) when the first polls are stored.
            response, health = fabric.wait("the web server answering /healthz", lambda: healthz(web), 60)
            assert response.status == 200 and health["status"] == "ok", health

            fabric.runner.watch()
            agent = next(p for p in fabric.runner.seen if "fabricweb.agent" in cmdline(p))
            # As on a compute node: its key (in a file only this user reads), never the site's secrets.
            environ = dict(v.split("=", 1) for v in Path(f"/proc/{agent}/environ").read_text().split("\0") if "=" in v)
            assert not {"FABRIC_NODE_KEY_SECRET", "SECRET_KEY", "DATABASE_URL"} & set(environ)
            assert os.stat(environ["FABRIC_NODE_KEY_FILE"]).st_mode & 0o777 == 0o600
            assert "node auth required" in fabric.runner.log.read_text()
            os.killpg(os.getpgid(agent), signal.SIGKILL)
            assert fabric.runner.proc.wait(30) == 1
            assert "node agent exited with status -9; stopping the rest" in fabric.runner.log.read_text()
        finally:
            fabric.stop(expect_status=1)


@needs_slurm
def test_a_private_slurm_that_does_not_start_costs_the_jobs_not_the_fabric(tmp_path, django_db_blocker):
    # A slurmd that exits at once (first on PATH): runfabric --slurm says so in one line and runs on without jobs.
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "slurmd").write_text("#!/bin/sh\necho 'slurmd: fatal: pretend' >&2\nexit 1\n")
    (fake / "slurmd").chmod(0o755)
    with (
        fresh_database("sqlite", tmp_path, migrated=True) as db_url,
        django_db_blocker.unblock(),
        database_alias("e2e_runfabric_slurm", db_url) as db,
    ):
        path = f"{fake}{os.pathsep}{os.environ['PATH']}"
        fabric = RunningFabric(tmp_path, db, db_url, None, ["--nodes", "2", "--start-redis", "--slurm"], PATH=path)
        try:
            line = "runfabric: Slurm did not start: the slurmd cn001 exited with status 1 ("
            said = lambda: line in fabric.runner.log.read_text()  # noqa: E731
            fabric.wait("runfabric saying Slurm did not start", said, 90)
            polled = lambda: len({s.port_id for s in between(using=db)}) >= 4  # noqa: E731
            fabric.wait("polls stored all the same", polled, 60)
            said_line = next(x for x in fabric.runner.log.read_text().splitlines() if x.startswith(line))
            assert said_line.endswith("); running without jobs")
        finally:
            fabric.stop()
