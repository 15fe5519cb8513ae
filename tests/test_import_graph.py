"""The package's layering: no import cycle (at module level or inside functions), the library
never imports the app, the scripts or the command line, the renderers never import the audit
that uses them, and only the app imports what protects its server (recourse/ui/serve/)."""

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def modules() -> dict[str, Path]:
    found = {}
    for path in (ROOT / "recourse").rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _run_time_nodes(tree: ast.Module, top_level_only: bool) -> list[ast.AST]:
    """The statements of ``tree`` that can run: an ``if TYPE_CHECKING:`` block never does."""
    def type_checking(node: ast.AST) -> bool:
        test = getattr(node, "test", None)
        return isinstance(node, ast.If) and (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING"
                                             or isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    if top_level_only:
        return [node for node in tree.body if not type_checking(node)]
    found, stack = [], [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(child for child in ast.iter_child_nodes(node) if not type_checking(child))
    return found


def imports(path: Path, known: dict[str, Path], top_level_only: bool = True) -> set[str]:
    """The modules of ``known`` (and any other dotted names) that ``path`` imports where it
    runs (``top_level_only``: on import; else also inside functions)."""
    tree = ast.parse(path.read_text())
    names = set()
    for node in _run_time_nodes(tree, top_level_only):
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


@pytest.mark.parametrize("top_level_only", [True, False], ids=["module level", "inside functions too"])
def test_the_package_has_no_import_cycle(top_level_only):
    known = modules()
    graph = {name: {m for m in imports(path, known, top_level_only) if m in known and m != name}
             for name, path in known.items()}
    assert cycles(graph) == []


def test_imports_under_type_checking_are_not_counted(tmp_path):
    source = tmp_path / "typed.py"
    source.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from recourse.data import x\n"
                      "def f():\n    from recourse.metrics import y\n")
    known = {"recourse.data": source, "recourse.metrics": source}
    assert imports(source, known, top_level_only=False) == {"typing", "recourse.metrics"}


def test_only_the_app_imports_what_protects_its_server():
    """recourse/ui/serve/ guards a public server; the library, the command line and the scripts
    have no server and never import it (the app's tabs and app.py do)."""
    known = modules()
    outside = {name: path for name, path in known.items() if not name.startswith("recourse.ui")}
    outside |= {f"scripts.{'.'.join(path.relative_to(ROOT / 'scripts').with_suffix('').parts)}": path
                for path in (ROOT / "scripts").rglob("*.py")}
    for name, path in outside.items():
        imported = imports(path, known, top_level_only=False)
        assert not any(m.startswith("recourse.ui.serve") for m in imported), name


# the modules that run an audit or a scan, and call the renderers
AUDIT_RUNNERS = ("recourse.audit.pipeline", "recourse.audit.scan", "recourse.audit.scan_run", "recourse.api")


def test_nothing_in_the_library_points_back_up():
    known = modules()
    for name, path in known.items():
        imported = imports(path, known, top_level_only=False)
        assert not any(m == "app" or m.startswith("scripts") for m in imported), name
        if not name.startswith(("recourse.cli", "recourse.__main__")):
            assert not any(m.startswith("recourse.cli") for m in imported), name
        if name.startswith(("recourse.render", "recourse.metrics", "recourse.generation", "recourse.compression")):
            assert not any(m in AUDIT_RUNNERS or m.startswith("recourse.ui") for m in imported), name
