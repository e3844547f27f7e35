"""Django settings, read once from the environment (see fabricweb/env.py for the rules).

Production (`manage.py check --deploy` is clean) needs at least:
    SECRET_KEY (50+ random characters), ALLOWED_HOSTS, SECURE_HSTS_SECONDS (e.g. 31536000),
    SECURE_HSTS_INCLUDE_SUBDOMAINS=true, SECURE_HSTS_PRELOAD=true,
and DATABASE_URL / REDIS_URL for anything beyond one box. Behind a TLS-terminating
proxy also set FABRIC_BEHIND_TLS_PROXY=true (and CSRF_TRUSTED_ORIGINS for its origin).
"""

from __future__ import annotations

import contextlib
import re
from datetime import timedelta
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from collectors.facts import NODE_NAME_PATTERN
from fabricweb.brokertls import celery_ssl_options, redis_py_options
from fabricweb.env import Env, redact_url, url_with_password
from fabricweb.exporter.selection import SelectionError, served_shards

BASE_DIR = Path(__file__).resolve().parent.parent
env = Env()

DEBUG = env.bool("DEBUG", False)
# No secret in the repository: with DEBUG on a per-process random key is enough for local work.
if DEBUG:
    from django.core.management.utils import get_random_secret_key

    SECRET_KEY = env.secret("SECRET_KEY", None) or get_random_secret_key()
else:
    SECRET_KEY = env.secret("SECRET_KEY")
    # Django's own deploy check only warns about a weak key; a production process refuses to start with one.
    if len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5 or SECRET_KEY.startswith("django-insecure-"):
        raise ImproperlyConfigured(
            "SECRET_KEY is too weak: use 50 or more random characters, e.g. from "
            "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`"
        )
ALLOWED_HOSTS = env.list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "fabricweb.inventory",
    "fabricweb.identity",
    "fabricweb.telemetry",
    "fabricweb.health",
    "fabricweb.fabric",
    "fabricweb.jobs",
    "fabricweb.api",
    "fabricweb.exporter",
    "fabricweb.dashboard",
    "axes",  # login throttling; after the apps whose logins it guards
    "fabricweb.alerts",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "fabricweb.csp.ContentSecurityPolicyMiddleware",  # every HTML page: scripts from our origin only
    # Static files (CSS, JS, plotly.js) served by the app itself: gunicorn alone serves a working page.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last: turns a locked-out login into its 429 page
]

ROOT_URLCONF = "fabricweb.urls"
WSGI_APPLICATION = "fabricweb.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]


# -- database ---------------------------------------------------------------
def _database(url: str | None) -> dict:
    if url is None:
        var = BASE_DIR / "var"
        var.mkdir(exist_ok=True)
        url = f"sqlite:///{var / 'fabricweb.sqlite3'}"
    try:
        db = dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True)
    except ValueError as e:
        raise ImproperlyConfigured(f"DATABASE_URL={redact_url(url)!r}: {e}") from None
    if db["ENGINE"] == "django.db.backends.sqlite3":
        # Several Celery processes write: WAL lets readers run beside the one writer, IMMEDIATE
        # takes the write lock when a transaction starts (no read-then-upgrade deadlock), and
        # the timeout makes a writer wait for the lock instead of failing at once. SQLite's own
        # wait tries only every 100 ms and loses every gap between ingest's batches (logins failed
        # with "database is locked" under load): fabricweb.sqlitedb tries every millisecond.
        db["ENGINE"] = "fabricweb.sqlitedb"
        db["CONN_MAX_AGE"] = 0 if db["NAME"] == ":memory:" else db["CONN_MAX_AGE"]
        db["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            **db.get("OPTIONS", {}),
        }
    return db


DATABASES = {"default": _database(env.str("DATABASE_URL", None))}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "fabricweb.dashboard.plotlyjs.PlotlyFinder",  # plotly/plotly.min.js from the pinned `plotly` package
]
STATIC_ROOT = BASE_DIR / "var" / "static"
# Served from the finders as well as STATIC_ROOT: a checkout works without collectstatic.
WHITENOISE_USE_FINDERS = True
with contextlib.suppress(OSError):  # whitenoise warns on every start without it; collectstatic fills it
    STATIC_ROOT.mkdir(parents=True, exist_ok=True)

# -- login (fabricweb/dashboard) ----------------------------------------------
LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:overview"
LOGOUT_REDIRECT_URL = "dashboard:login"
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
# Password guessing: 5 failures for one user name from one address lock that pair out for 15 minutes.
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"

