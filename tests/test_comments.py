"""Covers collectors/, fabricweb/, the shipped templates, static files, scripts and deploy/, and tests/ and bench/:
their comments and docstrings name no issue number (docs/architecture.md, "Conventions").

An issue number says why a line was written the day it was; the commit that wrote it says so for good, and the
issue closes while the comment stays. Product code is what ships: collectors/, fabricweb/, templates/, static/,
scripts/ and deploy/. The tests and benches ship in every clone, which is read without the issue tracker beside
it: a test's docstring says what it checks in words.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = ("collectors", "fabricweb", "templates", "static", "scripts", "deploy")
CLONED = ("tests", "bench")
SUFFIXES = {".py", ".md", ".html", ".js", ".css", ".yml", ".yaml", ".service", ".toml", ".conf", ".rules"}
# Files not read, and why.
SKIPPED = {
    "tests/test_comments.py": "its test writes issue numbers into a temporary tree, for the check to find them",
}
ISSUE = re.compile(r"\b(?:issues?|item \d+ of issue)\s*#?\d+|\(#\d+\)", re.IGNORECASE)


def issue_mentions(root: Path, folders: tuple[str, ...] = SHIPPED) -> list[str]:
    """'path:line: text' for every line of the folders' files that names an issue by number."""
    found = []
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES or not path.is_file() or path.relative_to(root).as_posix() in SKIPPED:
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if ISSUE.search(line):
                    found.append(f"{path.relative_to(root)}:{number}: {line.strip()[:120]}")
    return found


def test_shipped_code_names_no_issue_number():
    found = issue_mentions(ROOT)
    assert not found, "issue numbers belong in commits, not in the code:\n" + "\n".join(found)


def test_tests_and_benches_name_no_issue_number():
    found = issue_mentions(ROOT, CLONED)
    assert not found, "issue numbers belong in commits; say what the issue was about instead:\n" + "\n".join(found)


def test_it_finds_an_issue_number_in_a_comment_and_a_docstring(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "a.py").write_text('"""Fast (issue 11)."""\nx = 1  # see issue #40\ny = "tissue 3"\n')
    (tmp_path / "pkg" / "b.html").write_text("{# item 3 of issue 38 #}\n")
    assert issue_mentions(tmp_path, ("pkg",)) == [
        'pkg/a.py:1: """Fast (issue 11)."""',
        "pkg/a.py:2: x = 1  # see issue #40",
        "pkg/b.html:1: {# item 3 of issue 38 #}",
    ]
