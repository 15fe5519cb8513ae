"""Where the results pages' files lie (archived ones included), and the pieces every page shares."""

from __future__ import annotations

import json
import re
from pathlib import Path

from recourse.locations import assets_dir

# Files under assets/archive/: runs of settings other than today's defaults (the cone walk's
# benchmarks and their replication, its quality, ablation and stability runs, the denoised
# generator's quality run at σ 0.4, the discriminator on the cone walk's edits). No page shows
# them; a command recorded in a current file may name one (a judge check's --costs), and it is
# shown naming where the file lies.
ARCHIVED = (
    "benchmark.json", "benchmark.md", "benchmark-second.json", "benchmark-second.md", "benchmark-val-sweep.json",
    "benchmark-val-sweep.md", "benchmark-reference.json", "benchmark-reference.md", "benchmark-replication.json",
    "counterfactual-quality-test.json", "counterfactual-quality-val.json", "counterfactual-quality-test-pca-walk.json",
    "counterfactual-quality-val-pca-walk.json", "counterfactual-quality-test-denoised-s04.json",
    "edit-discriminator-test-cone.json", "stability-test.json", "stability-test-bisect.json",
    "stability-test-margin2.json", "stability-test-margin2-bisect.json", "stability-test-margin0.json",
    "stability-test-margin0-bisect.json")
FOLDERS = ("results", ".", "archive")  # under assets/, searched in this order


def found(name: str) -> Path | None:
    """The committed file ``name`` under ``assets/results/``, ``assets/`` or ``assets/archive/``."""
    return next((path for path in (assets_dir() / folder / name for folder in FOLDERS) if path.is_file()), None)


def load(name: str) -> dict | None:
    path = found(name)
    return json.loads(path.read_text()) if path is not None else None


def location(name: str) -> str:
    """``name``'s path in the repository: where it lies, else where it belongs."""
    path = found(name)
    if path is None:
        return f"assets/{'archive' if name in ARCHIVED else 'results'}/{name}"
    return path.relative_to(assets_dir().parent).as_posix()


_RECORDED = re.compile(r"assets/(?:results/)?(" + "|".join(map(re.escape, ARCHIVED)) + r")(?![\w.-])")

# A command recorded before scripts/ was sorted by what each script makes names the script
# ``python -m scripts.NAME``: today it is ``scripts/<folder>/NAME.py``, or a recourse command;
# one recorded as ``python -m scripts.<folder>.NAME`` may since have become a recourse command.
RECOURSE_COMMANDS = {"claims": "claims", "margin_reached": "margin-reached", "method_speed": "method-speed",
                     "power": "power", "stability": "stability", "compare_runs": "compare-runs",
                     "run_segments": "run-segments"}
_SCRIPTS = Path(__file__).resolve().parents[2]
MOVED_SCRIPTS = {
    **{path.stem: f"python -m scripts.{path.parent.name}.{path.stem}" for path in sorted(_SCRIPTS.glob("*/*.py"))
       if not path.stem.startswith("_")},
    **{name: f"python -m recourse {command}" for name, command in RECOURSE_COMMANDS.items()},
}
_RECORDED_SCRIPT = re.compile(r"python -m scripts\.(?:[a-z]+\.)?(" + "|".join(map(re.escape, MOVED_SCRIPTS))
                              + r")(?![\w.])")


def current_paths(text: str) -> str:
    """``text`` with each archived file named where it lies now, and each script by today's
    path or recourse command: a recorded command names them where they were when it ran."""
    text = _RECORDED_SCRIPT.sub(lambda match: MOVED_SCRIPTS[match.group(1)], text)
    return _RECORDED.sub(r"assets/archive/\1", text)


def archived(name: str) -> bool:
    return name in ARCHIVED


def rate(value) -> str:
    return "—" if value is None else f"{value:.1f}"


def not_yet(what: str, *commands: str) -> list[str]:
    return [f"_{what}: not measured yet._ It comes from:", "", "```bash", *commands, "```", ""]


def sections(files: tuple[tuple[str, str], ...], render_one) -> list[str]:
    """``render_one(title, name, record)`` for each result file there is, a note for each missing one."""
    lines: list[str] = []
    for title, name in files:
        record = load(name)
        lines += render_one(title, name, record) if record is not None else [f"_No {title} results in assets/ yet._", ""]
    return lines


def writing(command: str, path: str) -> str:
    """``command`` with its ``--json`` (where it has one) set to ``path``, the file shown."""
    return re.sub(r"(--json )\S+", lambda match: match.group(1) + path, command)


def span(values: list[float]) -> str:
    values = [v for v in values if v == v]  # NaN: a judge that agreed on no face
    return f"{min(values):.1f}–{max(values):.1f}%" if values else "—"
