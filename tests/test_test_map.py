"""Covers tests/ itself: how the tests of a module are found (docs/architecture.md, "Where a module's tests are").

- Each test file's docstring opens with `Covers` and the product modules it covers, by path from the repository
  root (`fabricweb/telemetry/storage/apply.py`, a package as its directory: `collectors/sim/`), the paragraph
  running on where the list is long: `grep -rl storage/apply.py tests/` lists the tests of that module.
- Every product module (fabricweb/ and collectors/, migrations aside) is imported by a file under tests/ or
  named in a test's `Covers` paragraph, or NOT_IMPORTED says why no test does.
- Test helpers are imported one way, by their full name from the repository root (`from tests.api.api_support
  import ...`); by the bare name that pytest's rootdir insertion makes importable, the same file would be a
  second module, with a second copy of its state.
- No test module is imported as a library: what tests share lives in a *_support module (or harness.py).
"""

from __future__ import annotations

import ast
import re
from fnmatch import fnmatch
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PRODUCT = ("fabricweb", "collectors")
# Loaded by name by something other than an import statement in a test, so no test imports them.
NOT_IMPORTED = {
    "fabricweb/*/apps.py": "Django imports every app's config as it sets up, for each test that uses it",
    "fabricweb/*/admin.py": "Django's admin imports it at setup; the admin site is Django's, not ours",
    "fabricweb/*/management/": "a package marker: Django finds the commands below it by name",
    "fabricweb/*/management/commands/": "a package marker: Django finds the commands below it by name",
    "fabricweb/identity/": "a package marker: the app that holds the broker_acl and node_key commands",
    "fabricweb/*/views/": "a package marker: the views below it are named in the Covers of the tests that get them",
    "fabricweb/sqlitedb/": "a package marker: Django loads the backend in it by settings' ENGINE name",
    "fabricweb/urls.py": "the URLconf: every request a test makes goes through it; see the views' Covers",
    "fabricweb/*/urls.py": "the URLconf: every request a test makes goes through it; see the views' Covers",
    "fabricweb/dashboard/templatetags/*": "loaded by `{% load %}` in the templates that the dashboard tests render",
    "fabricweb/asgi.py": "the ASGI entry point, for a server we do not ship (gunicorn runs wsgi.py)",
    "fabricweb/wsgi.py": "gunicorn's entry point (gunicorn.conf.py); the tests get the same urls through Client",
    "fabricweb/errorreports.py": "settings name it (DEFAULT_EXCEPTION_REPORTER_FILTER); Django loads it by that name",
    "fabricweb/dashboard/plotlyjs.py": "settings name it (STATICFILES_FINDERS); Django loads it by that name",
    "fabricweb/telemetry/storage/catchup.py": "TelemetryConfig.ready() runs it as every process starts",
    "fabricweb/alerts/tasks.py": "Celery's autodiscovery loads it in a worker; the alerts worker tests run one",
    "fabricweb/jobs/tasks.py": "Celery's autodiscovery loads it in the ingest worker; beat sends it by name",
    "fabricweb/alerts/management/commands/*_channels.py": "manage.py's wrappers of channelfile.import_channels and "
    "export_channels, which tests/alerts/test_alerts_receivers.py tests",
    "fabricweb/exporter/prometheus_rules/__main__.py": "the package's command line (`python -m`), which writes what "
    "tests/deploy/test_prometheus_rules.py checks",
}
COVERS = re.compile(r"Covers\s+(.*?)(?:\n\s*\n|$)", re.S)
# A package is named as its directory (collectors/sim/), a module as its file.
NAMED = re.compile(
    r"((?:fabricweb|collectors|tests|bench|scripts|deploy|static)/(?:[\w.-]+/)*(?:[\w.-]+\.py)?"
    r"|harness\.py|docker-compose\.yml)"
)


def product_modules(root: Path = REPO) -> dict[str, str]:
    """Dotted name -> path (a package's as its directory, ending in /), for every module of the product."""
    found = {}
    for package in PRODUCT:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if "migrations" in rel.parts:
                continue
            parts = list(rel.with_suffix("").parts)
            shown = rel.as_posix()
            if parts[-1] == "__init__":
                parts.pop()
                shown = rel.parent.as_posix() + "/"
            found[".".join(parts)] = shown
    return found


def every_test_file(root: Path = REPO) -> list[Path]:
    """Every test_*.py under tests/."""
    return sorted((root / "tests").rglob("test_*.py"))


