"""``recourse claims``: a benchmark run's statistics as markdown (:mod:`recourse.render.claims`).

The direction metric with zero-length recourses apart beside the floor rows, Wilson intervals
of the shares, TOST against the floor rows and the family of claims after Holm and
Benjamini–Hochberg. It draws what the record holds; ``recourse recompute-claims``
(:mod:`recourse.cli.recompute_claims`) recomputes the same statistics from the run's saved
per-task columns and says where they differ.

    recourse claims out/bench-fresh/benchmark.json [--out out/bench-fresh/claims.md]
"""

from __future__ import annotations

import argparse


def register(commands) -> None:
    claims = commands.add_parser(
        "claims", help="a benchmark run's statistics as markdown: directions, Wilson intervals, TOST, corrected claims",
        description="A benchmark run's statistics as markdown: the direction metric with zero-length "
                    "recourses apart beside the floor rows, Wilson intervals of the shares, TOST against the floor "
                    "rows and the family of claims after Holm and Benjamini–Hochberg.")
    claims.add_argument("benchmark", help="benchmark.json of a run")
    claims.add_argument("--out", help="write the markdown here too")
    claims.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import json
    from pathlib import Path

    from recourse.benchmark.run import BenchmarkResult
    from recourse.render.claims import statistics_report

    report = statistics_report(BenchmarkResult.from_dict(json.loads(Path(args.benchmark).read_text())))
    print(report, end="")
    if args.out:
        Path(args.out).write_text(report)
    return 0