# -- security ---------------------------------------------------------------
SESSION_COOKIE_SECURE = not DEBUG
CSRF_COOKIE_SECURE = not DEBUG
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", not DEBUG)
# Prometheus and load-balancer probes usually speak plain HTTP inside the site.
SECURE_REDIRECT_EXEMPT = [r"^metrics$", r"^healthz$"]
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", False)
if env.bool("FABRIC_BEHIND_TLS_PROXY", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
# Error reports (DEBUG pages, mailed 500s) hide URL settings and variables too: REDIS_URL and
# DATABASE_URL carry passwords, and the request's META holds the server's environment.
DEFAULT_EXCEPTION_REPORTER_FILTER = "fabricweb.errorreports.RedactingReporterFilter"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {
        "handlers": ["console"],
        "level": env.choice("LOG_LEVEL", "INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")),
    },
}

# -- fabric -----------------------------------------------------------------
FABRIC_POLL_INTERVAL = env.seconds("FABRIC_POLL_INTERVAL", 10.0)
# Node side: the queue this worker consumes (node.<name>) and the tree it reads.
FABRIC_NODE_NAME = env.match(
    "FABRIC_NODE_NAME", None, pattern=NODE_NAME_PATTERN, what="a short host name (queue node.<name>)"
)
FABRIC_SYSFS_ROOT = env.str("FABRIC_SYSFS_ROOT", "/sys")
# Snapshot queues (snapshots.<k>, by a hash of the node name) shared by the ingest consumers; agents set the same.
FABRIC_INGEST_SHARDS = env.int("FABRIC_INGEST_SHARDS", 1, minimum=1)
FABRIC_RETAIN_RAW = env.seconds("FABRIC_RETAIN_RAW", 48 * 3600.0)
FABRIC_RETAIN_5MIN = env.seconds("FABRIC_RETAIN_5MIN", 30 * 86400.0)
FABRIC_RETAIN_1H = env.seconds("FABRIC_RETAIN_1H", 365 * 86400.0)
# What one host may cost the central side (fabricweb/telemetry/storage/budget.py); past a bound its snapshots are
# refused, and its page and /healthz say why. A real host has a handful of HCA ports, SR-IOV functions left out.
FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR = env.int("FABRIC_NODE_MAX_NEW_PORTS_PER_HOUR", 64, minimum=1)
FABRIC_NODE_MAX_VANISHED_PORTS = env.int("FABRIC_NODE_MAX_VANISHED_PORTS", 64, minimum=1)
# Events one node may hold open (fabricweb/health/records/eventbudget.py): 16 ports x every kind is well under it.
FABRIC_NODE_MAX_OPEN_EVENTS = env.int("FABRIC_NODE_MAX_OPEN_EVENTS", 256, minimum=1)
# A node's snapshot is 10-100 kB (a DGX with hw_counters ~200 kB) every poll: at 10 s, 4 MiB a minute is 3x that.
FABRIC_NODE_MAX_BYTES_PER_MINUTE = env.int("FABRIC_NODE_MAX_BYTES_PER_MINUTE", 4 * 1024 * 1024, minimum=1)
# A sweep is ~170 bytes per switch port (columnar counters) to ~200 (a full sweep): 64,000 switch ports every
# 10 s is ~70 MiB a minute. Past its budget a collector's sweeps are dropped before they are decoded.
FABRIC_COLLECTOR_MAX_BYTES_PER_MINUTE = env.int("FABRIC_COLLECTOR_MAX_BYTES_PER_MINUTE", 128 * 1024 * 1024, minimum=1)
# The most one batch of the ingest consumer reads from the broker, in bytes: messages past it wait on their
# queue for the next batch (telemetry/intake/redisread.py). At least a node message's cap (intake/messages.py).
FABRIC_INGEST_BATCH_BYTES = env.int("FABRIC_INGEST_BATCH_BYTES", 64 * 1024 * 1024, minimum=16 * 1024 * 1024)
# Vanished devices and ports (and their history) are deleted this long after they vanished.
FABRIC_VANISHED_RETIRE_AFTER = env.seconds("FABRIC_VANISHED_RETIRE_AFTER", 7 * 86400.0)


def _collector_names(name: str) -> tuple[str, ...]:
    names = tuple(env.list(name, []))
    for each in names:
        if not re.fullmatch(NODE_NAME_PATTERN, each):
            raise ImproperlyConfigured(f"{name}: {each!r} is not a fabric collector's name (a short host name)")
        if names.count(each) > 1:
            raise ImproperlyConfigured(f"{name} names {each!r} twice")
    return names


