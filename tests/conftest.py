"""Project-wide test fixtures. Tests that touch the database take `each_db` and run on SQLite and PostgreSQL.

PostgreSQL comes from TEST_POSTGRES_URL (scripts/test-services start). Without it the
PostgreSQL half is skipped, or fails when the CI variable is set: CI must test both.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import settings as hypothesis_settings

from harness import free_port, running_redis

PG_ALIAS = "postgres"
BACKENDS = ("sqlite", PG_ALIAS)

# Property tests take their depth from one profile: `make test` tries 100 examples a test (Hypothesis' own
# default); HYPOTHESIS_PROFILE=thorough tries 2,000, for a deeper run before a release. No deadline in
# either: on a machine shared by four test workers a slow example is the machine, not the code.
hypothesis_settings.register_profile("quick", max_examples=100, deadline=None)
hypothesis_settings.register_profile("thorough", max_examples=2000, deadline=None)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "quick"))


def pytest_configure(config):
    # tmp_path on tmpfs when the machine has one, as sysfs is: the simulator replaces thousands of small
    # files atomically, which costs ~13 times more on a journaling disk, and pytest's sweep of an old run's
    # temp tree (hundreds of thousands of files) took half a minute there. --basetemp still wins.
    if not config.option.basetemp and "PYTEST_DEBUG_TEMPROOT" not in os.environ and os.access("/dev/shm", os.W_OK):
        os.environ["PYTEST_DEBUG_TEMPROOT"] = "/dev/shm"
    # Until pyproject.toml names the settings (DJANGO_SETTINGS_MODULE = "tests.settings"),
    # set them up here; pytest-django finishes the setup in its own pytest_configure.
    if not os.environ.get("DJANGO_SETTINGS_MODULE"):
        os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
        import django

        django.setup()


def _postgres_configured() -> bool:
    from django.conf import settings

    return PG_ALIAS in settings.DATABASES


def pytest_generate_tests(metafunc):
    if "each_db" in metafunc.fixturenames:
        metafunc.parametrize("each_db", BACKENDS, indirect=True)


# The scopes that take longest, in seconds on four workers (a timeline of the suite, December 2026), handed
# out first so that none starts last while the other workers are idle. Any scope not named here is light: those
# go after, most tests first (xdist's own order). Rough figures are enough: only their order matters.
HEAVY_SCOPES = {
    "tests/e2e": 325,  # every end-to-end file, one after another
    "tests/health_db/test_health_db_clean_day.py": 130,  # a simulated day, made once, ingested twice
    "tests/pipeline/test_pipeline_consumer.py": 83,
    "tests/alerts/test_alerts_worker.py": 66,
    "tests/exporter/test_exporter_switches.py": 60,
    "tests/health_db/test_health_db_faults.py": 52,
    "tests/dashboard/test_dashboard_screens_browser.py": 50,
    "tests/dashboard/test_dashboard_wall_browser.py": 36,  # 30 problems, the wall and overview at three sizes
    "tests/pipeline/test_pipeline_staleness.py": 35,
    "tests/jobs/test_jobs_routes.py": 33,
    "tests/jobs/test_jobs_drain.py": 32,  # a real Slurm and ibsim per test, on both databases
    "tests/dashboard/test_dashboard_find.py": 28,
    "tests/deploy/test_demo_first_minute.py": 27,
    "tests/dashboard/test_dashboard_operate.py": 26,
    "tests/pipeline/test_pipeline_flood.py": 26,
    "tests/health_db/test_health_db_demo.py": 25,
    "tests/jobs/test_jobs_impact.py": 25,
    "tests/api/test_api_fabric.py": 23,
    "tests/dashboard/test_dashboard_fabric.py": 21,
    "tests/dashboard/test_dashboard_pages.py": 20,
    "tests/telemetry/test_telemetry_partitions.py": 20,
    "tests/dashboard/test_dashboard_chart_axis_browser.py": 19,  # a server and Chromium per range
}


# The scopes that mostly wait, a third of a core or less (a timeline of `make test`, December 2026): a broker
# or a receiver down for seconds, a killed worker's lock running out, Slurm's polls, a flood's pauses; and
# the agent's and watcher's, which wait for a port event and time it against a second. Run beside the
# end-to-end scope, which waits half its time too, they leave a core idle: so with four workers or more
# (`make test` runs four), the last takes them first, at normal priority, while the others keep both cores busy.
# Measured on one machine state: three workers left the two cores idle for 107-139 core-seconds of a run (the
# waiting files last, or one worker's), four for 13 (504-520 s against 469 s).
WAITING_WORKER_FROM = 4
WAITING_SCOPES = frozenset(
    {
        "tests/pipeline/test_pipeline_consumer.py",
        "tests/alerts/test_alerts_worker.py",
        "tests/pipeline/test_pipeline_staleness.py",
        "tests/jobs/test_jobs_routes.py",
        "tests/jobs/test_jobs_impact.py",
        "tests/alerts/test_alerts_receivers.py",
        "tests/pipeline/test_pipeline_shards.py",
        "tests/pipeline/test_pipeline_broker_restart.py",
        "tests/pipeline/test_pipeline_flood.py",
        "tests/agent/test_agent_events.py",
        "tests/agent/test_agent_transport.py",
        "tests/collectors/test_watch.py",
    }
)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under `pytest -n 4` (make test): a file's tests stay on one worker, in their order (its module fixtures
    start once), and the end-to-end files, each a whole fabric of processes, run one after another.
    The heaviest scopes (HEAVY_SCOPES) start first. From four workers on, the last takes the WAITING_SCOPES
    first, and the others take them only once nothing else is left."""
    from xdist.scheduler import LoadFileScheduling

    class Scheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "tests/e2e" if path.startswith("tests/e2e/") else path

        def _assign_work_unit(self, node) -> None:
            if not getattr(self, "_heaviest_first", False):  # once, before the first scope is handed out
                for scope in sorted(self.workqueue, key=lambda s: -HEAVY_SCOPES.get(s, 0)):  # stable
                    self.workqueue.move_to_end(scope)
                self._heaviest_first = True
            waits = self.numnodes >= WAITING_WORKER_FROM and node.gateway.id == f"gw{self.numnodes - 1}"
            wanted = next((scope for scope in self.workqueue if (scope in WAITING_SCOPES) == waits), None)
            if wanted is not None:
                self.workqueue.move_to_end(wanted, last=False)
            super()._assign_work_unit(node)

    return Scheduling(config, log)


