"""Real versus edited: the AUC of a logistic regression telling counterfactuals from real faces.

How easily can a logistic regression on the oracle's features tell a generator's
counterfactuals from real faces? Trained on one split's edits, tested on another's.

    python -m scripts.figures.export_pairs --data ../shared/data/celeba-hq-64 --split train --n 200 --out out/realism/train-pairs.npz
    python -m scripts.figures.export_pairs --data ../shared/data/celeba-hq-64 --split test --n 200 --out out/realism/test-pairs.npz
    python -m scripts.measurements.edit_discriminator --data ../shared/data/celeba-hq-64 \\
        --train-pairs out/realism/train-pairs.npz --test-pairs out/realism/test-pairs.npz --json out/realism/discriminator.json

(``assets/archive/edit-discriminator-test-cone.json`` had pairs of the earlier cone walk at
margin 6, ``--method pca-walk-cone --margin 6``). The report records the generation settings
each pairs file names (``pairs_counterfactual``); ``docs/results/quality.md`` shows the commands.

Each edit is matched with a real face of the same split whose label for the edit's attribute is
the edit's target (and that is no edit's original): otherwise the classifier could separate the
two classes by the attribute itself. AUC 0.5 = edits cannot be told apart by these features.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from recourse.checkpoints import load_classifier
from recourse.data import attribute_index, load_split, to_float_images
from recourse.generation.quality import oracle_features
from recourse.instruments.rating import load_pairs
from recourse.instruments.realism import edit_discriminator
from recourse.locations import oracle_dir


def matched_real(pairs: dict[str, np.ndarray], real_images: np.ndarray, real_labels: np.ndarray,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Indices of the edits kept and of one distinct real face per kept edit, with the edit's
    attribute at its target; edits beyond the real faces available are left out."""
    originals = {image.tobytes() for image in pairs["originals"]}
    free = np.array([image.tobytes() not in originals for image in real_images])
    kept, reals = [], []
    for index in rng.permutation(len(pairs["targets"])):
        column = attribute_index(str(pairs["attributes"][index]))
        candidates = np.flatnonzero(free & (real_labels[:, column] == pairs["targets"][index]))
        if len(candidates):
            choice = rng.choice(candidates)
            free[choice] = False
            kept.append(index)
            reals.append(choice)
    return np.array(kept), np.array(reals)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--train-pairs", required=True)
    parser.add_argument("--test-pairs", required=True)
    parser.add_argument("--train-split", default="train")
    parser.add_argument("--test-split", default="test")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    oracle = load_classifier(oracle_dir()).eval()
    rng = np.random.default_rng(args.seed)
    features, settings = {}, {}
    for name, pairs_path, split in (("train", args.train_pairs, args.train_split),
                                    ("test", args.test_pairs, args.test_split)):
        pairs = load_pairs(pairs_path)
        settings[name] = json.loads(str(pairs["settings"])) if "settings" in pairs else None  # older files: none
        real = load_split(Path(args.data), split, oracle.config.resolution, cache_dir=".cache")
        kept, reals = matched_real(pairs, real.images, real.labels, rng)
        features[name] = (oracle_features(oracle, to_float_images(real.images[reals])),
                          oracle_features(oracle, to_float_images(pairs["counterfactuals"][kept])))
    result = edit_discriminator(*features["train"], *features["test"])
    print(f"real versus edited: test AUC {result.auc:.3f} (train {result.train_auc:.3f}; "
          f"{result.n_train} train and {result.n_test} test faces, half of them edited)")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({
            "command": "python -m scripts.measurements.edit_discriminator "
                       + " ".join(sys.argv[1:] if argv is None else argv),
            "train_pairs": args.train_pairs, "test_pairs": args.test_pairs, "pairs_counterfactual": settings,
            **asdict(result)}, indent=2) + "\n")


if __name__ == "__main__":
    with torch.no_grad():
        main()
