"""``recourse compare-runs``: two benchmark runs compared part by part
(:mod:`recourse.benchmark.run_comparison`); exit 0 where every part both computed is identical.

    recourse compare-runs assets/results/benchmark-primary-parts out/bench-primary-rerun/kept \\
        --records assets/results/benchmark-primary-run/benchmark.json out/bench-primary-rerun/benchmark.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from recourse.cli.common import _command_line


def register(commands) -> None:
    command = commands.add_parser(
        "compare-runs", help="compare two benchmark runs part by part (a repeat must reproduce the run)",
        description="Compare every cached chunk and kept part two benchmark runs both computed (a folder is read "
                    "as a run's --out, its cache/, when it has one, else as a --keep-dir); with --records, also "
                    "their benchmark.json but for clock readings. Exit 0 where all are identical, 1 otherwise.")
    command.add_argument("first", help="a benchmark --out or --keep-dir folder")
    command.add_argument("second", help="another benchmark --out or --keep-dir folder")
    command.add_argument("--records", nargs=2, metavar=("FIRST_JSON", "SECOND_JSON"),
                         help="also compare the two runs' benchmark.json, clock readings left out")
    command.add_argument("--json", help="write what was compared and found here (for the results pages)")
    command.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from recourse.benchmark.run_comparison import compare_runs

    for folder in (args.first, args.second):
        if not Path(folder).is_dir():
            raise ValueError(f"{folder} is not a folder")
    found = compare_runs(args.first, args.second, args.records)
    for kind, count in found.compared.items():
        print(f"{kind} parts compared: {count}; largest difference: {found.largest[kind]:g}")
    differences = found.record_differences
    if differences is not None:
        print(f"records: {len(differences)} values differ (clock readings left out)"
              + (": " + ", ".join(differences[:20]) + (" …" if len(differences) > 20 else "") if differences else ""))
    if args.json:
        written = {"command": _command_line(args), "parts": found.compared, "largest_difference": found.largest,
                   "identical": found.identical}
        if differences is not None:
            written["record_differences"] = differences
        Path(args.json).write_text(json.dumps(written, indent=2) + "\n")
    return 0 if found.identical else 1
