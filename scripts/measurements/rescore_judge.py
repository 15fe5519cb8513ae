"""Score saved counterfactuals with a judge trained after they were made; its FR into the run's JSON.

The counterfactuals, saved by ``evaluate-counterfactuals --save-counterfactuals``, are the same
pictures the run scored (kept at float16, within 1/2048 of each pixel); the tasks and targets
are re-derived from the same split, ``n`` and classifier.

    python -m scripts.measurements.rescore_judge --data ../shared/data/celeba-hq-64 --saved out/cf-test.npz \\
        --json assets/archive/counterfactual-quality-test.json
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

import numpy as np
import torch

from recourse.checkpoints import load_classifier
from recourse.data import attribute_index, load_split
from recourse.evaluation import predict_logits
from recourse.generation.quality import real_flip_rate
from recourse.locations import strong_judge_dir, teacher_dir
from recourse.metrics import decisions


def rescore(saved: np.lib.npyio.NpzFile, images: np.ndarray, classifier: torch.nn.Module,
            judge: torch.nn.Module) -> dict[str, dict[str, float | int | None]]:
    """Per attribute of ``saved``: the judge's FR over the tasks it did not already agree with."""
    classifier_before = decisions(predict_logits(classifier.eval(), images))
    judge_before = decisions(predict_logits(judge.eval(), images))
    scores = {}
    for attribute in [name for name in saved.files if name not in ("split", "n")]:
        index = attribute_index(attribute)
        counterfactuals = torch.from_numpy(saved[attribute].astype(np.float32))
        targets = 1 - classifier_before[:, index]
        with torch.no_grad():
            after = decisions(judge(counterfactuals))
        scores[attribute] = {"flip_rate": real_flip_rate(judge_before[:, index], after[:, index], targets),
                             "agreed": int((judge_before[:, index] != targets).sum())}
    return scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--saved", required=True, help=".npz written by --save-counterfactuals")
    parser.add_argument("--json", required=True, help="the run's report, updated in place")
    parser.add_argument("--judge", default=str(strong_judge_dir()))
    parser.add_argument("--classifier", default=str(teacher_dir()), help="the classifier the run guided with")
    parser.add_argument("--field", default="strong_judge", help="fields <field>_flip_rate and <field>_agreed")
    args = parser.parse_args()
    saved = np.load(args.saved)
    report = json.loads(Path(args.json).read_text())
    split, n = str(saved["split"]), int(saved["n"])
    if (report["split"], report["n"]) != (split, n):
        sys.exit(f"{args.saved} holds {n} faces of {split}, the report {report['n']} of {report['split']}")
    images = load_split(args.data, split, 64, cache_dir=".cache").images[:n]
    scores = rescore(saved, images, load_classifier(args.classifier), load_classifier(args.judge))
    for row in report["attributes"]:
        if row["attribute"] in scores:
            row[f"{args.field}_flip_rate"] = scores[row["attribute"]]["flip_rate"]
            row[f"{args.field}_agreed"] = scores[row["attribute"]]["agreed"]
            print(f"{row['attribute']:19s} {args.field} FR {scores[row['attribute']]['flip_rate']}% "
                  f"of {scores[row['attribute']]['agreed']}")
    report.setdefault("rescored", []).append("python -m scripts.measurements.rescore_judge " + shlex.join(sys.argv[1:]))
    Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
