"""Median seconds per counterfactual of each method, one face at a time, on validation faces.

    python -m scripts.method_speed --data ../shared/data/celeba-hq-64 --n 6
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from recourse.data import attribute_index, load_split, to_float_images
from recourse.generation import METHODS, CounterfactualConfig, default_generator, generate
from recourse.models import load_teacher


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--n", type=int, default=6)
    parser.add_argument("--attribute", default="Smiling")
    parser.add_argument("--margin", type=float, default=0.0)
    args = parser.parse_args()
    generator, teacher = default_generator(), load_teacher().eval()
    faces = to_float_images(load_split(args.data, "val", 64, cache_dir=".cache").images[:args.n])
    with torch.no_grad():
        targets = (teacher(faces)[:, attribute_index(args.attribute)] < 0).long()  # flip each decision
    for method in METHODS:
        config = CounterfactualConfig(method=method, margin=args.margin)
        seconds = []
        for i in range(len(faces)):
            started = time.perf_counter()
            generate(faces[i:i + 1], teacher, args.attribute, targets[i:i + 1], config, generator, seeds=(i,))
            seconds.append(time.perf_counter() - started)
        print(f"{method}: median {statistics.median(seconds):.2f} s per counterfactual "
              f"({len(faces)} val faces, {args.attribute}, {torch.get_num_threads()} threads)")


if __name__ == "__main__":
    main()
