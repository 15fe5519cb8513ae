"""What the independent judges say about counterfactuals saved by
``recourse evaluate-counterfactuals --save-counterfactuals``: per attribute and target class,
each calibrated judge's seen rate (Wilson 95%), seen rate over its ceiling for that class, and
shift toward the target as a fraction of the real classes' gap (bootstrap 95%).

    python -m scripts.judge_counterfactuals --data ../shared/data/celeba-hq-64 --saved out/cf-m10.npz \\
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
from recourse.instruments.calibration import Calibration, verdict
from recourse.instruments.independent import judge
from recourse.metrics import decisions
from recourse.paths import teacher_dir
from scripts.calibrate_judges import judge_scores


def read_calibrations(path: str | Path) -> list[tuple[Calibration, bool]]:
    """``(calibration, independent)`` of every usable judge and attribute in a judges file."""
    records = json.loads(Path(path).read_text())["judges"]
    return [(Calibration.from_dict(record), record.get("independent", True)) for record in records if record["usable"]]


def judged(saved, images: np.ndarray, targets: np.ndarray, calibrations: list[tuple[Calibration, bool]]) -> list[dict]:
    """Every verdict: per saved attribute, usable judge of it and target class."""
    rows = []
    scored: dict[str, dict[str, np.ndarray]] = {}
    for attribute in [name for name in saved.files if name not in ("split", "n")]:
        counterfactuals = (saved[attribute].astype(np.float32) * 255).round().clip(0, 255).astype(np.uint8)
        for calibration, independent in calibrations:
            if calibration.attribute != attribute:
                continue
            instrument = judge(calibration.judge)
            if instrument.name not in scored:
                scored[instrument.name] = judge_scores(instrument, images)
            before = scored[instrument.name][attribute]
            after = judge_scores(instrument, counterfactuals)[attribute]
            wanted = targets[:, attribute_index(attribute)]
            for target in (1, 0):
                chosen = wanted == target
                if chosen.any():
                    rows.append({**verdict(calibration, before[chosen], after[chosen], target).to_dict(),
                                 "independent": independent, "trained_on": calibration.trained_on})
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
    saved = np.load(args.saved)
    split, n = str(saved["split"]), int(saved["n"])
    images = load_split(args.data, split, 64, cache_dir=".cache").images[:n]
    targets = 1 - decisions(predict_logits(load_classifier(args.classifier).eval(), images)).numpy()
    rows = judged(saved, images, targets, read_calibrations(args.judges_file))
    output = {"command": "python -m scripts.judge_counterfactuals " + shlex.join(sys.argv[1:]),
              "date": datetime.date.today().isoformat(), "label": args.label, "split": split, "n": n,
              "run": json.loads(Path(args.run).read_text())["command"] if args.run else None, "verdicts": rows}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(output, indent=2) + "\n")
    for row in rows:
        print(f"{row['attribute']:20s} → {row['target']}  {row['judge']:38s} seen {row['seen_rate']:.3f} "
              f"[{row['seen_low']:.3f}, {row['seen_high']:.3f}] of ceiling {row['ceiling']:.3f} "
              f"({row['seen_over_ceiling']:.2f})  shift {row['shift']:+.2f} [{row['shift_low']:+.2f}, "
              f"{row['shift_high']:+.2f}]  n {row['n']}")


if __name__ == "__main__":
    main()
