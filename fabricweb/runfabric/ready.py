"""The demo's first minute: once the web server answers, the URL, the login and its password as the last lines on
the terminal (the children's start-up noise is in the --log file), and a fault to try that is not already applied."""

from __future__ import annotations

import http.client
import os
import re
import subprocess
import sys
from pathlib import Path

from .children import BASE_DIR, PY, Children
from .start import MANAGE

WEB_START_S = 90.0  # runserver's system checks, on a machine busy starting every other process


def web_answers(address: str) -> bool:
    """Any HTTP answer counts (a redirect to HTTPS too): the server is up."""
    host, _, port = address.rpartition(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=2)
    try:
        connection.request("GET", "/login/")
        connection.getresponse().read()
        return True
    except OSError:
        return False
    finally:
        connection.close()


def create_login(name: str, address: str, env: dict[str, str]) -> str:
    """`manage.py create_user NAME --role operator`: the password it printed."""
    url = f"http://{address}/"
    argv = [PY, MANAGE, "create_user", name, "--role", "operator", "--url", url]
    done = subprocess.run(argv, env=env, cwd=BASE_DIR, capture_output=True, text=True, check=False)
    found = re.search(r"with password (\S+)$", done.stdout.strip())
    if done.returncode or found is None:
        raise SystemExit(f"manage.py create_user {name} failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return found[1]


def announce(children: Children, address: str, login: str | None, env: dict[str, str]) -> None:
    """Wait for the web server, then print where to go and how to log in, last, on stdout."""
    children.wait_for(f"an answer from the web server at http://{address}/", lambda: web_answers(address), WEB_START_S)
    lines = [f"The dashboard is up: http://{address}/"]
    if login:
        password = create_login(login, address, env)
        lines += [f"  login:    {login}", f"  password: {password}   (shown once: store it)"]
    print("\n".join(lines), file=sys.stdout, flush=True)


def first_device(tree: Path) -> str | None:
    """The first RDMA device of a node's tree, None while the simulator has not written one (it writes the trees
    as runfabric starts) or when the node has none."""
    try:
        names = sorted(os.listdir(tree / "class" / "infiniband"))
    except OSError:
        return None
    return names[0] if names else None


def example_fault(nodes: list[str], devices: dict[str, str], faults: list[str], stopped: str | None) -> str | None:
    """A host port to take down that no fault given at the start and no stopped agent already touches: from the
    last node (the first one's port is where the fabric collector sweeps from)."""
    touched = {spec.split(":", 1)[0].split("/", 1)[0] for spec in faults} | {stopped}
    node = next((n for n in reversed(nodes) if n not in touched and n in devices), None)
    return None if node is None else f"{node}/{devices[node]}/1:down"
