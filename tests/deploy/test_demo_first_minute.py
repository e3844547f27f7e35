"""Covers fabricweb/runfabric/children.py, fabricweb/runfabric/ready.py; through them fabricweb/runfabric/ibsim.py,
fabricweb/runfabric/start.py.

The demo's first minute: the README's commands work as written, its example fault is one the demo has not
applied, and runfabric's last lines (once the dashboard answers) are the URL, the login and its password."""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from fabricweb.runfabric.children import Children
from fabricweb.runfabric.ready import announce, example_fault, first_device
from harness import free_port

REPO = Path(__file__).resolve().parent.parent.parent
README = (REPO / "README.md").read_text()
MAKEFILE = (REPO / "Makefile").read_text()
# The README's block of commands to try while the demo runs.
EXAMPLE = re.search(r"```\n(TOKEN=\$\(.*?)```", README, re.S)[1].splitlines()
CREATE_USER = re.search(r"`(DEBUG=1 \.venv/bin/python manage\.py create_user NAME --role viewer\|operator)`", README)[1]


def demo_faults() -> list[str]:
    text = re.search(r"^DEMO_FAULTS \?= (.*?[^\\])$", MAKEFILE, re.S | re.M)[1]
    return text.replace("\\\n", " ").split()


@pytest.fixture
def demo_env(tmp_path) -> dict[str, str]:
    """The environment of a shell in the repository with the demo's database migrated (a copy under tmp_path,
    where the demo's is var/fabricweb.sqlite3), and neither DEBUG nor any secret set."""
    drop = ("DJANGO_", "SECRET", "DATABASE", "DEBUG", "SECURE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(DATABASE_URL=f"sqlite:///{tmp_path / 'demo.sqlite3'}", LOG_LEVEL="WARNING")
    migrate = [sys.executable, "manage.py", "migrate", "--noinput", "-v", "0"]
    subprocess.run(migrate, cwd=REPO, env={**env, "DEBUG": "1"}, check=True, capture_output=True)
    return env


def shell(command: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True, check=False)


def test_the_readmes_user_and_token_commands_work_as_written(demo_env):
    created = shell(CREATE_USER.replace("NAME", "operator").replace("viewer|operator", "operator"), demo_env)
    assert created.returncode == 0, created.stderr
    assert re.fullmatch(r"operator 'operator' created: log in with password \S+\n", created.stdout)
    token_line = next(line for line in EXAMPLE if line.startswith("TOKEN="))
    token = shell(f'{token_line}\necho "token=$TOKEN"', demo_env)
    assert token.returncode == 0, token.stderr
    assert re.fullmatch(r"token=fwt_\S+\n", token.stdout)


def test_without_debug_a_command_says_what_is_missing_in_two_lines_not_a_traceback(demo_env):
    done = shell(
        CREATE_USER.replace("DEBUG=1 ", "").replace("NAME", "x").replace("viewer|operator", "viewer"), demo_env
    )
    assert done.returncode == 1
    assert done.stderr.splitlines() == [
        "manage.py: SECRET_KEY (or SECRET_KEY_FILE) must be set",
        "(On the demo's own database, as `make demo` runs: DEBUG=1 before the command.)",
    ]


def test_the_readmes_example_fault_is_not_one_the_demo_applies():
    added = [re.search(r"fault --out var/sim add (\S+)", line)[1] for line in EXAMPLE if " add " in line]
    removed = [re.search(r"fault --out var/sim remove (\S+)", line)[1] for line in EXAMPLE if " remove " in line]
    assert added == removed == ["leaf02/30:down"]
    applied_ports = {spec.split(":")[0] for spec in demo_faults()}
    assert "leaf02/3" in applied_ports and added[0].split(":")[0] not in applied_ports


def test_runfabrics_fault_to_try_touches_no_node_the_demo_breaks():
    nodes = [f"cn{i:03d}" for i in range(1, 65)]
    devices = dict.fromkeys(nodes, "mlx5_0")
    assert example_fault(nodes, devices, demo_faults(), "cn064") == "cn063/mlx5_0/1:down"
    assert example_fault(["cn001"], {"cn001": "mlx5_0"}, ["cn001/mlx5_0/1:flap"], None) is None


class Login(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def web_server_after(port: int, delay_s: float):
    """A web server on `port` that starts listening `delay_s` from now, as runserver does after its checks."""
    servers = []

    def start():
        servers.append(http.server.HTTPServer(("127.0.0.1", port), Login))
        servers[0].serve_forever()

    timer = threading.Timer(delay_s, start)
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if servers:
            servers[0].shutdown()
            servers[0].server_close()


def test_runfabric_prints_the_url_the_login_and_its_password_last_once_the_web_answers(demo_env, tmp_path, capsys):
    address = f"127.0.0.1:{free_port()}"
    with (tmp_path / "demo.log").open("a") as log, web_server_after(int(address.split(":")[1]), 1.0):
        announce(Children(log), address, "operator", {**demo_env, "DEBUG": "1"})
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"The dashboard is up: http://{address}/"
    assert lines[1] == "  login:    operator"
    assert re.fullmatch(r"  password: \S{16}   \(shown once: store it\)", lines[2]) and len(lines) == 3


def test_a_node_tree_the_simulator_has_not_written_yet_gives_no_example_fault_and_no_crash(tmp_path):
    (tmp_path / "cn001" / "class" / "infiniband").mkdir(parents=True)  # being written: no device yet
    (tmp_path / "cn002" / "class" / "infiniband" / "mlx5_0").mkdir(parents=True)
    assert [first_device(tmp_path / n) for n in ("cn001", "cn002", "cn003")] == [None, "mlx5_0", None]
