"""Real receivers for the notification tests: an HTTP receiver (webhook, Slack, Apprise's json://),
Debian's prometheus-alertmanager, and aiosmtpd's SMTP server; and helpers that make events the way
ingest does (EventBook, so the outbox is written through health's signal)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from django.db import transaction
from django.utils import timezone

from fabricweb.alerts.models import Channel
from fabricweb.health.models import Event
from fabricweb.health.records.events import EventBook
from fabricweb.health.records.lifecycle import Action, Op
from fabricweb.health.rules.findings import Severity
from fabricweb.inventory.models import Device, Node, Port
from harness import free_port, stop, wait_for

# --- HTTP receiver --------------------------------------------------------------


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: object
    status: int  # what the receiver answered
    at: float


@dataclass
class HttpReceiver:
    """A local HTTP server recording every POST. `status` is what it answers; `hold_s` delays the answer;
    stop()/start() take it off the port and back (connections refused meanwhile)."""

    port: int = field(default_factory=free_port)
    status: int = 200
    hold_s: float = 0.0
    requests: list[Received] = field(default_factory=list)
    hold: set[int] = field(default_factory=set)  # indexes of requests not answered until `release` is set
    release: threading.Event = field(default_factory=threading.Event)
    server: ThreadingHTTPServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> HttpReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                got = Received(self.path, dict(self.headers), body, receiver.status, time.time())
                receiver.requests.append(got)
                if len(receiver.requests) - 1 in receiver.hold:
                    receiver.release.wait(60)
                if receiver.hold_s:
                    time.sleep(receiver.hold_s)
                self.send_response(got.status)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"ok": true}' if got.status < 400 else b'{"error": "refused by the test"}')

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None

    def bodies(self) -> list:
        return [r.body for r in self.requests]


@pytest.fixture
def http_receiver():
    receiver = HttpReceiver().start()
    yield receiver
    receiver.stop()


# --- Alertmanager -----------------------------------------------------------------

AM_CONFIG = """
route:
  receiver: sink
  group_wait: 1s
  group_interval: 1s
receivers:
  - name: sink
"""


class Alertmanager:
    def __init__(self, tmp: Path) -> None:
        binary = shutil.which("prometheus-alertmanager")
        if binary is None:
            message = "prometheus-alertmanager is not installed (scripts/system-packages installs it)"
            if os.environ.get("CI"):
                pytest.fail(message)
            pytest.skip(message)
        self.port = free_port()
        (tmp / "am.yml").write_text(AM_CONFIG)
        argv = [
            binary,
            f"--config.file={tmp / 'am.yml'}",
            f"--storage.path={tmp / 'am-data'}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--cluster.listen-address=",
            "--log.level=warn",
        ]
        self.log = open(tmp / "alertmanager.log", "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        wait_for("Alertmanager answering", self._ready, 30, 0.2)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as r:
                return r.status == 200
        except OSError:
            return False

    def alerts(self) -> list[dict]:
        """Alerts Alertmanager holds, resolved ones included (GET /api/v2/alerts)."""
        with urllib.request.urlopen(f"{self.url}/api/v2/alerts", timeout=5) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        stop(self.proc)
        self.log.close()


@pytest.fixture(scope="module")
def alertmanager(tmp_path_factory):
    am = Alertmanager(tmp_path_factory.mktemp("alertmanager"))
    yield am
    am.stop()


# --- SMTP ---------------------------------------------------------------------------


@pytest.fixture
def smtp_server():
    """aiosmtpd's server on a free loopback port; `.messages` holds every mail it received."""
    from aiosmtpd.controller import Controller
    from aiosmtpd.handlers import Message

    class Keep(Message):
        def __init__(self):
            super().__init__()
            self.messages = []

        def handle_message(self, message):
            self.messages.append(message)

    from aiosmtpd.smtp import AuthResult

    logins: list[tuple[str, str]] = []

    def authenticate(server, session, envelope, mechanism, auth_data):
        login, password = auth_data.login.decode(), auth_data.password.decode()
        logins.append((login, password))
        return AuthResult(success=(login, password) == ("alerts", "s3cret"))

    handler = Keep()
    # AUTH over plain loopback SMTP (the test has no TLS certificate); a client that logs in must get it right.
    controller = Controller(
        handler, hostname="127.0.0.1", port=free_port(), authenticator=authenticate, auth_require_tls=False
    )
    controller.start()
    controller.messages, controller.logins = handler.messages, logins
    yield controller
    controller.stop()


