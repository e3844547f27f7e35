"""Covers fabricweb/, collectors/, tests/conftest.py.

No module of fabricweb/ or collectors/ rebinds a module-level name at run time (`global`): what a process keeps
in memory is an object with its state on it, an owner, a bound and a forget() (docs/architecture.md, "What
processes keep in memory"), and what an app hands down as it starts is set on one object too
(fabricweb/telemetry/handed.py). A `global` cell escapes both: the tests' conftest cannot forget it between
tests, and no reader of the doc finds it. And every module-level object with a forget() is one the conftest
forgets after each test (KEPT_CACHES): one it missed (the health norms) let a test that shares another's clock
judge with that test's rolled-back fabric majority.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("fabricweb", "collectors")


def rebound(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`path:line: global NAMES` of every `global` statement in a .py under `packages` of `root`."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Global):
                    found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}: global {', '.join(node.names)}")
    return found


def module_caches(root: Path, packages: tuple[str, ...] = PACKAGES) -> set[tuple[str, str]]:
    """(module, name) of every module-level `NAME = Class(...)` whose class, defined in that module, has forget()."""
    found = set()
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            forgetting = {
                node.name
                for node in tree.body
                if isinstance(node, ast.ClassDef)
                and any(isinstance(f, ast.FunctionDef) and f.name == "forget" for f in node.body)
            }
            module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            for node in tree.body:
                if (
                    isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Call)
                    and isinstance(node.value.func, ast.Name)
                    and node.value.func.id in forgetting
                ):
                    found |= {(module, t.id) for t in node.targets if isinstance(t, ast.Name)}
    return found


def test_every_module_level_cache_with_a_forget_is_forgotten_after_each_test():
    from tests.conftest import KEPT_CACHES

    assert module_caches(REPO) == set(KEPT_CACHES)


def test_no_module_rebinds_a_module_level_name():
    found = rebound(REPO)
    assert found == [], "module-level cells: keep the state on an owned object instead\n" + "\n".join(found)


def test_the_check_names_each_global_statement_and_nothing_else(tmp_path):
    for rel, text in (
        ("fabricweb/cell.py", "_graph = None\n\ndef get():\n    global _graph\n    _graph = 1\n"),
        ("collectors/two.py", "a = b = 0\n\n\ndef f():\n    global a, b\n"),
        ("fabricweb/kept.py", "class Kept:\n    def forget(self):\n        self.x = None\n\n\nKEPT = Kept()\n"),
        ("fabricweb/closure.py", "def f():\n    n = 0\n\n    def g():\n        nonlocal n\n        n += 1\n"),
        ("tests/cell.py", "x = 0\n\ndef f():\n    global x\n"),
    ):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert rebound(tmp_path) == ["fabricweb/cell.py:4: global _graph", "collectors/two.py:5: global a, b"]
