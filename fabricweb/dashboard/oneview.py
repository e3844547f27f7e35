"""Several reads that must agree with each other, as one view of the database.

The overview's counts and its grid come from separate queries, while ingest, the fabric collector and the
staleness check commit beside them. Read one by one, a node marked stale between the counts' query and the
grid's showed `cn004 (stale)` beside "0 stale hosts". Inside `one_view()` every read sees the database as of
the first one:
- PostgreSQL: a REPEATABLE READ, READ ONLY transaction (its default, READ COMMITTED, gives each statement a view
  of its own). A read-only transaction never fails for serialization.
- SQLite (WAL): a DEFERRED transaction, begun here by hand. Django would begin its transactions IMMEDIATE
  (settings: that takes the write lock at BEGIN, so writers never deadlock), and a page must not hold ingest up
  while it reads. A WAL reader's snapshot starts at its first read and never blocks the writer.
Inside a transaction already open (a test's, a caller's own), that one is the view, as it is.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.db import connection as default_connection
from django.db import transaction


@contextlib.contextmanager
def one_view(connection=default_connection) -> Iterator[None]:
    if connection.in_atomic_block:
        yield
        return
    if connection.vendor == "postgresql":
        with transaction.atomic(using=connection.alias):
            with connection.cursor() as cursor:
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield
        return
    # SQLite, the project's other database.
    connection.ensure_connection()
    raw = connection.connection  # the sqlite3 connection, in autocommit (Django's isolation_level None)
    raw.execute("BEGIN DEFERRED")
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):  # the connection may be what failed: the caller's error is the one
            raw.execute("ROLLBACK")
        raise
    raw.execute("COMMIT")  # it only read: COMMIT ends a read transaction