# The fabric collectors whose sweeps are read (docs/fabric.md, "Known collectors"), comma-separated: named by an
# operator, as a node's key is made by one. Any other name's sweep is refused before its text is read. Unset: no
# collector while FABRIC_NODE_AUTH is required, any while it is off (a lab's unsigned sweeps).
FABRIC_COLLECTORS = _collector_names("FABRIC_COLLECTORS")
# A sweep adding more switches than max(FABRIC_SWEEP_MAX_NEW_SWITCHES, FABRIC_SWEEP_MAX_NEW_SWITCHES_PERCENT % of
# those known) is held until an operator accepts it (fabricweb/fabric/growth.py): a rack of leaves is under 32,
# a tenth of a large fabric is an expansion someone planned. A fabric's first sweep is never held.
FABRIC_SWEEP_MAX_NEW_SWITCHES = env.int("FABRIC_SWEEP_MAX_NEW_SWITCHES", 32, minimum=0)
FABRIC_SWEEP_MAX_NEW_SWITCHES_PERCENT = env.int("FABRIC_SWEEP_MAX_NEW_SWITCHES_PERCENT", 10, minimum=0)
# Whose counters the fabric collectors read beside the switches' (docs/fabric.md, "Channel adapters without an
# agent"): `agentless`, every channel adapter no host agent reports (storage servers, gateways); `none`; or node
# GUIDs, comma-separated (each only while no agent reports it: a port never has two sources of samples).
FABRIC_CA_COUNTERS = env.word_or_guids("FABRIC_CA_COUNTERS", "agentless", words=("agentless", "none"))


# -- jobs (docs/jobs.md) -------------------------------------------------------
# Which scheduler's running jobs meet the fabric's routes: off, or slurm (squeue --json, scontrol).
FABRIC_JOBS = env.choice("FABRIC_JOBS", "off", choices=("off", "slurm"))
# Where squeue, sinfo and scontrol are (default: PATH); SLURM_CONF is passed on to them as it is.
FABRIC_SLURM_BIN = env.str("FABRIC_SLURM_BIN", None)
FABRIC_JOBS_TIMEOUT = env.seconds("FABRIC_JOBS_TIMEOUT", 10.0, minimum=0.1)
# A site whose scheduler names nodes otherwise than their hosts do: a regular expression on the scheduler's
# name and its replacement (re.sub), e.g. PATTERN '^node(\d+)$' and REPLACE 'cn\1'.
FABRIC_JOBS_NODE_PATTERN = env.str("FABRIC_JOBS_NODE_PATTERN", None)
FABRIC_JOBS_NODE_REPLACE = env.str("FABRIC_JOBS_NODE_REPLACE", None)
if (FABRIC_JOBS_NODE_PATTERN is None) != (FABRIC_JOBS_NODE_REPLACE is None):
    raise ImproperlyConfigured("FABRIC_JOBS_NODE_PATTERN and FABRIC_JOBS_NODE_REPLACE go together")
if FABRIC_JOBS_NODE_PATTERN is not None:
    try:
        re.compile(FABRIC_JOBS_NODE_PATTERN)
    except re.error as e:
        raise ImproperlyConfigured(f"FABRIC_JOBS_NODE_PATTERN: not a regular expression ({e})") from None
# Draining a node whose own link is down or critically degraded (docs/jobs.md, "Drain"): off, dry-run (record
# and show "would drain", the default) or on. At most FABRIC_DRAIN_MAX nodes at once (unset: max(2, 1 % of the
# hosts)); a node fabricweb drained is resumed only with FABRIC_DRAIN_RESUME_AFTER set, that long after its
# finding cleared.
FABRIC_DRAIN = env.choice("FABRIC_DRAIN", "dry-run", choices=("off", "dry-run", "on"))
FABRIC_DRAIN_MAX = env.int("FABRIC_DRAIN_MAX", None, minimum=1)
FABRIC_DRAIN_RESUME_AFTER = env.seconds("FABRIC_DRAIN_RESUME_AFTER", None, minimum=0.0)
# Ended jobs are kept this long for the pages and events that named them, then deleted.
FABRIC_JOBS_KEEP_ENDED = env.seconds("FABRIC_JOBS_KEEP_ENDED", 7 * 86400.0)


def _health_thresholds(name: str) -> dict:
    """Overrides of the health rules' thresholds (fabricweb/thresholds.py), checked at start-up."""
    from fabricweb.thresholds import Thresholds  # a pure module: no Django, safe to import here

    data = env.json_object(name, {})
    if "resolve_after_polls" in data:
        raise ImproperlyConfigured(f"{name}: set resolve_after_polls with FABRIC_RESOLVE_AFTER instead")
    try:
        Thresholds.from_mapping(data)
    except ValueError as e:
        raise ImproperlyConfigured(f"{name}: {e}") from None
    return data


