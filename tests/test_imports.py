"""Covers fabricweb/, collectors/.

No import cycles among the project's modules (fabricweb/ and collectors/), and imports that only point down the
layers (LAYERS, docs/architecture.md).

The graph is read from the source with `ast`, as Python would import it: an edge from a module to each
module of the project it imports, with `import a.b`, `from a import b` (b a submodule, else the package
a) and relative imports alike. Both module-level and function-level imports count: a function-level
import is an import all the same, run when the function is first called, and hiding a cycle in a
function is what this test is for (`telemetry builds on inventory, not the other way` said the import
inside a function that went the other way). Not counted: imports under `if TYPE_CHECKING:`, which never
run; modules named in strings (Celery's include=, importlib), which no import statement names; and the
import of a package's parents, which Python always runs first (so a package's __init__ importing its
submodules is never a cycle with them). A cycle fails the test, named module by module with the line
of each import.
"""

from __future__ import annotations

import ast
from collections import deque
from itertools import pairwise
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("fabricweb", "collectors")

Edges = dict[str, dict[str, int]]  # module -> {module it imports: line of the first such import}

# The layers, lowest first: a module imports from its own layer and those below, never from one above. A module
# is in the layer of the longest prefix naming it; fabricweb's other top-level modules (names, env, celery, ...)
# are the base. The node side (agents, the simulator's runner) sits on the base and collectors alone: it never
# imports the central side. What a lower layer needs of a higher one is handed to it as the higher app starts
# (fabricweb.telemetry.handed, fabricweb.health.records.context.CABLING: fabricweb.fabric.apps).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("collectors",),
    ("fabricweb",),
    ("fabricweb.agent", "fabricweb.fabricagent", "fabricweb.runfabric"),
    ("fabricweb.inventory",),
    ("fabricweb.telemetry", "fabricweb.scheduling", "fabricweb.identity"),
    # health's own three layers (fabricweb/health/__init__.py): the pure rules, then the models the database side
    # writes, the database side, the engine that judges each poll, and last the app's wiring (apps, tasks, admin).
    ("fabricweb.health.rules",),
    ("fabricweb.health.models", "fabricweb.health.signals"),
    ("fabricweb.health.records",),
    ("fabricweb.health.engine",),
    ("fabricweb.health",),
    ("fabricweb.fabric",),
    ("fabricweb.jobs",),
    ("fabricweb.alerts",),
    ("fabricweb.exporter", "fabricweb.dashboard"),
    ("fabricweb.api",),
    ("fabricweb.settings", "fabricweb.urls", "fabricweb.asgi", "fabricweb.wsgi"),  # the wiring: may import all
)


def modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, whether it is a package's __init__), for every .py under `packages`."""
    found = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            if is_package:
                parts.pop()
            found[".".join(parts)] = (path, is_package)
    return found


def _type_checking_only(tree: ast.AST) -> set[int]:
    """id() of every import statement under `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`)."""
    hidden = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = test.id if isinstance(test, ast.Name) else test.attr if isinstance(test, ast.Attribute) else None
            if name == "TYPE_CHECKING":
                for stmt in node.body:
                    hidden |= {id(n) for n in ast.walk(stmt) if isinstance(n, ast.Import | ast.ImportFrom)}
    return hidden


