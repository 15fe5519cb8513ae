"""Compare two benchmark runs part by part: every cached chunk both computed must be identical.

Every cached chunk (the teacher's counterfactuals at each margin, and each student's records)
and every kept part (the teacher's summaries, the rows' records, the matched noise draws'
sigmas) that both runs computed must be identical; with ``--records``, so must the two
``benchmark.json`` records but for what is measured on the clock (dates, seconds, latencies).

    python -m scripts.measurements.compare_runs out/bench-test out/bench-rerun
    python -m scripts.measurements.compare_runs assets/results/benchmark-primary-parts out/bench-primary-rerun/kept \
        --records assets/results/benchmark-primary-run/benchmark.json out/bench-primary-rerun/benchmark.json

A folder is read as a run's ``--out`` (its ``cache/``) when it has one, else as a ``--keep-dir``.
Counterfactual generation and every variant are deterministic, so a second run from an
empty cache must reproduce the first one's parts exactly; this prints how many it compared
and the largest difference found.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch
from safetensors.torch import load_file


def _teacher_difference(a: Path, b: Path) -> float:
    first, second = load_file(str(a)), load_file(str(b))
    if set(first) != set(second):
        return float("inf")
    return max(float((first[k].double() - second[k].double()).abs().max()) if first[k].numel() else 0.0
               for k in first)


def _student_difference(a: Path, b: Path) -> float:
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


# measured on the clock, so never the same twice: left out of the records' comparison
CLOCK_KEYS = frozenset({"date", "seconds", "latency", "latency_batch1_ms", "latency_batch32_ms", "overhead",
                        "command", "processes"})


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


def _folder(path: Path) -> Path:
    return path / "cache" if (path / "cache").is_dir() else path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", help="a benchmark --out folder")
    parser.add_argument("second", help="another benchmark --out folder")
    parser.add_argument("--records", nargs=2, metavar=("FIRST_JSON", "SECOND_JSON"),
                        help="also compare the two runs' benchmark.json, clock readings left out")
    parser.add_argument("--json", help="write what was compared and found here (for the results pages)")
    args = parser.parse_args(argv)
    first, second = _folder(Path(args.first)), _folder(Path(args.second))
    shared = sorted({p.name for p in first.iterdir()} & {p.name for p in second.iterdir()})
    compared, largest = {"teacher": 0, "student": 0}, {"teacher": 0.0, "student": 0.0}
    for name in shared:
        kind = "teacher" if name.endswith(".safetensors") else "student" if name.endswith(".json") else None
        if kind is None:
            continue
        difference = (_teacher_difference if kind == "teacher" else _student_difference)(first / name, second / name)
        compared[kind] += 1
        largest[kind] = max(largest[kind], difference)
    for kind in compared:
        print(f"{kind} parts compared: {compared[kind]}; largest difference: {largest[kind]:g}")
    same = bool(compared["teacher"] + compared["student"]) and max(largest.values()) == 0
    if args.records:
        differences = record_differences(*(json.loads(Path(p).read_text()) for p in args.records))
        print(f"records: {len(differences)} values differ (clock readings left out)"
              + (": " + ", ".join(differences[:20]) + (" …" if len(differences) > 20 else "") if differences else ""))
        same = same and not differences
    if args.json:
        found = {"command": "python -m scripts.measurements.compare_runs " + " ".join(argv if argv is not None
                                                                                      else sys.argv[1:]),
                 "parts": compared, "largest_difference": largest, "identical": same}
        if args.records:
            found["record_differences"] = differences
        Path(args.json).write_text(json.dumps(found, indent=2) + "\n")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
