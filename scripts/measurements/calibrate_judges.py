"""Calibrate the independent judges: a threshold each on validation, AUC and ceilings on test.

A threshold per judge and attribute chosen on validation (balanced accuracy against the CelebA
labels), then on test the AUC, balanced accuracy and the true-positive and true-negative rates
at that threshold (the judge's ceilings).

    python -m scripts.measurements.calibrate_judges --data ../shared/data/celeba-hq-64 \\
        --json assets/results/independent-judges-test.json

Every face of both splits is scored unless ``--n`` caps each split. A judge under AUC 0.80 on
an attribute is written with ``"usable": false`` and never used for verdicts. The project's own
robust judges (trained on the classifier's faces) are calibrated alike and written with
``"independent": false``: secondary columns.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import time
from pathlib import Path

import torch

from recourse.data import attribute_index, load_split
from recourse.instruments.calibration import MIN_AUC, calibrate
from recourse.instruments.independent import CELEBA_JUDGES, JUDGES
from recourse.instruments.set_verdicts import batched_scores


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="CelebA-HQ (or original CelebA) folder")
    parser.add_argument("--json", required=True)
    parser.add_argument("--n", type=int, help="at most this many faces of each split (default: all)")
    parser.add_argument("--judges", nargs="+", help="names of the judges to calibrate (default: all)")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    judges = [judge for judge in (*JUDGES, *CELEBA_JUDGES) if args.judges is None or judge.name in args.judges]
    if not judges:
        sys.exit("no independent judge to calibrate")
    splits = {name: load_split(args.data, name, 64, cache_dir=".cache") for name in ("val", "test")}
    records, timings = [], {}
    for judge in judges:
        started = time.perf_counter()
        scores = {name: batched_scores(judge, split.images[:args.n]) for name, split in splits.items()}
        timings[judge.name] = round((time.perf_counter() - started) / sum(min(len(s), args.n or len(s))
                                                                          for s in splits.values()) * 100, 2)
        for attribute in judge.attributes:
            labels = {name: split.labels[:args.n, attribute_index(attribute)] for name, split in splits.items()}
            calibration = calibrate(judge.name, judge.trained_on, attribute, scores["val"][attribute], labels["val"],
                                    scores["test"][attribute], labels["test"])
            records.append({**calibration.to_dict(), "independent": judge.independent})
            print(f"{judge.name:38s} {attribute:20s} AUC {calibration.auc:.3f} (val {calibration.val_auc:.3f})  "
                  f"BA {calibration.balanced_accuracy:.3f}  TPR {calibration.tpr:.3f}  TNR {calibration.tnr:.3f}  "
                  f"found {calibration.found:.1%}  {'used' if calibration.usable else f'not used (AUC < {MIN_AUC})'}")
    output = {"command": "python -m scripts.measurements.calibrate_judges " + shlex.join(sys.argv[1:]),
              "date": datetime.date.today().isoformat(), "min_auc": MIN_AUC,
              "note": "threshold chosen on val by balanced accuracy; AUC, balanced accuracy, TPR and TNR on test",
              "n": {name: min(len(split), args.n or len(split)) for name, split in splits.items()},
              "seconds_per_100_faces": timings, "judges": records}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(output, indent=2) + "\n")
    print(f"written {args.json}")


if __name__ == "__main__":
    main()
