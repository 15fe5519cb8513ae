"""Two benchmark runs compared part by part: every cached chunk both computed must be identical.

Every cached chunk (the teacher's counterfactuals at each margin, and each student's records)
and every kept part (the teacher's summaries, the rows' records, the matched noise draws'
sigmas) that both runs computed must be identical; where both records are given, so must the
two ``benchmark.json`` records but for what is measured on the clock (dates, seconds, latencies).
Counterfactual generation and every variant are deterministic, so a second run from an empty
cache must reproduce the first one's parts exactly. ``recourse compare-runs`` prints and
writes what :func:`compare_runs` finds.

A folder is read as a run's ``--out`` (its ``cache/``) when it has one, else as a ``--keep-dir``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

# measured on the clock, so never the same twice: left out of the records' comparison
CLOCK_KEYS = frozenset({"date", "seconds", "latency", "latency_batch1_ms", "latency_batch32_ms", "overhead",
                        "command", "processes"})
KINDS = ("teacher", "student")  # the teacher's chunks (.safetensors) and every other part (.json)


@dataclass
class RunComparison:
    """How many parts of each kind both runs had and the largest difference found in each;
    ``record_differences`` where the records were compared (None where they were not)."""

    compared: dict[str, int] = field(default_factory=lambda: dict.fromkeys(KINDS, 0))
    largest: dict[str, float] = field(default_factory=lambda: dict.fromkeys(KINDS, 0.0))
    record_differences: list[str] | None = None

    @property
    def identical(self) -> bool:
        """Some part compared, none differing, and the records (where compared) alike."""
        return (sum(self.compared.values()) > 0 and max(self.largest.values()) == 0
                and not self.record_differences)


def _teacher_difference(a: Path, b: Path) -> float:
    from safetensors.torch import load_file

    first, second = load_file(str(a)), load_file(str(b))
    if set(first) != set(second):
        return float("inf")
    return max(float((first[k].double() - second[k].double()).abs().max()) if first[k].numel() else 0.0
               for k in first)


def _student_difference(a: Path, b: Path) -> float:
    import torch

    first, second = json.loads(a.read_text()), json.loads(b.read_text())
    if "records" not in first or "records" not in second:  # a noise draw's sigma: the same file, or not
        return 0.0 if first == second else float("inf")
    first, second = first["records"], second["records"]
    if len(first) != len(second):
        return float("inf")
    largest = 0.0
    for x, y in zip(first, second):
        for key in x:
            u, v = torch.tensor(x[key], dtype=torch.float64), torch.tensor(y[key], dtype=torch.float64)
            largest = max(largest, float((u - v).abs().max()))
    return largest


def record_differences(first, second, path: str = "") -> list[str]:
    """Where two JSON values differ, each as a path ("rows[3].acc"), clock keys left out."""
    if isinstance(first, dict) and isinstance(second, dict):
        return [d for key in sorted(set(first) | set(second)) if key not in CLOCK_KEYS
                for d in (record_differences(first.get(key), second.get(key), f"{path}.{key}".lstrip("."))
                          if key in first and key in second else [f"{path}.{key}".lstrip(".")])]
    if isinstance(first, list) and isinstance(second, list):
        if len(first) != len(second):
            return [path]
        return [d for k, (x, y) in enumerate(zip(first, second)) for d in record_differences(x, y, f"{path}[{k}]")]
    return [] if first == second else [path]


def _parts(path: Path) -> Path:
    return path / "cache" if (path / "cache").is_dir() else path


def compare_runs(first: str | Path, second: str | Path,
                 records: tuple[str | Path, str | Path] | None = None) -> RunComparison:
    """The parts both runs' folders hold, compared; with ``records``, the two records too."""
    first, second = _parts(Path(first)), _parts(Path(second))
    found = RunComparison()
    for name in sorted({p.name for p in first.iterdir()} & {p.name for p in second.iterdir()}):
        kind = "teacher" if name.endswith(".safetensors") else "student" if name.endswith(".json") else None
        if kind is None:
            continue
        difference = (_teacher_difference if kind == "teacher" else _student_difference)(first / name, second / name)
        found.compared[kind] += 1
        found.largest[kind] = max(found.largest[kind], difference)
    if records is not None:
        found.record_differences = record_differences(*(json.loads(Path(p).read_text()) for p in records))
    return found
