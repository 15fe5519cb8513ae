"""Pairs for the blind rating page: random test faces and their counterfactuals from today's generator.

N random test faces, each with a random quality attribute, its counterfactual (today's
committed generator) guided by the full-precision classifier to flip that attribute's decision,
saved by ``recourse.instruments.rating.save_pairs``.

    python -m scripts.figures.export_pairs --data ../shared/data/celeba-hq-64 --n 60 --out out/rating/pairs.npz

A rating set in one command (several methods on one page, other generators' pairs mixed in,
written outside the repository) is ``scripts.figures.blind_rating``, which shares :func:`make_pairs`.
Another generator rates the same way: write its pairs with ``save_pairs`` and pass the file to
``scripts.figures.blind_rating --pairs`` or ``scripts.figures.rating_page``. The file holds dataset faces: keep
it under ``out/`` (ignored by git).
It records the generation settings (``settings``, JSON), which ``scripts.measurements.edit_discriminator``
copies into its report; ``docs/results/quality.md`` shows each committed report's pairs commands with the
options that bring back those settings (``--method pca-walk-cone --margin 6`` for the earlier
cone walk's, ``assets/archive/edit-discriminator-test-cone.json``).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import numpy as np
from torch import nn

from recourse.audit.paired import flip_targets
from recourse.checkpoints import load_classifier
from recourse.data import QUALITY_ATTRIBUTES, load_split, to_float_images
from recourse.generation import CounterfactualConfig, FaceGenerator, default_generator, generate
from recourse.instruments.rating import save_pairs
from recourse.locations import teacher_dir


@dataclass(frozen=True)
class GeneratedPairs:
    """One counterfactual per task, in the tasks' order."""

    originals: np.ndarray  # uint8 (N, 3, H, W)
    counterfactuals: np.ndarray  # floats in [0, 1], (N, 3, H, W)
    targets: np.ndarray  # the decision each counterfactual aims at, (N,)
    valid: np.ndarray  # whether the classifier decides it as aimed, (N,)


def make_pairs(faces: np.ndarray, indices: list[int], attributes: list[str], methods: list[str],
               classifier: nn.Module, config: CounterfactualConfig, generator: FaceGenerator) -> GeneratedPairs:
    """The counterfactual of ``faces[indices[i]]`` that flips ``classifier``'s decision on
    ``attributes[i]``, made by ``methods[i]``; one line printed per pair."""
    originals, counterfactuals, targets, valid = [], [], [], []
    for number, (index, attribute, method) in enumerate(zip(indices, attributes, methods), start=1):
        x = to_float_images(faces[index:index + 1])
        target = int(flip_targets(classifier, x, attribute)[0])
        # The same seed rule as evaluate-counterfactuals: the task's noise comes from its face.
        result = generate(x, classifier, attribute, target, replace(config, method=method), generator,
                          seeds=(config.seed + index,))
        originals.append(faces[index])
        counterfactuals.append(result.images[0].numpy())
        targets.append(target)
        valid.append(bool(result.valid[0]))
        print(f"{number}/{len(indices)}: face {index}, {attribute} → {target} by {method}, "
              f"{'valid' if valid[-1] else 'not valid'}, cost {float(result.cost[0]):.4f}", flush=True)
    return GeneratedPairs(np.stack(originals), np.stack(counterfactuals), np.array(targets), np.array(valid))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0, help="which faces and attributes")
    parser.add_argument("--attributes", nargs="+", default=list(QUALITY_ATTRIBUTES))
    parser.add_argument("--method", help="a counterfactual method (recourse.generation.METHODS); default: the config's")
    parser.add_argument("--margin", type=float, help="logits past the boundary (default: the config's)")
    parser.add_argument("--region-mask", choices=("on", "off"), help="denoised: confine edits to their region "
                                                                      "(default: the config's)")
    parser.add_argument("--keep-monochrome", choices=("on", "off"),
                        help="a black-and-white face's edit changes its luminance only (default: the config's, on)")
    parser.add_argument("--out", default="out/rating/pairs.npz")
    args = parser.parse_args(argv)
    classifier = load_classifier(teacher_dir())
    faces = load_split(Path(args.data), args.split, classifier.config.resolution, cache_dir=".cache").images
    rng = np.random.default_rng(args.seed)
    chosen = rng.choice(len(faces), args.n, replace=False)
    attributes = rng.choice(args.attributes, args.n)
    config, generator = CounterfactualConfig(), default_generator()
    region = None if args.region_mask is None else args.region_mask == "on"
    monochrome = None if args.keep_monochrome is None else args.keep_monochrome == "on"
    config = replace(config, **{k: v for k, v in (("method", args.method), ("margin", args.margin),
                                                  ("region_mask", region), ("keep_monochrome", monochrome))
                                if v is not None})
    pairs = make_pairs(faces, chosen.tolist(), attributes.tolist(), [config.method] * args.n, classifier, config,
                       generator)
    path = save_pairs(args.out, pairs.originals, pairs.counterfactuals, attributes, pairs.targets,
                      face_index=chosen, valid=pairs.valid, method=np.array([config.method] * args.n),
                      settings=np.array(json.dumps(asdict(config))))
    print(f"{args.n} pairs ({int(pairs.valid.sum())} valid for the classifier) in {path}")


if __name__ == "__main__":
    main()
