"""What the independent judges say about saved counterfactuals: seen rates, ceilings and shifts.

Counterfactuals saved by ``recourse evaluate-counterfactuals --save-counterfactuals``: per
attribute and target class, each calibrated judge's seen rate (Wilson 95%), seen rate over its
ceiling for that class, and shift toward the target as a fraction of the real classes' gap
(bootstrap 95%).

    python -m scripts.measurements.judge_counterfactuals --data ../shared/data/celeba-hq-64 --saved out/cf-m10.npz \\
        --judges-file assets/results/independent-judges-test.json --label "margin 10" \\
        --json assets/results/independent-judges-baseline-m10.json

The tasks and targets are re-derived as the run made them (the same split, ``n`` and classifier:
each face's target flips the classifier's decision). Judges under AUC 0.80 on an attribute
are left out; the project's own robust judges are kept as secondary rows
(``"independent": false``).
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
from pathlib import Path

import numpy as np
import torch

from recourse.checkpoints import load_classifier
from recourse.data import attribute_index, load_split
from recourse.evaluation import predict_logits
from recourse.instruments.readings import calibrations
from recourse.instruments.set_verdicts import OriginalScores, set_verdicts, verdict_line
from recourse.locations import teacher_dir
from recourse.metrics import decisions


def judged(saved, images: np.ndarray, targets: np.ndarray, calibrated) -> list[dict]:
    """Every verdict: per saved attribute, usable judge of it and target class."""
    originals = OriginalScores(images)
    rows = []
    for attribute in [name for name in saved.files if name not in ("split", "n")]:
        counterfactuals = (saved[attribute].astype(np.float32) * 255).round().clip(0, 255).astype(np.uint8)
        rows += set_verdicts(attribute, originals, counterfactuals, targets[:, attribute_index(attribute)], calibrated)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--saved", required=True, help=".npz written by --save-counterfactuals")
    parser.add_argument("--judges-file", default="assets/results/independent-judges-test.json")
    parser.add_argument("--classifier", default=str(teacher_dir()), help="the classifier the run guided with")
    parser.add_argument("--label", default="", help="what the run was, for the results page (e.g. 'margin 10')")
    parser.add_argument("--run", help="the run's own report (its command is copied)")
    parser.add_argument("--json", required=True)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if not Path(args.judges_file).is_file():
        sys.exit(f"no judges file at {args.judges_file}: run scripts.measurements.calibrate_judges first")
    saved = np.load(args.saved)
    split, n = str(saved["split"]), int(saved["n"])
    images = load_split(args.data, split, 64, cache_dir=".cache").images[:n]
    targets = 1 - decisions(predict_logits(load_classifier(args.classifier).eval(), images)).numpy()
    rows = judged(saved, images, targets, calibrations(Path(args.judges_file)))
    output = {"command": "python -m scripts.measurements.judge_counterfactuals " + shlex.join(sys.argv[1:]),
              "date": datetime.date.today().isoformat(), "label": args.label, "split": split, "n": n,
              "run": json.loads(Path(args.run).read_text())["command"] if args.run else None, "verdicts": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(output, indent=2) + "\n")
    for row in rows:
        print(verdict_line(row))


if __name__ == "__main__":
    main()
