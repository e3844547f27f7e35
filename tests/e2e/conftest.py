"""End-to-end fixtures: `fabric`, a whole fabric as real processes, once per database backend.

`fabric` (one per module and backend) runs `python -m fabricweb.runfabric`: migrations,
the simulator, beat, the ingest consumer, the ingest worker and a node agent, each a
subprocess; the test reads what they stored through an extra Django database alias. Every backend gets a
database of its own (a SQLite file, or a fresh PostgreSQL database) and a Redis
database number leased on the test Redis, so runs in parallel do not share queues.
Every wait has a deadline, and teardown stops every process (SIGKILL as a last resort).
"""

from __future__ import annotations

import pytest

from tests.e2e.e2e_harness import NODES, RunningFabric, database_alias, fresh_database, leased_redis_db


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fabric(request, tmp_path_factory, django_db_blocker):
    backend = request.param
    tmp = tmp_path_factory.mktemp(f"fabric-{backend}")
    alias = f"e2e_{backend}"
    with (
        leased_redis_db() as redis_url,
        # The PostgreSQL fabric starts on an empty database: runfabric migrates it, as on a first start.
        fresh_database(backend, tmp, migrated=backend == "sqlite") as db_url,
        django_db_blocker.unblock(),
        database_alias(alias, db_url),
    ):
        running = RunningFabric(tmp, alias, db_url, redis_url, ["--nodes", str(NODES)])
        try:
            yield running
        finally:
            running.stop()