def helper_modules(root: Path = REPO) -> dict[str, str]:
    """Bare name -> full dotted name of every helper module under tests/ (not a test, not a conftest)."""
    found = {}
    for path in sorted((root / "tests").rglob("*.py")):
        rel = path.relative_to(root)
        if path.name.startswith("test_") or path.name == "conftest.py" or {"fakes", "fixtures"} & set(rel.parts):
            continue
        found[path.stem] = ".".join(rel.with_suffix("").parts)
    return found


def imports(path: Path) -> list[tuple[str, int]]:
    """(module, line) of every absolute import in `path`, `from a import b` giving a.b as well as a."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, node.lineno))
            out += [(f"{node.module}.{alias.name}", node.lineno) for alias in node.names]
    return out


def covered_paths(path: Path) -> list[str] | None:
    """What a test file's docstring says it covers (paths), or None where it does not open with `Covers`."""
    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    found = COVERS.match(doc)
    return NAMED.findall(found.group(1)) if found else None


def not_imported(root: Path = REPO) -> list[str]:
    """The product modules that no file under tests/ imports and no test's `Covers` names, NOT_IMPORTED aside."""
    modules = product_modules(root)
    reached = set()
    for path in sorted((root / "tests").rglob("*.py")):
        for name, _ in imports(path):
            parts = name.split(".")
            reached |= {".".join(parts[:i]) for i in range(1, len(parts) + 1)}
    named = {p for path in every_test_file(root) for p in covered_paths(path) or ()}
    return sorted(
        shown
        for dotted, shown in modules.items()
        if dotted not in reached and shown not in named and not any(fnmatch(shown, pattern) for pattern in NOT_IMPORTED)
    )


def test_every_test_file_opens_with_the_modules_it_covers():
    problems = []
    for path in every_test_file():
        named = covered_paths(path)
        rel = path.relative_to(REPO)
        if not named:
            problems.append(f"{rel}: its docstring does not open with `Covers` and the modules it covers")
            continue
        problems += [f"{rel}: covers {p}, which is not there" for p in named if not (REPO / p).exists()]
    assert not problems, "\n".join(problems)


def test_every_product_module_is_imported_or_named_by_a_test():
    missing = not_imported()
    assert not missing, (
        "no test imports or names (in its Covers line) these; test them, or say why in NOT_IMPORTED:\n"
        + ("\n".join(missing))
    )


def test_test_helpers_are_imported_by_their_full_name():
    helpers = helper_modules()
    bare = {
        f"{path.relative_to(REPO)}:{line}: import {name.split('.')[0]} as {helpers[name.split('.')[0]]}"
        for path in sorted((REPO / "tests").rglob("*.py"))
        for name, line in imports(path)
        if name.split(".")[0] in helpers
    }
    assert not bare, "\n".join(sorted(bare))


def test_no_test_module_is_imported_as_a_library():
    found = []
    for folder in ("tests", "bench", "scripts"):
        for path in sorted((REPO / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                named = [a.name for a in node.names] if isinstance(node, ast.Import) else []
                if isinstance(node, ast.ImportFrom) and node.level == 0:
                    named = [node.module or ""]
                found += [
                    f"{path.relative_to(REPO)}:{node.lineno}: imports {name}"
                    for name in named
                    if any(part.startswith("test_") for part in name.split("."))
                ]
    assert not found, "move what is shared into a *_support module:\n" + "\n".join(found)


def test_the_checks_find_what_they_are_for(tmp_path):
    (tmp_path / "fabricweb" / "app").mkdir(parents=True)
    for rel in ("fabricweb/__init__.py", "fabricweb/app/__init__.py", "fabricweb/app/used.py", "fabricweb/app/named.py",
                "fabricweb/app/lost.py", "fabricweb/app/apps.py"):  # fmt: skip
        (tmp_path / rel).write_text('"""A module."""\n')
    (tmp_path / "collectors").mkdir()
    (tmp_path / "tests" / "app").mkdir(parents=True)
    test = tmp_path / "tests" / "app" / "test_app.py"
    test.write_text(
        '"""Covers fabricweb/app/used.py,\nfabricweb/app/named.py.\n\nMore."""\n\nfrom fabricweb.app import used\n'
    )
    assert covered_paths(test) == ["fabricweb/app/used.py", "fabricweb/app/named.py"]
    assert not_imported(tmp_path) == ["fabricweb/app/lost.py"]
    (tmp_path / "tests" / "app" / "test_other.py").write_text('"""Not a Covers line."""\n')
    assert covered_paths(tmp_path / "tests" / "app" / "test_other.py") is None
