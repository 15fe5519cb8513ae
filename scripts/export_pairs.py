"""Pairs for the blind rating page from today's committed generator: N random test faces, each
with a random quality attribute, its counterfactual guided by the full-precision classifier to
flip that attribute's decision, saved by ``recourse.instruments.rating.save_pairs``.

    python -m scripts.export_pairs --data ../shared/data/celeba-hq-64 --n 60 --out out/rating/pairs.npz

Another generator rates the same way: write its pairs with ``save_pairs`` and pass the file to
``scripts.rating_page``. The file holds dataset faces: keep it under ``out/`` (ignored by git).
It records the generation settings (``settings``, JSON), which ``scripts.edit_discriminator``
copies into its report; ``docs/results.md`` shows each committed report's pairs commands with the
options that bring back those settings (``--method pca-walk-cone --margin 6`` for the earlier
cone walk's, ``assets/results/edit-discriminator-test-cone.json``).
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np

from recourse.checkpoints import load_classifier
from recourse.data import QUALITY_ATTRIBUTES, load_split, to_float_images
from recourse.generation import CounterfactualConfig, default_generator, generate
from recourse.instruments.rating import save_pairs
from recourse.paired import flip_targets
from recourse.paths import teacher_dir


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--n", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0, help="which faces and attributes")
    parser.add_argument("--attributes", nargs="+", default=list(QUALITY_ATTRIBUTES))
    parser.add_argument("--method", help="a counterfactual method (recourse.generation.METHODS); default: the config's")
    parser.add_argument("--margin", type=float, help="logits past the boundary (default: the config's)")
    parser.add_argument("--out", default="out/rating/pairs.npz")
    args = parser.parse_args(argv)
    classifier = load_classifier(teacher_dir())
    faces = load_split(Path(args.data), args.split, classifier.config.resolution, cache_dir=".cache").images
    rng = np.random.default_rng(args.seed)
    chosen = rng.choice(len(faces), args.n, replace=False)
    attributes = rng.choice(args.attributes, args.n)
    config, generator = CounterfactualConfig(), default_generator()
    config = replace(config, **{k: v for k, v in (("method", args.method), ("margin", args.margin)) if v is not None})
    originals, counterfactuals, targets, valid = [], [], [], []
    for number, (index, attribute) in enumerate(zip(chosen.tolist(), attributes.tolist())):
        x = to_float_images(faces[index:index + 1])
        target = int(flip_targets(classifier, x, attribute)[0])
        # The same seed rule as evaluate-counterfactuals: the task's noise comes from its face.
        result = generate(x, classifier, attribute, target, config, generator, seeds=(config.seed + index,))
        originals.append(faces[index])
        counterfactuals.append(result.images[0].numpy())
        targets.append(target)
        valid.append(bool(result.valid[0]))
        print(f"{number + 1}/{args.n}: face {index}, {attribute} → {target}, "
              f"{'valid' if valid[-1] else 'not valid'}, cost {float(result.cost[0]):.4f}")
    path = save_pairs(args.out, np.stack(originals), np.stack(counterfactuals), attributes, np.array(targets),
                      face_index=chosen, valid=np.array(valid), method=np.array([config.method] * args.n),
                      settings=np.array(json.dumps(asdict(config))))
    print(f"{args.n} pairs ({sum(valid)} valid for the classifier) in {path}")


if __name__ == "__main__":
    main()