# Health rules: e.g. FABRIC_THRESHOLDS='{"symbol_errors_per_hour": 240, "congestion_share": 0.1}'.
FABRIC_THRESHOLDS = _health_thresholds("FABRIC_THRESHOLDS")
# Clean polls in a row before an event is resolved (hysteresis: a flapping link stays one event).
FABRIC_RESOLVE_AFTER = env.int("FABRIC_RESOLVE_AFTER", 3, minimum=1)
# /metrics credentials (docs/metrics.md): a bearer token, or "user:password" for basic auth; unset, it is open.
FABRIC_METRICS_BEARER_TOKEN = env.secret("FABRIC_METRICS_BEARER_TOKEN", None)
FABRIC_METRICS_BASIC_AUTH = env.match(
    "FABRIC_METRICS_BASIC_AUTH", None, pattern=r"[^:]+:.+", what="user:password for basic auth on /metrics"
)
# The /metrics shards this web process serves (docs/metrics.md, "One process per shard"): e.g. "0/4,1/4". It
# renders and keeps only their series, and refuses any other scrape; unset, it serves the whole fabric.
FABRIC_METRICS_SHARDS = env.match(
    "FABRIC_METRICS_SHARDS",
    None,
    pattern=r"\d{1,4}/\d{1,4}(,\d{1,4}/\d{1,4})*",
    what="the /metrics shards this process serves, K/N separated by commas, e.g. 0/4,1/4",
)
try:
    served_shards(FABRIC_METRICS_SHARDS)
except SelectionError as e:
    raise ImproperlyConfigured(str(e)) from None

# Nodes prove who they are (fabricweb/nodeauth.py): each signs its snapshots with a key derived from
# this secret (`manage.py node_key NODE`). "required": unsigned or mis-signed snapshots are refused.
FABRIC_NODE_KEY_SECRET = env.secret("FABRIC_NODE_KEY_SECRET", None)
if FABRIC_NODE_KEY_SECRET is not None and len(FABRIC_NODE_KEY_SECRET) < 32:
    raise ImproperlyConfigured("FABRIC_NODE_KEY_SECRET is too short: use 32 or more random characters")
FABRIC_NODE_AUTH = env.choice(
    "FABRIC_NODE_AUTH", "required" if FABRIC_NODE_KEY_SECRET else "off", choices=("required", "off")
)
if FABRIC_NODE_AUTH == "required" and not FABRIC_NODE_KEY_SECRET:
    raise ImproperlyConfigured("FABRIC_NODE_AUTH=required needs FABRIC_NODE_KEY_SECRET")

# Notifications (fabricweb/alerts, docs/alerts.md): links in them point under this address.
FABRIC_BASE_URL = env.str("FABRIC_BASE_URL", "http://localhost:8000")

# -- celery (read by fabricweb/celery.py with namespace CELERY) --------------
REDIS_URL = env.url("REDIS_URL", "redis://127.0.0.1:6379/0", schemes=("redis", "rediss", "unix"))
# The broker's password kept out of the URL: REDIS_PASSWORD or REDIS_PASSWORD_FILE (docker-compose's secret).
_redis_password = env.secret("REDIS_PASSWORD", None)
if _redis_password is not None:
    if REDIS_URL.startswith("unix"):
        raise ImproperlyConfigured("REDIS_PASSWORD works with redis:// and rediss:// URLs; put it in a unix URL")
    REDIS_URL = url_with_password(REDIS_URL, _redis_password)
CELERY_BROKER_URL = REDIS_URL
# rediss:// checks the broker's certificate against this CA file (default: the system's CAs).
FABRIC_REDIS_CA_FILE = env.str("FABRIC_REDIS_CA_FILE", None)
if FABRIC_REDIS_CA_FILE is not None and not Path(FABRIC_REDIS_CA_FILE).is_file():
    raise ImproperlyConfigured(f"FABRIC_REDIS_CA_FILE={FABRIC_REDIS_CA_FILE!r} is not a readable file")
CELERY_BROKER_USE_SSL = celery_ssl_options(REDIS_URL, FABRIC_REDIS_CA_FILE)
# Clients of the broker's Redis other than Celery's (locks, queue lengths, /healthz): the same checks.
REDIS_CLIENT_OPTIONS = redis_py_options(REDIS_URL, FABRIC_REDIS_CA_FILE)

# The most one message on a central Celery queue (ingest, alerts) may take: central tasks are a few hundred
# bytes. A larger one (only a node pushing where it should not makes one) is drained unread and dropped
# by the workers (fabricweb/cappedredis.py). Snapshot queues have a cap of their own (intake/messages.py).
FABRIC_TASK_MESSAGE_MAX_BYTES = env.int("FABRIC_TASK_MESSAGE_MAX_BYTES", 1024 * 1024, minimum=64 * 1024)

# The port page links to the port's panel on the shipped Grafana dashboard (deploy/grafana/) under this
# address, e.g. https://grafana.example.org (fabricweb/dashboard/grafana.py); unset: no link.
FABRIC_GRAFANA_URL = env.match("FABRIC_GRAFANA_URL", None, pattern=r"https?://[^\s\"'<>]+", what="an http(s) URL")
