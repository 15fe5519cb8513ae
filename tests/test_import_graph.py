"""The package's layering: no module-level import cycle, the library never imports the app,
the scripts or the command line, and the renderers never import the audit that uses them."""

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "recourse").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def imports(path: Path, known: dict[str, Path], top_level_only: bool = True) -> set[str]:
    """The modules of ``known`` (and any other dotted names) that ``path`` imports."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in tree.body if top_level_only else ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            inner = {f"{node.module}.{alias.name}" for alias in node.names} & known.keys()
            names |= inner or {node.module}
        elif isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
    return names


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph[node]:
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


def test_a_cycle_is_found_where_there_is_one():
    assert cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}}) == [["a", "b"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_package_has_no_module_level_import_cycle():
    known = modules()
    graph = {name: {m for m in imports(path, known) if m in known and m != name} for name, path in known.items()}
    assert cycles(graph) == []


def test_nothing_in_the_library_points_back_up():
    known = modules()
    for name, path in known.items():
        imported = imports(path, known, top_level_only=False)
        assert not any(m == "app" or m.startswith("scripts") for m in imported), name
        if not name.startswith(("recourse.cli", "recourse.__main__")):
            assert not any(m.startswith("recourse.cli") for m in imported), name
        if name.startswith(("recourse.render", "recourse.metrics", "recourse.generation", "recourse.compression")):
            assert not any(m in ("recourse.audit", "recourse.scan") or m.startswith("recourse.ui") for m in imported), name
