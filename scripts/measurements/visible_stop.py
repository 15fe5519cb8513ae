"""Choose the visible stop on validation: where along each edit the judges stop seeing more change.

The edits are the full-precision classifier's; the judges are trained on other faces.

    python -m scripts.measurements.visible_stop --data ../shared/data/celeba-hq-64 --split val --n 24 \\
        --json assets/results/visible-stop-val.json [--region-mask | --local-regions] [--adaptive-share 0.3]

For each face and attribute the judges cover, the full-precision classifier makes one edit
aimed past the largest candidate stop (``--edit-margin``, the audit's edit); each candidate
stop is the first point of that edit's straight path where the classifier is past its margin
(``recourse.audit.paired.stop_on_paths``), so every stop is a point of the same path the app draws.
At each stop: the independent judges' shift and seen rate over their ceiling (mean over the
attribute × target groups, ``recourse.instruments.set_verdicts``), dlib's FVA, the oracle's
MNAC and the flip rate. The rule, fixed before the run (``docs/metrics.md``, "The visible
stop"; :func:`recourse.audit.visible_stop.plateau_stop`): the smallest stop whose mean shift
reaches ``PLATEAU`` of the largest mean shift over the candidates.
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import torch

from recourse.audit.stop_readings import Originals, read_stop
from recourse.audit.visible_stop import PLATEAU, plateau_stop
from recourse.data import attribute_index
from recourse.generation import CounterfactualConfig, generate, load_generator
from recourse.locations import generator_dir

STOPS = (0.0, 1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0)
JUDGED = ("Young", "Male", "Smiling", "Mouth_Slightly_Open")  # the attributes the independent judges cover


def _mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and np.isfinite(v)]
    return round(float(np.mean(values)), 4) if values else None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--split", default="val")
    parser.add_argument("--n", type=int, default=24)
    parser.add_argument("--attributes", nargs="+", default=list(JUDGED))
    parser.add_argument("--stops", nargs="+", type=float, default=list(STOPS))
    parser.add_argument("--edit-margin", type=float, help="the margin the edit aims at (default: the largest stop)")
    parser.add_argument("--region-mask", action="store_true",
                        help="confine every edit to its attribute's region, the whole face's included, with the "
                             "edit's own budget (--edit-steps, --edit-learning-rate)")
    parser.add_argument("--local-regions", action="store_true",
                        help="the generator's default: local attributes in their region with the region budget, "
                             "the whole-face ones over the frame")
    parser.add_argument("--adaptive-share", type=float, default=1.0, help="MaskDiME's adaptive cut of the region")
    parser.add_argument("--edit-steps", type=int, help="the edit's optimiser steps (default: the generator's)")
    parser.add_argument("--edit-learning-rate", type=float, help="the edit's Adam step (default: the generator's)")
    parser.add_argument("--generator", default=str(generator_dir()))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", required=True)
    args = parser.parse_args(argv)
    if args.split == "test":
        parser.error("the visible stop is chosen on validation (or train), never on test")
    torch.set_num_threads(args.threads)
    stops = sorted(args.stops)
    if args.region_mask and args.local_regions:
        parser.error("--region-mask and --local-regions are two policies: choose one")
    config = replace(CounterfactualConfig(), margin=args.edit_margin if args.edit_margin is not None else max(stops),
                     region_mask=args.region_mask or args.local_regions, adaptive_share=args.adaptive_share,
                     **{name: getattr(args, name) for name in ("edit_steps", "edit_learning_rate")
                        if getattr(args, name) is not None})
    if args.region_mask:  # every group confined, on the edit's own budget (the runs of 2026-12-03)
        config = replace(config, whole_face_region=True, region_edit_steps=config.edit_steps,
                         region_edit_learning_rate=config.edit_learning_rate)
    generator = load_generator(args.generator)
    originals = Originals.load(args.data, args.split, args.n)
    started = time.perf_counter()
    per_stop: dict[float, dict[str, list]] = {stop: {"shift": [], "seen_over_ceiling": [], "fva": [], "mnac": [],
                                                     "flip_rate": []} for stop in stops}
    attributes = []
    for attribute in args.attributes:
        targets = originals.targets[:, attribute_index(attribute)]
        edits = generate(originals.x, originals.classifier, attribute, targets, config, generator,
                         seeds=tuple(config.seed + i for i in range(len(originals.x)))).edits
        rows = []
        for stop in stops:
            reading = read_stop(originals, attribute, edits, stop)
            row = {"stop": stop, "reached_rate": reading.reached_rate, "flip_rate": reading.flip_rate,
                   "fva": reading.fva, "mnac": reading.mnac,
                   "shift": _mean([v["shift"] for v in reading.verdicts]),
                   "seen_over_ceiling": _mean([v["seen_over_ceiling"] for v in reading.verdicts]),
                   "cost": round(float((reading.at_stop - originals.x).abs().mean()), 5), "verdicts": reading.verdicts}
            rows.append(row)
            for key in per_stop[stop]:
                per_stop[stop][key].append(row[key])
            print(f"{attribute:20s} stop {stop:5g}: FR {row['flip_rate']:5.1f}  FVA {row['fva']:5.1f}  "
                  f"MNAC {row['mnac']:.2f}  shift {row['shift']}  seen/ceiling {row['seen_over_ceiling']}", flush=True)
        attributes.append({"attribute": attribute, "stops": rows})
    summary = [{"stop": stop, **{key: _mean(values) for key, values in per_stop[stop].items()}} for stop in stops]
    chosen = plateau_stop(stops, [row["shift"] for row in summary])
    output = {"command": "python -m scripts.measurements.visible_stop "
                         + shlex.join(sys.argv[1:] if argv is None else argv),
              "date": datetime.date.today().isoformat(), "split": args.split, "n": len(originals.x),
              "rule": f"the smallest stop whose mean independent-judge shift reaches {PLATEAU:g} of the largest",
              "plateau": PLATEAU, "chosen_stop": chosen, "settings": asdict(config),
              "seconds": round(time.perf_counter() - started, 1), "summary": summary, "attributes": attributes}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(output, indent=2) + "\n")
    for row in summary:
        print(f"stop {row['stop']:5g}: shift {row['shift']}  seen/ceiling {row['seen_over_ceiling']}  "
              f"FVA {row['fva']}  MNAC {row['mnac']}  FR {row['flip_rate']}")
    print(f"chosen visible stop: {chosen} (rule: {output['rule']}); written {args.json}")


if __name__ == "__main__":
    main()
