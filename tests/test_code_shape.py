"""Every module of the library and the app short enough to read in one sitting, and every
function short enough to hold in mind (docs/guide.md, "Where each concern lives")."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
SOURCES = sorted((ROOT / "recourse").rglob("*.py")) + [ROOT / "app.py"]


def long_functions(source: str, limit: int) -> list[tuple[str, int]]:
    """``(name, lines)`` of each function (methods and nested ones too) longer than ``limit``
    lines, its decorators counted."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
            if node.end_lineno - start + 1 > limit:
                found.append((node.name, node.end_lineno - start + 1))
    return found


def test_a_long_function_is_found():
    body = "\n".join(f"    x{k} = {k}" for k in range(5))
    assert long_functions(f"@decorated\ndef f():\n{body}\n\ndef g():\n    pass\n", 5) == [("f", 7)]


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_modules_and_functions_stay_short(path):
    source = path.read_text()
    assert len(source.splitlines()) <= MAX_MODULE_LINES, f"more than {MAX_MODULE_LINES} lines: split it by concern"
    assert long_functions(source, MAX_FUNCTION_LINES) == [], f"functions over {MAX_FUNCTION_LINES} lines"
