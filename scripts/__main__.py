"""List the scripts: per folder, each one's command and the first line of its docstring.

    python -m scripts

Reads each module's docstring with ``ast``: no script is imported (most import torch).
A package with a ``__main__.py`` (``scripts/docs/results``) is one script, run as the package;
a module that is not run (no ``if __name__ == "__main__"``) is listed by its name, as a helper.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent


def parsed(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def first_line(path: Path) -> str:
    """The first line of ``path``'s module docstring ('' without one)."""
    docstring = ast.get_docstring(parsed(path))
    return docstring.strip().splitlines()[0] if docstring and docstring.strip() else ""


def runs(path: Path) -> bool:
    """Whether the module does something when run: an ``if __name__ == "__main__":`` block."""
    tests = [ast.unparse(node.test) for node in parsed(path).body if isinstance(node, ast.If)]
    return any("__name__" in test and "__main__" in test for test in tests)


def module(path: Path) -> str:
    return ".".join(path.relative_to(SCRIPTS.parent).with_suffix("").parts)


def scripts_in(folder: Path) -> list[tuple[str, str]]:
    """(command, first docstring line) of each script under ``folder``, in name order: its
    modules, and each subpackage run as ``python -m`` (one with a ``__main__.py``)."""
    found = []
    for path in sorted(folder.iterdir()):
        if path.is_dir() and (path / "__init__.py").is_file():
            if (path / "__main__.py").is_file():
                found.append((f"python -m {module(path)}", first_line(path / "__init__.py")))
            else:
                found += scripts_in(path)
        elif path.suffix == ".py" and not path.name.startswith("_"):
            command = f"python -m {module(path)}" if runs(path) else f"{module(path)} (helper)"
            found.append((command, first_line(path)))
    return found


def folders() -> list[Path]:
    return [path for path in sorted(SCRIPTS.iterdir()) if path.is_dir() and (path / "__init__.py").is_file()]


def listing() -> list[str]:
    lines = []
    for folder in folders():
        scripts = scripts_in(folder)
        if not scripts:
            continue
        lines += ["", f"{folder.name}/: {first_line(folder / '__init__.py')}"]
        width = max(len(command) for command, _ in scripts)
        lines += [f"  {command:<{width}}  {summary}" for command, summary in scripts]
    return lines[1:]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv:
        asked = argv[0] in ("-h", "--help")
        print(f"usage: python -m scripts\n{__doc__.splitlines()[0]}", file=sys.stdout if asked else sys.stderr)
        return 0 if asked else 2
    print("\n".join(listing()))
    print("\nEach takes --help. The tools a user runs are recourse commands: recourse --help.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
