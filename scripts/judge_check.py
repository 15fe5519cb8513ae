"""The judge's robustness check (``docs/metrics.md``, Judge FR): attack the classifier with
L∞ PGD at the counterfactuals' cost for each attribute, and count how often the attack flips
the classifier and how often it flips the judge.

    python -m scripts.judge_check --data ../shared/data/celeba-hq-64 --n 500 \\
        --costs assets/results/counterfactual-quality-test.json --json assets/results/judge-check.json
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict
from pathlib import Path

from recourse.checkpoints import load_classifier
from recourse.data import load_framed_split, to_float_images
from recourse.paths import judge_dir, teacher_dir
from recourse.robustness import attack_transfer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--costs", required=True,
                        help="an evaluate-counterfactuals JSON: each attribute is attacked at its proximity")
    parser.add_argument("--json")
    args = parser.parse_args()
    started = time.time()
    costs = {row["attribute"]: row["proximity"] for row in json.loads(Path(args.costs).read_text())["attributes"]}
    classifier, judge = load_classifier(teacher_dir()), load_classifier(judge_dir())
    faces = to_float_images(load_framed_split(Path(args.data), args.split, 64, None).images[: args.n])
    rows = []
    for attribute, cost in costs.items():
        row = attack_transfer(classifier, judge, faces, attribute, epsilon=cost)
        rows.append(asdict(row))
        print(f"{attribute:20s} ε {cost:.4f}: mean |Δx| {row.mean_change:.4f}, classifier flipped "
              f"{row.classifier_flip_rate:5.1f}%, judge flipped {row.judge_flip_rate:5.1f}% "
              f"(of {row.judge_agreed} it agreed on)", flush=True)
    report = {"command": "python -m scripts.judge_check " + " ".join(f"--{k} {v}" for k, v in vars(args).items() if v),
              "split": args.split, "n": len(faces), "attack": "L-inf PGD, 10 steps of 2.5 eps / 10, on the classifier",
              "judge": json.loads((judge_dir() / "config.json").read_text()).get("test_accuracy"),
              "attributes": rows, "seconds": round(time.time() - started, 1)}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