# --- events as ingest makes them ---------------------------------------------------------


class Fabric:
    """Nodes, devices and ports in the database, and events changed through EventBook as ingest changes them."""

    def __init__(self) -> None:
        self.nodes: dict[str, Node] = {}
        self.ports: dict[str, Port] = {}

    def port(self, node: str, device: str = "mlx5_0", number: int = 1, node_desc: str = "") -> Port:
        key = f"{node}/{device}/{number}"
        if key not in self.ports:
            now = timezone.now()
            n = self.nodes.get(node) or Node.objects.create(name=node, first_seen_at=now, last_ingested_at=now)
            self.nodes[node] = n
            d, _ = Device.objects.get_or_create(
                node=n, name=device, defaults={"first_seen_at": now, "node_desc": node_desc or f"{node} HCA-1"}
            )
            self.ports[key] = Port.objects.create(
                device=d, number=number, first_seen_at=now, state_id=1, state_name="DOWN", phys_state_id=2,
                phys_state_name="Polling", expected_speed="HDR", expected_lanes=4,
            )  # fmt: skip
        return self.ports[key]

    def open(self, at: datetime, *keys: str, kind: str = "down", severity: str = "critical", message: str = "") -> None:
        """Open one event per `node/device/port` key, all in one transaction (one ingest batch)."""
        self._step(at, [(Op.OPEN, k, kind, severity, message) for k in keys])

    def escalate(self, at: datetime, key: str, kind: str, severity: str) -> None:
        self._step(at, [(Op.UPDATE, key, kind, severity, "")])

    def resolve(self, at: datetime, *keys: str, kind: str = "down") -> None:
        self._step(at, [(Op.RESOLVE, k, kind, "critical", "") for k in keys])

    def _step(self, at: datetime, changes) -> None:
        with transaction.atomic():
            by_node: dict[str, list] = {}
            for op, target, kind, severity, message in changes:
                by_node.setdefault(target.split("/")[0], []).append((op, target, kind, severity, message))
            for node_name, items in by_node.items():
                ports = {t: self.port(*_split(t)) for _, t, *_ in items}
                node = self.nodes[node_name]
                book = EventBook.for_nodes([node.pk])
                targets = {t: (p.device, p) for t, p in ports.items()}
                actions = []
                for op, target, kind, severity, message in items:
                    text = message or f"{target.replace('/', ' ', 1)}: port down (DOWN, physical state Polling)"
                    previous = None
                    if op is Op.UPDATE:
                        previous = Severity(book.open[f"{kind}:{target}"].severity)
                    action = Action(op, f"{kind}:{target}", kind, Severity(severity), text, 0, {}, "why", previous)
                    actions.append(action)
                book.apply(actions, node, targets, at)
                book.write()


def _split(target: str) -> tuple[str, str, int]:
    node, device, port = target.split("/")
    return node, device, int(port)


def channel(name: str = "oncall", kind: str = "webhook", url: str = "", **fields) -> Channel:
    fields.setdefault("severities", ["critical"])
    fields.setdefault("group_s", 0)
    fields.setdefault("flap_hold_s", 0)
    return Channel.objects.create(name=name, kind=kind, url=url, **fields)


def event(key: str) -> Event:
    return Event.objects.get(key=key, resolved_at__isnull=True)


def later(at: datetime, seconds: float) -> datetime:
    return at + timedelta(seconds=seconds)


@contextlib.contextmanager
def env(**values: str):
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
