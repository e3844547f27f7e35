"""Covers fabricweb/, collectors/.

No module of fabricweb/ or collectors/ is over 400 lines: a module that grows past it is
split by concern (a package of modules, its public names kept where the importers find them).

Migrations are not counted: Django generates them (makemigrations), and they are read as a record of
the schema's history, never split or edited into shape by hand.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("fabricweb", "collectors")
MAX_LINES = 400


def oversized(root: Path, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """`path: N lines` of every .py under `packages` of `root` over MAX_LINES, migrations aside."""
    found = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" in path.relative_to(root).parts:
                continue  # generated (see the module docstring)
            lines = len(path.read_text().splitlines())
            if lines > MAX_LINES:
                found.append(f"{path.relative_to(root).as_posix()}: {lines} lines")
    return found


def test_no_module_is_over_400_lines():
    found = oversized(REPO)
    assert found == [], f"over {MAX_LINES} lines, split them by concern:\n" + "\n".join(found)


def test_the_check_names_each_module_over_the_limit(tmp_path):
    for rel, lines in (
        ("fabricweb/big.py", MAX_LINES + 1),
        ("fabricweb/fits.py", MAX_LINES),
        ("collectors/sub/big.py", MAX_LINES + 30),
        ("fabricweb/app/migrations/0001_initial.py", MAX_LINES * 3),
        ("tests/big.py", MAX_LINES * 2),
    ):
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n" * lines)
    assert oversized(tmp_path) == ["fabricweb/big.py: 401 lines", "collectors/sub/big.py: 430 lines"]
