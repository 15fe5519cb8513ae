"""Median seconds per counterfactual of each method, one face at a time, on validation faces.

Each face is edited alone (batch 1), so the figure is what one audit's model waits for. Run it
on an idle machine: the figure is wall time on however many threads torch has.

    python -m scripts.method_speed --data ../shared/data/celeba-hq-64 --n 6
    python -m scripts.method_speed --data ../shared/data/celeba-hq-64 --n 8 --methods denoised --margin 10 \\
        --attributes Smiling Young Male Eyeglasses --json out/speed.json
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from recourse.data import attribute_index, load_split, to_float_images
from recourse.generation import METHODS, CounterfactualConfig, default_generator, generate
from recourse.generation.denoised import REFERENCE_VIEWS
from recourse.models import load_teacher


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--n", type=int, default=6, help="val faces per attribute")
    parser.add_argument("--attributes", nargs="+", default=["Smiling"])
    parser.add_argument("--methods", nargs="+", choices=tuple(METHODS), default=tuple(METHODS))
    parser.add_argument("--margin", type=float, default=0.0, help="default 0, the audit's")
    parser.add_argument("--json", help="write the per-face seconds here")
    args = parser.parse_args()
    generator, teacher = default_generator(), load_teacher().eval()
    faces = to_float_images(load_split(args.data, "val", 64, cache_dir=".cache").images[:args.n])
    generate(faces[:1], teacher, args.attributes[0], torch.zeros(1, dtype=torch.long),  # warm-up, not timed
             CounterfactualConfig(method=args.methods[0], margin=args.margin), generator, seeds=(0,))
    record = {"threads": torch.get_num_threads(), "margin": args.margin, "n": args.n, "methods": {}}
    for method in args.methods:
        config = CounterfactualConfig(method=method, margin=args.margin)
        seconds = []
        for attribute in args.attributes:
            with torch.no_grad():
                targets = (teacher(faces)[:, attribute_index(attribute)] < 0).long()  # flip each decision
            for i in range(len(faces)):
                REFERENCE_VIEWS.clear()  # each from cold: the same face under another attribute would reuse its view
                started = time.perf_counter()
                generate(faces[i:i + 1], teacher, attribute, targets[i:i + 1], config, generator, seeds=(i,))
                seconds.append(time.perf_counter() - started)
        record["methods"][method] = {"median_s": statistics.median(seconds), "seconds": seconds}
        print(f"{method}: median {statistics.median(seconds):.2f} s per counterfactual ({len(seconds)}: {args.n} val "
              f"faces × {', '.join(args.attributes)}; margin {args.margin:g}; {torch.get_num_threads()} threads)")
    if args.json:
        with open(args.json, "w") as file:
            json.dump(record, file, indent=1)


if __name__ == "__main__":
    main()
