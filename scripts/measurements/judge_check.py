"""The judges' robustness check: how often a same-budget attack on the classifier or guide flips each.

``docs/metrics.md``, Judge FR: attack each model that moves or steers an edit -- the
classifier, and the robust guide that steers the cone-guided walk -- with L∞ PGD at the
counterfactuals' cost for each attribute, and count how often the attack flips that model and
how often the same images flip each judge.

A judge is worth something only where a same-budget attack on the guide does not transfer to
it: the guide and the radius-1 judge are near-twins (same data, radius and recipe), so an edit
the guide steers can satisfy that judge without a change a person would see.

The committed runs (the second once ``checkpoints/strong-judge`` exists: the same command, both
judges named; ``--judges`` defaults to every committed judge):

    python -m scripts.measurements.judge_check --data ../shared/data/celeba-hq-64 --n 500 \\
        --costs assets/archive/counterfactual-quality-test.json --attack classifier \\
        --json assets/results/judge-check.json
    python -m scripts.measurements.judge_check --data ../shared/data/celeba-hq-64 --split val --n 80 --threads 1 \\
        --costs assets/archive/counterfactual-quality-val.json --attack classifier guide --judges judge \\
        --json assets/results/judge-transfer-val.json
    python -m scripts.measurements.judge_check --data ../shared/data/celeba-hq-64 --split val --n 80 --threads 1 \\
        --costs assets/archive/counterfactual-quality-val.json --attack classifier guide \\
        --judges judge strong-judge --json assets/results/judge-transfer-val.json

The JSON keeps the first run's layout: ``attributes`` holds the classifier attacked and the
first judge (``classifier_flip_rate``, ``judge_flip_rate``, ``judge_agreed``); ``transfer``
holds every attacked model × attribute with each judge's flip rate and the faces it is
counted on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from recourse.checkpoints import load_classifier
from recourse.data import load_framed_split, to_float_images
from recourse.instruments.judge_robustness import attack_transfers
from recourse.locations import guide_dir, judge_dir, shown, strong_judge_dir, teacher_dir
from recourse.models import training_unfinished

ATTACKED = {"classifier": teacher_dir, "guide": guide_dir}
JUDGES = {"judge": judge_dir, "strong-judge": strong_judge_dir}


def committed_judges() -> list[str]:
    """Every judge whose folder holds a finished training: the strong judge joins once it is trained."""
    return [name for name, folder in JUDGES.items() if folder().is_dir() and training_unfinished(folder()) is None]


def _rate(value: float) -> str:
    return "  n/a" if value != value else f"{value:5.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="test")
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--costs", required=True,
                        help="an evaluate-counterfactuals JSON: each attribute is attacked at its proximity")
    parser.add_argument("--attack", nargs="+", choices=sorted(ATTACKED), default=["classifier", "guide"],
                        help="the models attacked (default both)")
    parser.add_argument("--judges", nargs="+", choices=sorted(JUDGES), default=None,
                        help="the judges (default: every one whose folder exists)")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default torch's)")
    parser.add_argument("--json")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    names = args.judges or committed_judges()
    missing = [name for name in names if not JUDGES[name]().is_dir()]
    if missing:
        parser.error(f"no folder for {', '.join(missing)} ({', '.join(shown(JUDGES[m]()) for m in missing)}): "
                     "train it first, or leave it out of --judges")
    for name in names:  # asked for by name: measured, and said to be unfinished where it is
        if training_unfinished(JUDGES[name]()):
            print(f"{name}: {training_unfinished(JUDGES[name]())}: its numbers are not the finished judge's")
    started = time.time()
    costs = {row["attribute"]: row["proximity"] for row in json.loads(Path(args.costs).read_text())["attributes"]}
    judges = {name: load_classifier(JUDGES[name]()) for name in names}
    faces = to_float_images(load_framed_split(Path(args.data), args.split, 64, None).images[: args.n])
    transfer = []
    for attacked_name in args.attack:
        attacked = load_classifier(ATTACKED[attacked_name]())
        for attribute, cost in costs.items():
            row = attack_transfers(attacked, judges, faces, attribute, epsilon=cost, attacked_name=attacked_name)
            transfer.append(row.to_dict())
            seen = ", ".join(f"{name} {_rate(view.flip_rate)}% (of {view.agreed})" for name, view in row.judges.items())
            print(f"{attacked_name:10s} {attribute:20s} ε {cost:.4f}: mean |Δx| {row.mean_change:.4f}, "
                  f"{attacked_name} flipped {row.attacked_flip_rate:5.1f}%; judges flipped: {seen}", flush=True)
    first = names[0]
    # the original layout (classifier attacked, first judge), which the results pages (scripts/docs/results) and older runs read
    attributes = [{"attribute": r["attribute"], "n": r["n"], "epsilon": r["epsilon"], "mean_change": r["mean_change"],
                   "classifier_flip_rate": r["attacked_flip_rate"], "judge_flip_rate": r["judges"][first]["flip_rate"],
                   "judge_agreed": r["judges"][first]["agreed"]} for r in transfer if r["attacked"] == "classifier"]
    report = {"command": "python -m scripts.measurements.judge_check " + " ".join(sys.argv[1:]),
              "split": args.split, "n": len(faces),
              "attack": f"L-inf PGD, 10 steps of 2.5 eps / 10, on the {' and the '.join(args.attack)}",
              "attacked": args.attack, "judges": names,
              "judge": json.loads((judge_dir() / "config.json").read_text()).get("test_accuracy"),
              "judge_accuracy": {name: json.loads((JUDGES[name]() / "config.json").read_text()).get("test_accuracy")
                                 for name in names},
              "unfinished": {name: training_unfinished(JUDGES[name]()) for name in names
                             if training_unfinished(JUDGES[name]())},
              "threads": torch.get_num_threads(),
              "attributes": attributes, "transfer": transfer, "seconds": round(time.time() - started, 1)}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
