"""A private Prometheus (Debian's package) for the e2e tests: free loopback port, data under the test's
tmp dir, 1 s scrape and evaluation, the shipped rules with their `for:` durations shortened."""

from __future__ import annotations

import json
import re
import shutil
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

from harness import free_port, wait_for
from tests.e2e.e2e_harness import REPO, Process, clean_env

RULES = REPO / "deploy" / "prometheus" / "rules"
DASHBOARD = REPO / "deploy" / "grafana" / "dashboards" / "fabricweb.json"


def shortened_rules(out: Path) -> list[Path]:
    """Copies of the shipped rule files with every `for:` removed: alerts fire on the first evaluation."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for src in sorted(RULES.glob("*.yml")):
        doc = yaml.safe_load(src.read_text())
        for group in doc["groups"]:
            for rule in group["rules"]:
                rule.pop("for", None)
        dst = out / src.name
        dst.write_text(yaml.safe_dump(doc, sort_keys=False))
        paths.append(dst)
    return paths


class Prometheus:
    def __init__(self, tmp: Path, target: str) -> None:
        binary = shutil.which("prometheus")
        assert binary, "prometheus is not installed (scripts/system-packages installs Debian's prometheus)"
        rules = shortened_rules(tmp / "rules")
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "1s"},
            "rule_files": [str(p) for p in rules],
            "scrape_configs": [{"job_name": "fabricweb", "static_configs": [{"targets": [target]}]}],
        }
        (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
        self.url = f"http://127.0.0.1:{free_port()}"
        argv = [
            binary,
            f"--config.file={tmp / 'prometheus.yml'}",
            f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address={self.url.removeprefix('http://')}",
            "--log.level=warn",
        ]
        self.process = Process(argv, clean_env(), tmp / "prometheus.log")
        self.wait("Prometheus ready", self.ready, 30)

    def ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                return response.status == 200
        except OSError:
            return False

    def api(self, path: str, **params: str) -> object:
        url = f"{self.url}/api/v1/{path}?{urllib.parse.urlencode(params)}"
        with urllib.request.urlopen(url, timeout=10) as response:
            body = json.loads(response.read())
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> list[dict]:
        return self.api("query", query=expr)["result"]

    def firing(self) -> list[dict]:
        return [a for a in self.api("alerts")["alerts"] if a["state"] == "firing"]

    def active(self) -> list[dict]:
        return self.api("alerts")["alerts"]

    def wait(self, what: str, check, timeout: float):
        """harness.wait_for, a query every half second, failing at once if Prometheus exits."""
        return wait_for(what, check, timeout, 0.5, watch=[self.process.proc], log=self.process.tail)

    def stop(self) -> None:
        self.process.stop()


SWITCH_ROW = "Switches"


def panel_queries(rows: set[str] | None = None) -> list[tuple[str, str]]:
    """(title, expression) of the dashboard's panel targets; `rows`: of those rows only, else of every row
    but the switches'."""
    doc = json.loads(DASHBOARD.read_text())
    out, row = [], None
    for panel in doc["panels"]:
        if panel["type"] == "row":
            row = panel["title"]
            continue
        if (row in rows) if rows is not None else (row != SWITCH_ROW):
            out.extend((panel["title"], target["expr"]) for target in panel["targets"])
    return out


def with_variables(expr: str) -> str:
    # Grafana's "All" for each variable, and a rate window that fits a 1 s scrape.
    for name in ("node", "device", "port", "switch"):
        expr = expr.replace(f"${name}", ".*")
    return expr.replace("$__rate_interval", "10s")


def variable_queries(switches: bool = False) -> list[tuple[str, str]]:
    """(label, selector) of the dashboard's query variables: the switch one, or the others."""
    doc = json.loads(DASHBOARD.read_text())
    out = []
    for variable in doc["templating"]["list"]:
        match = re.fullmatch(r"label_values\((.+), (\w+)\)", variable.get("query") or "")
        if variable["type"] == "query" and match and (variable["name"] == "switch") == switches:
            out.append((match[2], match[1]))
    return out