# Four workers share two cores (make test). The end-to-end files time a whole fabric against 1 s polls, so
# the other workers give way to it: each lowers its own priority before its first test outside tests/e2e (the
# end-to-end scope is handed out first and runs to its end on its worker), and outside the WAITING_SCOPES
# where a worker of their own runs those. Their children inherit it.
OTHER_WORKERS_NICENESS = 10
_GIVEN_WAY = pytest.StashKey[bool]()


def pytest_runtest_setup(item):
    config, worker = item.config, os.environ.get("PYTEST_XDIST_WORKER")
    if not worker or config.stash.get(_GIVEN_WAY, False):
        return
    path = item.nodeid.split("::", 1)[0]
    waiting_worker = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0")) >= WAITING_WORKER_FROM
    if path.startswith("tests/e2e/") or (waiting_worker and path in WAITING_SCOPES):
        return
    os.nice(OTHER_WORKERS_NICENESS)
    config.stash[_GIVEN_WAY] = True


def pytest_collection_modifyitems(config, items):
    """Give every `each_db` test the django_db mark for its backend (keeping its own options)."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("each_db") if callspec else None
        if backend is None or (backend == PG_ALIAS and not _postgres_configured()):
            continue
        own = item.get_closest_marker("django_db")
        kwargs = dict(own.kwargs) if own else {}
        if backend == PG_ALIAS:
            kwargs["databases"] = [PG_ALIAS]
        item.add_marker(pytest.mark.django_db(**kwargs), append=False)


@pytest.fixture(autouse=True)
def _committed_partitions(request):
    """After a test that commits to PostgreSQL, drop the partitions it created. A flush empties tables but
    drops none, and partitions dated now outlive the test: ingest then refuses the next test's snapshots dated
    in March 2026 as older than the newest samples' retention (ingest._backdated)."""
    marker = request.node.get_closest_marker("django_db")
    kwargs = marker.kwargs if marker is not None else {}
    commits = kwargs.get("transaction") and PG_ALIAS in (kwargs.get("databases") or ())
    yield
    if not commits or not _postgres_configured():
        return
    from fabricweb.telemetry.storage import partitions

    with _postgres_as_default():
        for table in (partitions.SAMPLES, partitions.ROLLUPS_5MIN, partitions.ROLLUPS_1H):
            table.drop_before(datetime(9999, 1, 1, tzinfo=UTC))


