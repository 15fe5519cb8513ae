"""``recourse margin-reached``: does the teacher's recourse in a benchmark folder reach the
stated margin (:mod:`recourse.benchmark.margin_reached`)?"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(commands) -> None:
    reached = commands.add_parser(
        "margin-reached", help="does the teacher's recourse in a benchmark folder reach the stated margin?",
        description="Does the teacher's recourse reach the stated margin? Reads a benchmark folder's cached teacher "
                    "parts (one per chunk) and prints, over the tasks whose recourse is valid, the teacher's logit "
                    "of the target at x'_f signed towards the target.")
    reached.add_argument("folder", type=Path, help="a benchmark --out folder")
    reached.add_argument("--margin", type=float, required=True)
    reached.add_argument("--tolerance", type=float, default=1e-3)
    reached.add_argument("--json", help="write the result here")
    reached.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import json
    from dataclasses import asdict

    from recourse.benchmark.margin_reached import margin_reached

    found = margin_reached(args.folder, args.margin, args.tolerance)
    print(f"{found.reached} of {found.valid} valid teacher recourses ({found.tasks} tasks, {found.chunks} chunks) reach "
          f"margin {args.margin:g}; signed logit at x'_f min {found.minimum:.4f}, median {found.median:.4f}, "
          f"max {found.maximum:.4f}")
    if args.json:
        command = "python -m recourse " + " ".join(args.argv)
        Path(args.json).write_text(json.dumps({"command": command, "margin": args.margin, **asdict(found)}, indent=2)
                                   + "\n")
    return 0