def imports(found: dict[str, tuple[Path, bool]]) -> Edges:
    """Each module's edges to the project's modules it imports (see the module docstring)."""

    def known(name: str) -> str | None:
        while name and name not in found:
            name = name.rpartition(".")[0]
        return name or None

    graph: Edges = {}
    for name, (path, is_package) in found.items():
        tree = ast.parse(path.read_text(), str(path))
        hidden = _type_checking_only(tree)
        here = name if is_package else name.rpartition(".")[0]
        edges: dict[str, int] = {}
        for node in ast.walk(tree):
            if id(node) in hidden:
                continue
            targets = []
            if isinstance(node, ast.Import):
                targets = [known(alias.name) for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = here.split(".")[: len(here.split(".")) - (node.level - 1)]
                    source = ".".join([*base, node.module] if node.module else base)
                else:
                    source = node.module or ""
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    targets.append(submodule if submodule in found else known(source))
            for target in targets:
                if target is not None and target != name:
                    edges[target] = min(edges.get(target, node.lineno), node.lineno)
        graph[name] = edges
    return graph


def cycles(graph: Edges) -> list[list[str]]:
    """One shortest cycle through the first module (by name) of every strongly connected component."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(set(component))
    found = []
    for component in components:
        first = min(component)
        came_from: dict[str, str] = {}
        queue = deque([first])
        while queue:  # breadth first, within the component, back to `first`
            node = queue.popleft()
            if first in graph[node] and (node != first):
                path = [first]
                while node != first:
                    path.insert(1, node)
                    node = came_from[node]
                found.append([*path, first])
                break
            for child in sorted(graph[node]):
                if child in component and child not in came_from and child != first:
                    came_from[child] = node
                    queue.append(child)
    return sorted(found)


def described(cycle: list[str], graph: Edges, found: dict[str, tuple[Path, bool]]) -> str:
    steps = [f"{found[a][0].relative_to(ROOT)}:{graph[a][b]} imports {b}" for a, b in pairwise(cycle)]
    return " -> ".join(cycle) + "\n    " + "\n    ".join(steps)


def test_the_project_has_no_import_cycle():
    found = modules(ROOT)
    graph = imports(found)
    # The walk sees what it must: a module-level import, a function-level one, a relative one.
    assert "fabricweb.names" in graph["fabricweb.celery"]
    assert "fabricweb.beat" in graph["fabricweb.celery"]  # inside _beat_schedule
    assert "fabricweb.health.rules.common" in graph["fabricweb.health.rules.port"]
    problems = [described(cycle, graph, found) for cycle in cycles(graph)]
    assert not problems, "import cycles:\n" + "\n".join(problems)


def layer(module: str, layers: tuple[tuple[str, ...], ...] = LAYERS) -> int:
    """The index in `layers` of the longest prefix naming `module`."""
    best, length = -1, -1
    for i, prefixes in enumerate(layers):
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = i, len(prefix)
    if best < 0:
        raise AssertionError(f"{module} is in no layer: add its package to LAYERS")
    return best


def upward(graph: Edges, layers: tuple[tuple[str, ...], ...] = LAYERS) -> list[tuple[str, int, str]]:
    """Every import from a layer to one above it: (module, line, module imported)."""
    return sorted(
        (module, line, target)
        for module, edges in graph.items()
        for target, line in edges.items()
        if layer(target, layers) > layer(module, layers)
    )


def test_imports_point_down_the_layers():
    found = modules(ROOT)
    graph = imports(found)
    problems = [
        f"{found[module][0].relative_to(ROOT)}:{line} imports {target} "
        f"({LAYERS[layer(target)][0]}'s layer, above {LAYERS[layer(module)][0]}'s)"
        for module, line, target in upward(graph)
    ]
    assert not problems, "imports that point up the layers:\n" + "\n".join(problems)


def test_an_import_up_the_layers_is_found_even_inside_a_function(tmp_path):
    package = tmp_path / "pkg"
    (package / "low").mkdir(parents=True)
    (package / "high").mkdir()
    for path in (package / "__init__.py", package / "low" / "__init__.py", package / "high" / "__init__.py"):
        path.write_text("")
    (package / "high" / "view.py").write_text("from pkg.low import store\n")  # down: fine
    (package / "low" / "store.py").write_text("def late():\n    from pkg.high import view\n")  # up
    layers = (("pkg",), ("pkg.low",), ("pkg.high",))
    assert upward(imports(modules(tmp_path, ("pkg",))), layers) == [("pkg.low.store", 2, "pkg.high.view")]


def test_a_cycle_is_found_and_named_whatever_the_kind_of_import(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("from .a import A\n")  # a package importing its module: no cycle
    (package / "a.py").write_text("import pkg.b\nA = 1\n")
    (package / "b.py").write_text("def late():\n    from . import c\n")  # function-level
    (package / "c.py").write_text("from pkg.a import A\n")
    (package / "d.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import e\n")
    (package / "e.py").write_text("from . import d\n")  # only a TYPE_CHECKING import back: no cycle
    graph = imports(modules(tmp_path, ("pkg",)))
    assert cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
