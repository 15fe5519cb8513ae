"""Compare two benchmark runs part by part: every cached chunk both computed must be identical.

Every cached chunk (the teacher's counterfactuals at each margin, and each student's records)
that both runs computed must be identical.

    python -m scripts.measurements.compare_runs out/bench-test out/bench-rerun

Counterfactual generation and every variant are deterministic, so a second run from an
empty cache must reproduce the first one's parts exactly; this prints how many it compared
and the largest difference found.
"""

from __future__ import annotations

import argparse
import json
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
    first, second = json.loads(a.read_text())["records"], json.loads(b.read_text())["records"]
    if len(first) != len(second):
        return float("inf")
    largest = 0.0
    for x, y in zip(first, second):
        for key in x:
            u, v = torch.tensor(x[key], dtype=torch.float64), torch.tensor(y[key], dtype=torch.float64)
            largest = max(largest, float((u - v).abs().max()))
    return largest


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("first", help="a benchmark --out folder")
    parser.add_argument("second", help="another benchmark --out folder")
    args = parser.parse_args(argv)
    first, second = Path(args.first) / "cache", Path(args.second) / "cache"
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
    return 0 if compared["teacher"] + compared["student"] and max(largest.values()) == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
