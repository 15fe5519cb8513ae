"""``recourse method-speed``: median seconds per counterfactual of each method, one face at a
time, on validation faces (:mod:`recourse.generation.speed`)."""

from __future__ import annotations

import argparse

from recourse.cli.common import always
from recourse.names import COUNTERFACTUAL_METHODS


def register(commands) -> None:
    speed = commands.add_parser(
        "method-speed", help="median seconds per counterfactual of each method, one face at a time",
        description="Median seconds per counterfactual of each method, one face at a time, on validation faces. "
                    "Each face is edited alone (batch 1), so the figure is what one audit's model waits for. Run it "
                    "on an idle machine: the figure is wall time on however many threads torch has.")
    speed.add_argument("--data", required=True)
    speed.add_argument("--n", type=int, default=6, help="val faces per attribute")
    speed.add_argument("--attributes", nargs="+", default=["Smiling"])
    speed.add_argument("--methods", nargs="+", choices=COUNTERFACTUAL_METHODS, default=COUNTERFACTUAL_METHODS)
    speed.add_argument("--margin", type=float, default=0.0, help="default 0, the audit's")
    speed.add_argument("--json", help="write the per-face seconds here")
    speed.set_defaults(run=run, uses_committed_models=always)


def run(args: argparse.Namespace) -> int:
    import json
    import statistics

    import torch

    from recourse.data import load_split, to_float_images
    from recourse.generation import default_generator
    from recourse.generation.speed import seconds_per_counterfactual, warm_up
    from recourse.models import load_teacher

    generator, teacher = default_generator(), load_teacher().eval()
    faces = to_float_images(load_split(args.data, "val", 64, cache_dir=".cache").images[:args.n])
    warm_up(faces, teacher, generator, args.attributes[0], args.methods[0], args.margin)
    record = {"threads": torch.get_num_threads(), "margin": args.margin, "n": args.n, "methods": {}}
    for method in args.methods:
        seconds = seconds_per_counterfactual(faces, teacher, generator, args.attributes, method, args.margin)
        record["methods"][method] = {"median_s": statistics.median(seconds), "seconds": seconds}
        print(f"{method}: median {statistics.median(seconds):.2f} s per counterfactual ({len(seconds)}: {args.n} val "
              f"faces × {', '.join(args.attributes)}; margin {args.margin:g}; {torch.get_num_threads()} threads)")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(record, file, indent=1)
    return 0
