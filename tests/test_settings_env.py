"""Covers fabricweb/env.py, fabricweb/dashboard/views/node.py.

Settings come from the environment through strict helpers: bad values stop start-up, naming the variable."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

from fabricweb.env import Env
from tests.settings_support import PRODUCTION, REPO, manage


@pytest.mark.parametrize(
    ("text", "expected"), [("1", True), ("true", True), ("Yes", True), ("on", True), ("0", False), ("off", False)]
)
def test_booleans_read_the_usual_spellings(text, expected):
    assert Env({"DEBUG": text}).bool("DEBUG", False) is expected


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10", 10.0), ("2.5", 2.5), ("10s", 10.0), ("5m", 300.0), ("48h", 172800.0), ("30d", 2592000.0)],
)
def test_durations_take_a_unit(text, seconds):
    assert Env({"FABRIC_POLL_INTERVAL": text}).seconds("FABRIC_POLL_INTERVAL", 10.0) == seconds


@pytest.mark.parametrize(
    ("read", "value", "words"),
    [
        (lambda e: e.bool("DEBUG", False), "maybe", "DEBUG='maybe' is not a boolean"),
        (lambda e: e.int("SECURE_HSTS_SECONDS", 0, minimum=0), "1y", "SECURE_HSTS_SECONDS='1y' is not an integer"),
        (lambda e: e.int("SECURE_HSTS_SECONDS", 0, minimum=0), "-5", "SECURE_HSTS_SECONDS=-5 is below the minimum"),
        (lambda e: e.seconds("FABRIC_POLL_INTERVAL", 10.0), "fast", "FABRIC_POLL_INTERVAL='fast' is not a duration"),
        (lambda e: e.seconds("FABRIC_POLL_INTERVAL", 10.0), "0", "FABRIC_POLL_INTERVAL='0' must be longer than 0 s"),
        (lambda e: e.str("FABRIC_NODE_NAME", None), "  ", "FABRIC_NODE_NAME is set but empty"),
        (lambda e: e.url("REDIS_URL", "redis://x", schemes=("redis",)), "localhost:6379", "REDIS_URL='localhost:6379'"),
        (lambda e: e.choice("LOG_LEVEL", "INFO", choices=("INFO", "DEBUG")), "loud", "LOG_LEVEL='loud' is not one of"),
        (
            lambda e: e.match("FABRIC_NODE_NAME", None, pattern="[a-z]+", what="a name"),
            "cn 1",
            "FABRIC_NODE_NAME='cn 1'",
        ),
    ],
)
def test_a_bad_value_is_an_error_naming_the_variable(read, value, words):
    name = words.split("=")[0].split(" ")[0]
    with pytest.raises(ImproperlyConfigured, match=words.replace("(", r"\(")):
        read(Env({name: value}))


def test_an_unset_variable_takes_its_default_and_a_required_one_is_an_error():
    env = Env({})
    assert env.seconds("FABRIC_RETAIN_RAW", 48 * 3600.0) == 172800.0
    assert env.list("ALLOWED_HOSTS", []) == []
    with pytest.raises(ImproperlyConfigured, match="SECRET_KEY must be set"):
        env.str("SECRET_KEY")


def test_errors_never_show_a_password():
    with pytest.raises(ImproperlyConfigured) as err:
        Env({"REDIS_URL": "http://:s3cret@redis:6379/0"}).url("REDIS_URL", schemes=("redis",))
    assert "s3cret" not in str(err.value) and ":***@" in str(err.value)
    done = manage("check", SECRET_KEY=PRODUCTION["SECRET_KEY"], DATABASE_URL="postgres://fabric:s3cret@db:port/x")
    assert "DATABASE_URL='postgres://fabric:***@db:port/x'" in done.stderr and "s3cret" not in done.stderr


def test_lists_are_comma_separated_and_may_be_empty():
    assert Env({"ALLOWED_HOSTS": "a.example, b.example,,"}).list("ALLOWED_HOSTS", []) == ["a.example", "b.example"]
    assert Env({"ALLOWED_HOSTS": ""}).list("ALLOWED_HOSTS", ["x"]) == []


# -- the real settings module, in a fresh interpreter ----------------------------------------------------


def test_without_debug_the_secret_key_is_required():
    done = manage("check")
    assert done.returncode != 0
    assert "SECRET_KEY (or SECRET_KEY_FILE) must be set" in done.stderr


def test_a_bad_value_stops_start_up():
    done = manage("check", SECRET_KEY=PRODUCTION["SECRET_KEY"], FABRIC_POLL_INTERVAL="often")
    assert done.returncode != 0
    assert "FABRIC_POLL_INTERVAL='often' is not a duration" in done.stderr


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("0/4,1/3", "FABRIC_METRICS_SHARDS='0/4,1/3': every shard of one N"),
        ("0-4", "FABRIC_METRICS_SHARDS='0-4' is not the /metrics shards this process serves"),
    ],
)
def test_a_metrics_shard_setting_no_scrape_could_ask_for_stops_start_up(value, words):
    done = manage("check", SECRET_KEY=PRODUCTION["SECRET_KEY"], FABRIC_METRICS_SHARDS=value)
    assert done.returncode != 0
    assert words in done.stderr


def test_check_deploy_is_clean_with_the_production_variables():
    done = manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert done.returncode == 0, done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_warns_without_them():
    done = manage("check", "--deploy", SECRET_KEY=PRODUCTION["SECRET_KEY"])
    assert "security.W004" in done.stderr  # no HSTS
    assert "security.W020" in done.stderr  # no ALLOWED_HOSTS


def test_the_default_database_is_sqlite_under_var_with_wal_and_a_busy_timeout(tmp_path):
    code = (
        "import django; django.setup(); from django.db import connection; from django.conf import settings;"
        "c = connection.cursor(); print(settings.DATABASES['default']['NAME']);"
        "print(c.execute('PRAGMA journal_mode').fetchone()[0], c.execute('PRAGMA busy_timeout').fetchone()[0])"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE"))}
    env.update(SECRET_KEY=PRODUCTION["SECRET_KEY"], DJANGO_SETTINGS_MODULE="fabricweb.settings")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    name, pragmas = done.stdout.split("\n")[:2]
    assert name == str(REPO / "var" / "fabricweb.sqlite3")
    # SQLite's own busy wait is 1 ms: fabricweb.sqlitedb tries again every millisecond up to the 20 s timeout.
    assert pragmas == "wal 1"


@pytest.mark.parametrize(
    "weak", ["changeme", "x" * 60, "django-insecure"], ids=["changeme", "one-letter", "startproject"]
)
def test_a_weak_secret_key_stops_start_up_when_debug_is_off(weak):
    if weak == "django-insecure":  # what startproject writes: a random key after the prefix
        weak += "-" + get_random_secret_key()
    done = manage("check", SECRET_KEY=weak)
    assert done.returncode != 0
    assert "SECRET_KEY is too weak" in done.stderr


def _with_passwords(settings, rf):
    """DEBUG on, a broker URL with a password in settings and in the server's environment (the request's META).
    Built here so that no frame of the traceback holds the password in a local variable."""
    url = "redis://:" + "-".join(["hunter2", "broker"]) + "@10.0.0.5:6379/0"
    settings.DEBUG = True
    settings.REDIS_URL = settings.CELERY_BROKER_URL = url
    return rf.get("/nodes/cn001/", REDIS_URL=url)


def test_a_debug_error_page_never_shows_the_broker_or_database_password(settings, rf):
    import sys as _sys

    from django.views.debug import technical_500_response

    request = _with_passwords(settings, rf)
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        page = technical_500_response(request, *_sys.exc_info()).content.decode()
    assert "RuntimeError" in page and "REDIS_URL" in page
    assert "-".join(["hunter2", "broker"]) not in page


def test_a_ca_file_that_is_not_there_stops_start_up():
    done = manage("check", SECRET_KEY=PRODUCTION["SECRET_KEY"], FABRIC_REDIS_CA_FILE="/nonexistent/ca.crt")
    assert done.returncode != 0
    assert "FABRIC_REDIS_CA_FILE='/nonexistent/ca.crt' is not a readable file" in done.stderr


# -- secrets from files (docker-compose secrets, systemd credentials) --------------------------------------


def test_a_secret_is_read_from_its_file_without_the_trailing_newline(tmp_path):
    (tmp_path / "key").write_text("s3cret-value\n")
    assert (
        Env({"FABRIC_NODE_KEY_SECRET_FILE": str(tmp_path / "key")}).secret("FABRIC_NODE_KEY_SECRET") == "s3cret-value"
    )
    assert Env({"FABRIC_NODE_KEY_SECRET": "inline"}).secret("FABRIC_NODE_KEY_SECRET") == "inline"
    assert Env({}).secret("FABRIC_NODE_KEY_SECRET", None) is None


@pytest.mark.parametrize(
    ("environ", "words"),
    [
        (
            {"REDIS_PASSWORD": "hunter2", "REDIS_PASSWORD_FILE": "/run/secrets/x"},
            "both REDIS_PASSWORD and REDIS_PASSWORD_FILE",
        ),
        ({"REDIS_PASSWORD_FILE": "/nonexistent/secret"}, "REDIS_PASSWORD_FILE='/nonexistent/secret': cannot read"),
        ({}, r"REDIS_PASSWORD \(or REDIS_PASSWORD_FILE\) must be set"),
    ],
)
def test_a_secret_set_twice_or_unreadable_is_an_error_that_never_shows_it(environ, words):
    with pytest.raises(ImproperlyConfigured, match=words) as err:
        Env(environ).secret("REDIS_PASSWORD")
    assert "hunter2" not in str(err.value)


def test_an_empty_secret_file_is_an_error(tmp_path):
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ImproperlyConfigured, match=r"REDIS_PASSWORD_FILE=.* is empty"):
        Env({"REDIS_PASSWORD_FILE": str(tmp_path / "empty")}).secret("REDIS_PASSWORD")


def test_the_broker_password_file_goes_into_the_broker_url_quoted(tmp_path):
    (tmp_path / "redis_password").write_text("p@ss/w:rd\n")
    (tmp_path / "secret_key").write_text(PRODUCTION["SECRET_KEY"] + "\n")
    done = manage(
        "shell",
        "--verbosity",
        "0",
        "-c",
        "from django.conf import settings; print(settings.REDIS_URL); print(settings.CELERY_BROKER_URL)",
        SECRET_KEY_FILE=str(tmp_path / "secret_key"),
        REDIS_URL="redis://redis:6379/0",
        REDIS_PASSWORD_FILE=str(tmp_path / "redis_password"),
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["redis://:p%40ss%2Fw%3Ard@redis:6379/0"] * 2
