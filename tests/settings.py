"""Settings for the test suite: the project's own, with test databases and a test-only secret.

DATABASES holds two aliases: `default` (SQLite, as a one-box install runs) and, when
TEST_POSTGRES_URL is set (scripts/test-services start), `postgres`. Tests that take
the `each_db` fixture run once against each (tests/conftest.py).
"""

import os

# The base settings refuse to start without a secret when DEBUG is off, as production must.
os.environ.setdefault("SECRET_KEY", "tests-only-secret-" + "0123456789abcdefghijklmnopqrstuvwxyz")

import dj_database_url

from fabricweb import settings as _base
from fabricweb.settings import BASE_DIR, _database

# The project's settings as they are, then what tests change (no star import: names stay explicit).
globals().update({name: value for name, value in vars(_base).items() if name.isupper()})

DATABASES = {"default": _database(f"sqlite:///{BASE_DIR / 'var' / 'test.sqlite3'}")}
# In memory, as Django's SQLite tests are by default; said outright because pytest-django recognises SQLite by
# Django's engine name only, and under xdist would give fabricweb.sqlitedb a file named after NAME plus _gw0.
DATABASES["default"]["TEST"] = {"NAME": ":memory:"}
if os.environ.get("TEST_POSTGRES_URL"):
    DATABASES["postgres"] = dj_database_url.parse(os.environ["TEST_POSTGRES_URL"])
    # One test database per run, so two runs (a helper's and yours) never share or drop each other's.
    # No dependency on `default`: a run of PostgreSQL-only tests creates it alone.
    DATABASES["postgres"]["TEST"] = {"NAME": f"test_{DATABASES['postgres']['NAME']}_{os.getpid()}", "DEPENDENCIES": []}

CELERY_BROKER_URL = os.environ.get("TEST_REDIS_URL", "memory://")
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # speed; tests store no real passwords