# The per-process caches with a forget() (docs/architecture.md, "What processes keep in memory"): module, object.
KEPT_CACHES = (
    ("collectors.ethnl", "RESOLVED"),
    ("collectors.pcipath", "TREES"),
    ("fabricweb.telemetry.storage.rowcache", "CACHE"),
    ("fabricweb.fabric.congested", "KEPT"),
    ("fabricweb.fabric.nodes", "KEPT"),
    ("fabricweb.fabric.schema", "KEPT_ROWS"),
    ("fabricweb.dashboard.hostgrid", "KEPT"),
    ("fabricweb.dashboard.overviewmodel", "KEPT"),
    ("fabricweb.health.engine.memo", "HELD"),
    ("fabricweb.jobs.refresh", "KEPT"),
    ("fabricweb.health.records.context", "NORMS"),
    ("fabricweb.exporter.nodeblocks", "KEPT"),
)


@pytest.fixture(autouse=True)
def _no_kept_caches():
    """Each test starts with the per-process caches empty (KEPT_CACHES, those of modules already imported): tests
    share a database, rolled back between them, so two tests can write rows of the same ids, and simulated clocks
    give two of them the same newest ingest, which the fabric page's congested links are keyed by. And tests share
    sysfs trees on disk (a module's fixture tree, edited and read again), so each test's first read scans the PCI
    tree afresh, as an agent's first poll does, instead of finding the shape an earlier test's read left."""
    yield
    for name, cache in KEPT_CACHES:
        module = sys.modules.get(name)
        if module is not None:
            getattr(module, cache).forget()


@pytest.fixture
def each_db(request):
    """The backend name; for PostgreSQL, the `default` connection is that database for the test.

    Swapping the connection object (not settings) keeps code under test unaware of
    aliases: it uses the default database, as it does in production.
    """
    backend = request.param
    if backend != PG_ALIAS:
        yield backend
        return
    if not _postgres_configured():
        message = 'TEST_POSTGRES_URL is not set: run `eval "$(scripts/test-services start)"` first'
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with _postgres_as_default():
        yield backend


@pytest.fixture
def postgres():
    """The PostgreSQL test database as the default connection (as each_db does); its URL for other processes."""
    from django.db import connections

    with _postgres_as_default():
        name = connections[PG_ALIAS].settings_dict["NAME"]
        yield f"{os.environ['TEST_POSTGRES_URL'].rsplit('/', 1)[0]}/{name}"


@contextlib.contextmanager
def _postgres_as_default():
    from django.db import connections

    sqlite = connections["default"]
    connections["default"] = connections[PG_ALIAS]
    try:
        yield
    finally:
        connections["default"] = sqlite


@pytest.fixture
def poll_ledger():
    """The poll ledger (fabricweb/pollledger.py) on a database of the test Redis that is this test's alone."""
    import redis

    from fabricweb.pollledger import PollLedger
    from tests.e2e.e2e_harness import leased_redis_db

    with leased_redis_db() as url:
        yield PollLedger(redis.Redis.from_url(url))


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def tls_redis(tmp_path_factory):
    """(url, ca file): a private redis-server on a loopback TLS port, its certificate signed by a throwaway CA (the
    broker's TLS tests, tests/pipeline/test_pipeline_tls.py, and the agent's, tests/agent/test_agent_credentials.py)."""
    tmp = tmp_path_factory.mktemp("tls")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test CA",
             "-keyout", "ca.key", "-out", "ca.crt", cwd=tmp)  # fmt: skip
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
             "-keyout", "redis.key", "-out", "redis.csr", cwd=tmp)  # fmt: skip
    (tmp / "san.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("x509", "-req", "-in", "redis.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-days", "2", "-extfile", "san.ext", "-out", "redis.crt", cwd=tmp)  # fmt: skip
    port = free_port()
    url, ca = f"rediss://127.0.0.1:{port}/0", str(tmp / "ca.crt")
    tls = ["--port", "0", "--tls-port", str(port), "--tls-cert-file", "redis.crt", "--tls-key-file", "redis.key",
           "--tls-ca-cert-file", "ca.crt", "--tls-auth-clients", "no", "--loglevel", "warning"]  # fmt: skip
    with running_redis(*tls, cwd=tmp, url=url, ssl_ca_certs=ca):
        yield url, ca
