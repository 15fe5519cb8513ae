"""A benchmark run's issue-26 statistics as markdown: the direction metric with
zero-length recourses apart beside the floor rows, Wilson intervals of the shares, TOST
against the floor rows and the family of claims after Holm and Benjamini–Hochberg.

    python -m scripts.claims out/bench-fresh/benchmark.json [--out out/bench-fresh/claims.md]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from recourse.benchmark.run import BenchmarkResult
from recourse.render.claims import statistics_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("benchmark", help="benchmark.json of a run")
    parser.add_argument("--out", help="write the markdown here too")
    args = parser.parse_args(argv)
    report = statistics_report(BenchmarkResult.from_dict(json.loads(Path(args.benchmark).read_text())))
    print(report, end="")
    if args.out:
        Path(args.out).write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
